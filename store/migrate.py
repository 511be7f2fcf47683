"""Alembic, driven from code: `pagetrail db upgrade` and the automatic first-use upgrade.

Alembic is imported only when the schema must change: opening an up-to-date store (every
command, every server start) reads the version row and the migration files' own headers,
which costs a query instead of ~0.2 s of imports.
"""

from __future__ import annotations

import fcntl
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from sqlalchemy import URL, Engine, column, inspect, select, table, text

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
VERSION_TABLE = "alembic_version"  # Alembic's default, which env.py keeps
_VERSIONS = table(VERSION_TABLE, column("version_num"))
_HEADER = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*['\"]?([\w-]+|None)['\"]?\s*$",
                     re.MULTILINE)


def alembic_config(engine: Engine | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if engine is not None:
        config.attributes["engine"] = engine
    return config


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at; None for a database Alembic never touched."""
    with engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return None
        versions = connection.execute(select(_VERSIONS.c.version_num)).scalars().all()
    return versions[0] if len(versions) == 1 else None


@lru_cache(maxsize=1)
def head_revision() -> str | None:
    """The newest migration: the one revision no other migration names as its parent (read
    from the files' `revision` / `down_revision` lines, as Alembic's ScriptDirectory does;
    tests/test_store.py checks the two agree)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        fields = dict((key, value) for key, value in _HEADER.findall(path.read_text()))
        if "revision" in fields:
            revisions.add(fields["revision"])
            if fields.get("down_revision", "None") != "None":
                parents.add(fields["down_revision"])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def sqlite_file(url: URL) -> Path | None:
    """The file an SQLite URL opens; None for an in-memory database. A URI filename
    (`sqlite:///file:/path/db?mode=ro&uri=true`) names its file after `file:` — taken as a
    plain path, it would be a directory `file:` under the working directory."""
    database = url.database
    if not database or database == ":memory:":
        return None
    if str(url.query.get("uri", "")).lower() in ("true", "1") and database.startswith("file:"):
        if url.query.get("mode") == "memory":
            return None
        return Path(unquote(urlsplit(database).path)).expanduser()
    return Path(database).expanduser()


# pg_advisory_lock's key for "pagetrail migrates this database" (any fixed 64-bit number).
ADVISORY_KEY = zlib.crc32(b"pagetrail:migrate")


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Hold the database's migration lock for the block: of several processes (CLI commands,
    servers, queue workers) opening a fresh store at once, one migrates and the others wait,
    then find the schema current.

    SQLite: an exclusive lock (flock) on the file `<database>.migrate.lock` beside the
    database (released by the OS if the process dies). PostgreSQL: `pg_advisory_lock` on a
    connection of its own, held until the block ends (released with the session). Other
    backends and in-memory SQLite: no lock (one process)."""
    backend = engine.url.get_backend_name()
    path = sqlite_file(engine.url) if backend == "sqlite" else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{path}.migrate.lock", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    if backend == "postgresql":
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_KEY})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"),
                                   {"key": ADVISORY_KEY})
                connection.commit()
        return
    yield


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision`; a no-op (one query) when already there. The change
    is made under `migration_lock`, and only if it is still needed once the lock is held
    (another process may have migrated meanwhile)."""
    head = head_revision()
    if revision == "head" and head is not None and current_revision(engine) == head:
        return
    from alembic import command

    with migration_lock(engine):
        if revision == "head" and head is not None and current_revision(engine) == head:
            return
        command.upgrade(alembic_config(engine), revision)
