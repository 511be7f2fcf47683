"""local pages index (FTS5 on SQLite)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 12:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

# External-content FTS5 table over local_pages, kept in sync by triggers, so that any
# writer (ORM or SQL) keeps the index right. Column names must match local_pages'.
FTS_STATEMENTS = [
    "CREATE VIRTUAL TABLE local_pages_fts USING fts5("
    "title, text, url, content='local_pages', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER local_pages_ai AFTER INSERT ON local_pages BEGIN "
    "INSERT INTO local_pages_fts(rowid, title, text, url) "
    "VALUES (new.id, new.title, new.text, new.url); END",
    "CREATE TRIGGER local_pages_ad AFTER DELETE ON local_pages BEGIN "
    "INSERT INTO local_pages_fts(local_pages_fts, rowid, title, text, url) "
    "VALUES ('delete', old.id, old.title, old.text, old.url); END",
    "CREATE TRIGGER local_pages_au AFTER UPDATE ON local_pages BEGIN "
    "INSERT INTO local_pages_fts(local_pages_fts, rowid, title, text, url) "
    "VALUES ('delete', old.id, old.title, old.text, old.url); "
    "INSERT INTO local_pages_fts(rowid, title, text, url) "
    "VALUES (new.id, new.title, new.text, new.url); END",
]


def _sqlite_has_fts5(bind) -> bool:
    try:
        rows = bind.exec_driver_sql("PRAGMA compile_options").fetchall()
    except sa.exc.DBAPIError:  # an SQLite too old for PRAGMA compile_options
        return False
    return any("ENABLE_FTS5" in str(row[0]) for row in rows)


def upgrade() -> None:
    op.create_table('local_pages',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('url_key', sa.String(length=64), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('url_key')
    )
    with op.batch_alter_table('local_pages', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_local_pages_host'), ['host'], unique=False)

    bind = op.get_bind()
    if bind.dialect.name == "sqlite" and _sqlite_has_fts5(bind):
        for statement in FTS_STATEMENTS:
            op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for name in ("local_pages_ai", "local_pages_ad", "local_pages_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS local_pages_fts")
    with op.batch_alter_table('local_pages', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_local_pages_host'))
    op.drop_table('local_pages')
