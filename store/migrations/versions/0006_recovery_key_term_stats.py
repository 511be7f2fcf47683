"""recovery_key_term_stats: one recoveries row per request_key (a unique index, duplicates
dropped); the never-filled term_stats table dropped (its background model is gone)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 04:40:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Before the key, a redelivered job could remember the same request twice: keep the
    # newest row of each request_key (the one the cache read).
    op.execute(sa.text(
        "DELETE FROM recoveries WHERE id NOT IN "
        "(SELECT MAX(id) FROM recoveries GROUP BY request_key)"))
    op.drop_index('ix_recoveries_request_key', table_name='recoveries')
    op.create_index('ix_recoveries_request_key', 'recoveries', ['request_key'], unique=True)
    # Nothing ever wrote it (terms.record_document had no caller); the background read an
    # empty table on every signature. Removed rather than wired: see docs/INTERFACES.md.
    op.drop_table('term_stats')


def downgrade() -> None:
    op.create_table('term_stats',
    sa.Column('term', sa.String(length=128), nullable=False),
    sa.Column('lang', sa.String(length=8), nullable=False),
    sa.Column('df', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('term', 'lang')
    )
    op.drop_index('ix_recoveries_request_key', table_name='recoveries')
    op.create_index('ix_recoveries_request_key', 'recoveries', ['request_key'], unique=False)
