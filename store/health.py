"""Does the configured database answer? (`pagetrail doctor`): one connection, one query, no
migration, no waiting (a diagnosis says what is, it does not ride the fault out), and nothing
written: an SQLite file is opened read-only, never created, nor its folder."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from pagetrail.store.db import create_db_engine, parse_database_url
from pagetrail.store.errors import StoreUnavailable
from pagetrail.store.faults import fault_reason, is_permanent, refused
from pagetrail.store.migrate import current_revision, head_revision, sqlite_file


@dataclass(frozen=True)
class DatabaseHealth:
    server: str  # "SQLite 3.45.1", "PostgreSQL 16.2"
    revision: str | None  # the schema's migration, None before the first
    head: str | None  # the newest migration this pagetrail knows
    note: str = ""  # what else a person should know ("no database file yet: …")


def database_health(url: str, *, timeout: float = 5.0) -> DatabaseHealth:
    """The database's server and schema revision. StoreUnavailable (one line, the driver's
    first line) when it does not answer, StoreRefused when it refuses (a wrong password);
    ConfigError for a malformed URL; StoreUnavailable for an SQLite file whose folder does
    not exist or cannot be written."""
    parsed = parse_database_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine, note = _sqlite_read_only(parsed)
        if engine is None:
            return DatabaseHealth("SQLite", None, head_revision(), note)
    else:
        parsed = parsed.update_query_dict({"connect_timeout": str(max(1, round(timeout)))})
        engine = create_db_engine(parsed.render_as_string(hide_password=False))
        note = ""
    try:
        with engine.connect() as connection:
            if engine.dialect.name == "sqlite":
                version = connection.execute(text("SELECT sqlite_version()")).scalar()
                server = f"SQLite {version}"
            else:
                version = connection.execute(text("SHOW server_version")).scalar()
                server = f"PostgreSQL {str(version).split()[0]}"
        return DatabaseHealth(server, current_revision(engine), head_revision(), note)
    except SQLAlchemyError as exc:
        if is_permanent(exc):
            raise refused(exc, "connecting") from None
        raise StoreUnavailable(f"the database does not answer: {fault_reason(exc)}") from None
    finally:
        engine.dispose()


def _sqlite_read_only(parsed: URL) -> tuple[Engine | None, str]:
    """An engine that opens the SQLite file read-only (SQLite's `mode=ro` URI: it never
    creates the file), or None and why there is nothing to open yet. StoreUnavailable when
    pagetrail could not create the file where the URL says (a missing or read-only folder)."""
    path = sqlite_file(parsed)
    if path is None:
        return create_db_engine(parsed.render_as_string(hide_password=False)), ""
    folder = path.parent
    if not folder.is_dir():
        raise StoreUnavailable(f"the SQLite file's folder {folder} does not exist "
                               "(pagetrail makes it on first use; the doctor writes nothing)")
    if not path.exists():
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StoreUnavailable(f"the SQLite file {path} does not exist and its folder "
                                   "cannot be written")
        return None, f"no database file yet: the first command creates {path}"
    uri = f"file:{quote(Path(path).resolve().as_posix())}?mode=ro"
    if not Path(f"{path}-wal").exists():
        # Closed cleanly (no write-ahead log: every commit is in the file): read it as
        # immutable, or a read-only open of a WAL database makes its -wal and -shm files.
        uri += "&immutable=1"
    return create_engine("sqlite://", creator=lambda: _connect_read_only(uri)), ""


def _connect_read_only(uri: str):  # type: ignore[no-untyped-def]
    import sqlite3

    return sqlite3.connect(uri, uri=True, timeout=5)
