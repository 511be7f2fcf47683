"""Does the configured database answer? (`pagetrail doctor`): one connection, one query, no
migration, no waiting (a diagnosis says what is, it does not ride the fault out)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from pagetrail.store.db import create_db_engine
from pagetrail.store.errors import StoreUnavailable
from pagetrail.store.faults import fault_reason
from pagetrail.store.migrate import current_revision, head_revision


@dataclass(frozen=True)
class DatabaseHealth:
    server: str  # "SQLite 3.45.1", "PostgreSQL 16.2"
    revision: str | None  # the schema's migration, None before the first
    head: str | None  # the newest migration this pagetrail knows


def database_health(url: str, *, timeout: float = 5.0) -> DatabaseHealth:
    """The database's server and schema revision. StoreUnavailable (one line, the driver's
    first line) when it does not answer; ConfigError for a malformed URL."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        url = parsed.update_query_dict({"connect_timeout": str(max(1, round(timeout)))}
                                       ).render_as_string(hide_password=False)
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            if engine.dialect.name == "sqlite":
                version = connection.execute(text("SELECT sqlite_version()")).scalar()
                server = f"SQLite {version}"
            else:
                version = connection.execute(text("SHOW server_version")).scalar()
                server = f"PostgreSQL {str(version).split()[0]}"
        return DatabaseHealth(server, current_revision(engine), head_revision())
    except SQLAlchemyError as exc:
        raise StoreUnavailable(f"the database does not answer: {fault_reason(exc)}") from None
    finally:
        engine.dispose()
