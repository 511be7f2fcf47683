"""jobs: finished jobs keyed by their input (distributed mode, resumable batches)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 01:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('input', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('result', sa.JSON(), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_jobs_kind_key', 'jobs', ['kind', 'key'], unique=True)


def downgrade() -> None:
    op.drop_index('ix_jobs_kind_key', table_name='jobs')
    op.drop_table('jobs')
