"""Engine and session handling. Migrations run automatically on first use."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from threading import Lock
from typing import Any, TypeVar

from sqlalchemy import Connection, Dialect, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    InterfaceError,
    NoSuchModuleError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.dml import UpdateBase

from pagetrail.store.errors import ConfigError, StoreUnavailable
from pagetrail.store.faults import (
    DEFAULT_BUDGET,
    call_with_policy,
    fault_reason,
    is_permanent,
    refused,
)
from pagetrail.store.migrate import sqlite_file, upgrade

T = TypeVar("T")
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


class JSONText(str):
    """A value already serialized with json.dumps, stored as it is in a JSON column.

    For rows whose JSON is made anyway (the scanner's check evidence goes through json.dumps
    to turn odd values into strings): serializing it again would only repeat the work."""


def dump_json(value: Any) -> str:
    """The engines' JSON serializer: SQLAlchemy's default (json.dumps), except that JSONText
    is JSON already."""
    if isinstance(value, JSONText):
        return str(value)
    return json.dumps(value)


@dataclass(frozen=True)
class PoolSize:
    """Connections one process keeps to a server database (PostgreSQL): a worker's share of
    the server's max_connections (settings `db_pool_size`, `db_max_overflow`)."""

    size: int = 5
    overflow: int = 5


URL_HINT = "try sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DB"
BACKENDS = ("sqlite", "postgresql")  # the databases pagetrail ships drivers and migrations for
# (backend, driver) that Python or an extra of pagetrail's brings (psycopg 3: `[postgres]`).
SHIPPED_DRIVERS = {("sqlite", "pysqlite"), ("postgresql", "psycopg")}


def parse_database_url(url: str, *, check_driver: bool = True) -> URL:
    """`url` parsed by SQLAlchemy, or ConfigError (one line, never the URL's password) when
    it is malformed (no scheme, `user:pw@host`), has a port that is not 1–65535, names a
    database other than SQLite or PostgreSQL (`mysql://`), or a driver SQLAlchemy does not
    know. (`postgresql:///db`, without a host, is libpq's local socket: a working URL.)

    `check_driver`: the driver's module is imported too. One that is not installed (psycopg
    without the `[postgres]` extra) is raised as the ModuleNotFoundError it is, so that the
    face names the extra to install; settings are validated without it (a command that
    never opens the store must not need the driver)."""
    try:
        parsed = make_url(url.strip())
    except (ArgumentError, ValueError):
        # Their messages may quote parts of the URL (its password): not repeated.
        raise ConfigError(f"database URL is malformed ({URL_HINT})") from None
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ConfigError(f"database URL has port {parsed.port}, not 1-65535")
    backend = parsed.get_backend_name()
    if backend not in BACKENDS:
        raise ConfigError(f"database URL names {backend!r}: pagetrail stores in SQLite or "
                          f"PostgreSQL ({URL_HINT})")
    try:
        dialect = parsed.get_dialect()
    except NoSuchModuleError:
        raise ConfigError(f"database URL names the driver {parsed.drivername!r}, which "
                          f"SQLAlchemy does not know ({URL_HINT})") from None
    if (backend, parsed.get_driver_name()) not in SHIPPED_DRIVERS:
        try:  # a driver no extra of pagetrail's brings (postgresql+psycopg2://): the URL's
            dialect.import_dbapi()
        except ImportError:
            raise ConfigError(f"database URL names the driver {parsed.drivername!r}, which "
                              f"is not installed ({URL_HINT})") from None
    elif check_driver:
        dialect.import_dbapi()  # plain postgresql:// is psycopg 3 (the [postgres] extra)
    return parsed


def create_db_engine(url: str, pool: PoolSize = PoolSize(), *,
                     create_folder: bool = True) -> Engine:
    """An engine for `url`. ConfigError (one line, no password) when the URL is malformed or
    names a database driver SQLAlchemy does not know (`parse_database_url`).

    `create_folder`: an SQLite file's folder is made when missing (False: a diagnosis, which
    writes nothing)."""
    parsed = parse_database_url(url)
    try:
        return _create_db_engine(parsed, pool, create_folder)
    except (ArgumentError, ValueError):
        raise ConfigError(f"database URL is malformed ({URL_HINT})") from None


def _create_db_engine(parsed: URL, pool: PoolSize, create_folder: bool) -> Engine:
    if parsed.get_backend_name() == "sqlite":
        database = sqlite_file(parsed)
        if database is not None and create_folder:
            database.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"timeout": 30}, json_serializer=dump_json)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        # Plain postgresql:// means psycopg 3, the driver we ship.
        parsed = parsed.set(drivername="postgresql+psycopg")
    return create_engine(parsed, pool_pre_ping=True, json_serializer=dump_json,
                         pool_size=pool.size, max_overflow=pool.overflow)


# What `Store.session()` yields: code outside store/ hands it on to store functions that
# must share one transaction (a scan records pages, links and checks together) without
# knowing it is an SQLAlchemy session.
Transaction = Session


class Store:
    """A migrated database and a session factory. Use `session()` for a transaction.

    `fault_budget`: how long a store call waits for the database when it is away
    (store.faults; setting PAGETRAIL_STORE_FAULT_BUDGET)."""

    def __init__(self, url: str, *, migrate: bool = True, pool: PoolSize = PoolSize(),
                 fault_budget: float = DEFAULT_BUDGET) -> None:
        self.url = url
        self.fault_budget = fault_budget
        self.engine = create_db_engine(url, pool)
        if migrate:
            self.call(self._migrate)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def _migrate(self) -> None:
        with unavailable_as_error("migrating"):
            upgrade(self.engine)

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`function(*args, **kwargs)` — a block of work holding one transaction open across
        several store functions — under the store's fault policy (store.faults): retried
        whole while the database is away, StoreUnavailable past the fault budget."""
        return call_with_policy(self.fault_budget, function, *args, **kwargs)

    @contextmanager
    def session(self) -> Iterator[Transaction]:
        """One transaction: committed when the block ends, rolled back on error.
        StoreUnavailable when the database cannot be used (locked past the busy timeout,
        unreachable): a one-line error for every face, not a driver traceback."""
        with unavailable_as_error("reading or writing"), self._sessions.begin() as session:
            yield session

    def dispose(self) -> None:
        self.engine.dispose()


# What a caller outside store/ catches when the store fails: the driver's errors and the
# one-line StoreUnavailable they are turned into (callers need not know SQLAlchemy).
STORE_ERRORS: tuple[type[Exception], ...] = (SQLAlchemyError, StoreUnavailable)
# The store's faults that pass (connection lost, server restarting, locked, and the
# StoreUnavailable they become past the fault budget): a queue worker puts a job that met one
# back for redelivery (tools.workers.celery_app) instead of failing it.
TRANSIENT_STORE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError,
                                                       StoreUnavailable)


@contextmanager
def unavailable_as_error(doing: str) -> Iterator[None]:
    """The driver's OperationalError as a named error, with the driver's first line only
    (never the SQL or its parameters): StoreUnavailable for a fault that passes (database
    locked, connection refused…), StoreRefused for one that does not (a limit, a refused
    password: store.faults.fault_kind)."""
    try:
        yield
    except OperationalError as exc:
        if is_permanent(exc):
            raise refused(exc, doing) from exc
        raise StoreUnavailable(f"the database could not be used while {doing}: "
                               f"{fault_reason(exc)}") from exc


def open_store(url: str, pool: PoolSize = PoolSize(),
               fault_budget: float = DEFAULT_BUDGET) -> Store:
    """The store for `url`, opened once per process (the first caller's `pool` and
    `fault_budget` stand). The caller gives them (the settings: tools.settings.configured_store)."""
    with _open_lock:
        store = _opened.get(url)
        if store is None:
            store = _opened[url] = Store(url, pool=pool, fault_budget=fault_budget)
        return store


# --- bulk writes ------------------------------------------------------------------------------

Processor = Callable[[Any], Any]


@dataclass(frozen=True)
class _DriverStatement:
    """A statement compiled for one dialect: the driver's SQL, its parameters in the order
    the driver takes them, and the type conversions (bind processors) they need."""

    sql: str
    names: tuple[str, ...]
    positional: bool
    processed: tuple[tuple[str, Processor], ...]  # parameters with a conversion

    def parameters(self, row: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        values = {name: row[name] for name in self.names}
        for name, process in self.processed:
            values[name] = process(values[name])
        return tuple(values.values()) if self.positional else values


class BulkWrite:
    """An INSERT or UPDATE run with the driver's executemany, for thousands of rows.

    SQLAlchemy's executemany prepares each row in Python (parameter dictionaries, defaults,
    bind processing); in a link scan (~40,000 rows) that preparation beyond the type
    conversions was about a quarter of the store thread's CPU. This compiles the statement once per dialect (so the SQL, its
    placeholders and PostgreSQL's bind casts are SQLAlchemy's own), converts each value
    with its column type's bind processor (what SQLAlchemy stores, byte for byte: SQLite's
    datetime text, JSON text, psycopg's Json wrapper) and hands the rows to the driver.

    Every row must give every parameter in `names` (no column defaults are applied)."""

    def __init__(self, make: Callable[[], UpdateBase], names: Sequence[str]) -> None:
        self._make = make
        self.names = tuple(names)
        self._compiled: weakref.WeakKeyDictionary[Dialect, _DriverStatement] = (
            weakref.WeakKeyDictionary())

    def _for(self, dialect: Dialect) -> _DriverStatement:
        compiled = self._compiled.get(dialect)
        if compiled is None:
            compiled = self._compiled[dialect] = self._compile(dialect)
        return compiled

    def _compile(self, dialect: Dialect) -> _DriverStatement:
        statement = self._make().compile(dialect=dialect, column_keys=list(self.names),
                                          for_executemany=True)  # no RETURNING
        names = tuple(statement.positiontup or ()) if dialect.positional else self.names
        if set(names) != set(self.names):
            raise ValueError(f"statement parameters {names} are not {self.names}")
        processed = []
        for name in names:
            type_ = statement.binds[name].type
            process = type_.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                processed.append((name, process))
        return _DriverStatement(statement.string, names, dialect.positional, tuple(processed))

    def execute(self, connection: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        compiled = self._for(connection.dialect)
        connection.exec_driver_sql(compiled.sql, [compiled.parameters(row) for row in rows])
