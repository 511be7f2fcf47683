"""scanner: scans, their crawl frontier, link confirmation states

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 14:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('scans',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('target', sa.Text(), nullable=False),
    sa.Column('options_key', sa.String(length=64), nullable=False),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('summary', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_scans_options_key', 'scans', ['options_key'], unique=False)
    op.create_table('scan_pages',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('scan_id', sa.String(length=64), nullable=False),
    sa.Column('url_key', sa.String(length=64), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('done', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_scan_pages_key', 'scan_pages', ['scan_id', 'url_key'], unique=True)
    op.create_table('link_states',
    sa.Column('url_key', sa.String(length=64), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('counted', sa.JSON(), nullable=False),
    sa.Column('history', sa.String(length=16), nullable=False),
    sa.Column('first_failed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_checked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_verdict', sa.String(length=16), nullable=False),
    sa.Column('confirmed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('changed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_scan_id', sa.String(length=64), nullable=False),
    sa.PrimaryKeyConstraint('url_key')
    )
    op.create_index('ix_link_states_state', 'link_states', ['state'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_link_states_state', table_name='link_states')
    op.drop_table('link_states')
    op.drop_index('ix_scan_pages_key', table_name='scan_pages')
    op.drop_table('scan_pages')
    op.drop_index('ix_scans_options_key', table_name='scans')
    op.drop_table('scans')
