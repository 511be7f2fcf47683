"""answers_elsewhere: answers found on another site than the dead link's

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 07:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('answers_elsewhere',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dead_url', sa.Text(), nullable=False),
    sa.Column('dead_site', sa.String(length=255), nullable=False),
    sa.Column('answer_url', sa.Text(), nullable=False),
    sa.Column('answer_site', sa.String(length=255), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('dead_url', 'answer_url', 'source', name='uq_answers_elsewhere')
    )
    op.create_index(op.f('ix_answers_elsewhere_answer_site'), 'answers_elsewhere',
                    ['answer_site'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_answers_elsewhere_answer_site'), table_name='answers_elsewhere')
    op.drop_table('answers_elsewhere')
