"""Engine and session handling. Migrations run automatically on first use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from threading import Lock

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from pagetrail.store.migrate import upgrade

_open_lock = Lock()
_opened: dict[str, Store] = {}


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    # WAL: readers never block the writer; synchronous=NORMAL is durable across process
    # crashes in WAL mode (only an OS crash may drop the last transactions).
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def create_db_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        # Plain postgresql:// means psycopg 3, the driver we ship.
        parsed = parsed.set(drivername="postgresql+psycopg")
    return create_engine(parsed, pool_pre_ping=True)


class Store:
    """A migrated database and a session factory. Use `session()` for a transaction."""

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.url = url
        self.engine = create_db_engine(url)
        if migrate:
            upgrade(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed when the block ends, rolled back on error."""
        with self._sessions.begin() as session:
            yield session

    def dispose(self) -> None:
        self.engine.dispose()


def open_store(url: str | None = None) -> Store:
    """The store for `url` (default: the settings' database), opened once per process."""
    if url is None:
        from pagetrail.tools.settings import get_settings

        url = get_settings().database_url
    with _open_lock:
        store = _opened.get(url)
        if store is None:
            store = _opened[url] = Store(url)
        return store
