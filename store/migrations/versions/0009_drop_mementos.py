"""drop the never-used mementos table (archive look-ups are not cached in the store)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 13:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index('ix_mementos_key', table_name='mementos')
    op.drop_table('mementos')


def downgrade() -> None:
    op.create_table('mementos',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('at', sa.String(length=32), nullable=False),
    sa.Column('archive', sa.Text(), nullable=False),
    sa.Column('fetched_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_mementos_key', 'mementos', ['url', 'at', 'archive'], unique=False)
