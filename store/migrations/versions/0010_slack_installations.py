"""slack installations: slack_sdk's installation and OAuth state tables, and each channel's workspace

The three slack_* tables of slack_sdk's SQLAlchemy stores (slack_sdk.oauth.installation_store
.sqlalchemy, state_store.sqlalchemy; their schema as of slack_sdk 3.47, written out here so
that the store migrates without the [slack] extra; tests/test_bot_oauth.py compares them
with slack_sdk's own), and slack_channels (store/slack.py).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 22:40:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('slack_installations',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('client_id', sa.String(length=32), nullable=False),
    sa.Column('app_id', sa.String(length=32), nullable=False),
    sa.Column('enterprise_id', sa.String(length=32), nullable=True),
    sa.Column('enterprise_name', sa.String(length=200), nullable=True),
    sa.Column('enterprise_url', sa.String(length=200), nullable=True),
    sa.Column('team_id', sa.String(length=32), nullable=True),
    sa.Column('team_name', sa.String(length=200), nullable=True),
    sa.Column('bot_token', sa.String(length=200), nullable=True),
    sa.Column('bot_id', sa.String(length=32), nullable=True),
    sa.Column('bot_user_id', sa.String(length=32), nullable=True),
    sa.Column('bot_scopes', sa.String(length=1000), nullable=True),
    sa.Column('bot_refresh_token', sa.String(length=200), nullable=True),
    sa.Column('bot_token_expires_at', sa.DateTime(), nullable=True),
    sa.Column('user_id', sa.String(length=32), nullable=False),
    sa.Column('user_token', sa.String(length=200), nullable=True),
    sa.Column('user_scopes', sa.String(length=1000), nullable=True),
    sa.Column('user_refresh_token', sa.String(length=200), nullable=True),
    sa.Column('user_token_expires_at', sa.DateTime(), nullable=True),
    sa.Column('incoming_webhook_url', sa.String(length=200), nullable=True),
    sa.Column('incoming_webhook_channel', sa.String(length=200), nullable=True),
    sa.Column('incoming_webhook_channel_id', sa.String(length=200), nullable=True),
    sa.Column('incoming_webhook_configuration_url', sa.String(length=200), nullable=True),
    sa.Column('is_enterprise_install', sa.Boolean(), nullable=False),
    sa.Column('token_type', sa.String(length=32), nullable=True),
    sa.Column('installed_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('slack_installations_idx', 'slack_installations',
                    ['client_id', 'enterprise_id', 'team_id', 'user_id', 'installed_at'],
                    unique=False)
    op.create_table('slack_bots',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('client_id', sa.String(length=32), nullable=False),
    sa.Column('app_id', sa.String(length=32), nullable=False),
    sa.Column('enterprise_id', sa.String(length=32), nullable=True),
    sa.Column('enterprise_name', sa.String(length=200), nullable=True),
    sa.Column('team_id', sa.String(length=32), nullable=True),
    sa.Column('team_name', sa.String(length=200), nullable=True),
    sa.Column('bot_token', sa.String(length=200), nullable=True),
    sa.Column('bot_id', sa.String(length=32), nullable=True),
    sa.Column('bot_user_id', sa.String(length=32), nullable=True),
    sa.Column('bot_scopes', sa.String(length=1000), nullable=True),
    sa.Column('bot_refresh_token', sa.String(length=200), nullable=True),
    sa.Column('bot_token_expires_at', sa.DateTime(), nullable=True),
    sa.Column('is_enterprise_install', sa.Boolean(), nullable=False),
    sa.Column('installed_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('slack_bots_idx', 'slack_bots',
                    ['client_id', 'enterprise_id', 'team_id', 'installed_at'], unique=False)
    op.create_table('slack_oauth_states',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('state', sa.String(length=200), nullable=False),
    sa.Column('expire_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('slack_channels',
    sa.Column('channel', sa.String(length=64), nullable=False),
    sa.Column('team', sa.String(length=64), nullable=False),
    sa.Column('enterprise', sa.String(length=64), nullable=False),
    sa.Column('seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('channel')
    )
    op.create_index(op.f('ix_slack_channels_team'), 'slack_channels', ['team'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_slack_channels_team'), table_name='slack_channels')
    op.drop_table('slack_channels')
    op.drop_table('slack_oauth_states')
    op.drop_index('slack_bots_idx', table_name='slack_bots')
    op.drop_table('slack_bots')
    op.drop_index('slack_installations_idx', table_name='slack_installations')
    op.drop_table('slack_installations')
