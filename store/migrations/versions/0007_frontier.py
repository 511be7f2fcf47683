"""scan_frontier: a distributed scan's pages and links, one row per (scan, URL)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 04:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('scan_frontier',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('scan_id', sa.String(length=64), nullable=False),
    sa.Column('url_key', sa.String(length=64), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('parent_key', sa.String(length=64), nullable=False),
    sa.Column('done', sa.Boolean(), nullable=False),
    sa.Column('sent', sa.Boolean(), nullable=False),
    sa.Column('notes', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_scan_frontier_key', 'scan_frontier', ['scan_id', 'url_key'],
                    unique=True)
    op.create_index('ix_scan_frontier_parent', 'scan_frontier', ['scan_id', 'parent_key'])


def downgrade() -> None:
    op.drop_index('ix_scan_frontier_parent', table_name='scan_frontier')
    op.drop_index('ix_scan_frontier_key', table_name='scan_frontier')
    op.drop_table('scan_frontier')
