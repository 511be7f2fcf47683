"""captures: Save Page Now requests and their outcome

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 01:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('captures',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('url_key', sa.String(length=64), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('requested_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('job_id', sa.String(length=128), nullable=False),
    sa.Column('memento_url', sa.Text(), nullable=False),
    sa.Column('captured_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_captures_url_key', 'captures', ['url_key'], unique=False)
    op.create_index('ix_captures_requested_at', 'captures', ['requested_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_captures_requested_at', table_name='captures')
    op.drop_index('ix_captures_url_key', table_name='captures')
    op.drop_table('captures')
