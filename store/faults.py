"""One policy for store faults: the database away for a while is waited for, not failed.

Every store function that opens a transaction runs under `store_call` (and code outside
store/ that holds a transaction open across several store functions runs its block with
`Store.call`). A transient fault — the connection refused or dropped (PostgreSQL stopped,
restarting, a network blip), SQLite's `database is locked` past its busy timeout, a disk
full or failing — makes the call wait and try again, with exponential backoff and jitter
(tenacity), for up to the store's fault budget (setting PAGETRAIL_STORE_FAULT_BUDGET,
default 120 s) from the call's first fault. The whole transaction is retried: a store
function is one transaction, so nothing of a failed attempt was kept.

While it waits, one line in the log (per outage, not per waiting call) says what it waits
for and until when; when the database answers again, one line says so. Past the budget the
call raises StoreUnavailable (one line, `store_unavailable`): the caller stops (a batch
exits 2 and resumes on rerun; a worker puts its job back for redelivery), and nothing is
recorded as failed because the database was away.

What passes is told by the driver's own code, never by the exception's class alone (psycopg
raises OperationalError for a refused password and for an index row too large as much as
for a server shutting down): PostgreSQL's SQLSTATE (`e.sqlstate`, Appendix A of its manual)
and SQLite's error name (`sqlite_errorname`). `fault_kind` sorts a driver error into
- `away`: the database did not answer — connection exceptions (class 08), the server
  shutting down or starting (57P01, 57P02, 57P03), a connection dropped; SQLite's file that
  cannot be opened;
- `busy`: it answered but cannot do it now — a lock not available (55P03), a deadlock
  (40P01), a serialization failure (40001), insufficient resources (class 53: disk full,
  out of memory, too many connections); SQLite's `database is locked`, busy, full, I/O;
- `permanent`: everything else with a code — a program limit (class 54: an index row too
  large for its btree), a refused password or role (28P01, 28000), a database that does not
  exist (3D000), bad SQL (42), bad data (22), a constraint (23). It is named at once as
  StoreRefused (`store_refused`, with its SQLSTATE): no budget is waited out, nothing says
  "waiting for the database", and a worker records the job as failed.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_random_exponential,
)

from pagetrail.store.errors import StoreRefused, StoreUnavailable

log = logging.getLogger("pagetrail.store")

DEFAULT_BUDGET = 120.0  # seconds a call waits for the database (PAGETRAIL_STORE_FAULT_BUDGET)
MAX_WAIT = 8.0  # the longest pause between two attempts
FaultKind = Literal["away", "busy", "permanent"]

# PostgreSQL SQLSTATEs (classes: the first two characters) of faults that pass.
AWAY_CLASSES = frozenset({"08"})  # connection exception: refused, lost, failed
AWAY_CODES = frozenset({
    "57P01",  # admin_shutdown: the server is shutting down (pg_ctl stop -m fast)
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now: the server is starting up or in recovery
    "57P05",  # idle_session_timeout: the server closed an idle connection
})
BUSY_CLASSES = frozenset({"53"})  # insufficient resources: disk full, out of memory, too many
#                                   connections, a configuration limit
BUSY_CODES = frozenset({
    "55P03",  # lock_not_available (lock_timeout)
    "55006",  # object_in_use (a database being dropped or created from a template)
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "40003",  # statement_completion_unknown
    "57014",  # query_canceled (statement_timeout)
    "58030",  # io_error
})
# SQLite's result codes that pass (sqlite3 errors' `sqlite_errorname`, extended codes
# included by prefix): a lock held by another writer, a disk full or failing, a file that
# cannot be opened (a volume not mounted yet). SQLITE_ERROR ("no such table", "near …:
# syntax error"), SQLITE_CONSTRAINT, SQLITE_TOOBIG, SQLITE_READONLY, SQLITE_CORRUPT,
# SQLITE_NOTADB, SQLITE_PERM… are not faults of the infrastructure.
SQLITE_BUSY_NAMES = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR",
                     "SQLITE_PROTOCOL")
SQLITE_AWAY_NAMES = ("SQLITE_CANTOPEN",)
# The same told by the message, for an sqlite3 error made without its code.
SQLITE_BUSY_WORDS = ("locked", "busy", "disk", "full")
SQLITE_AWAY_WORDS = ("unable to open",)
# A PostgreSQL failure to connect that carries no SQLSTATE (libpq's message of a connection
# attempt): the server's refusals that no retry changes, told by libpq's wording.
PG_REFUSALS = ("password authentication failed", "authentication failed",
               "no pg_hba.conf entry", "does not exist", "invalid password",
               "password is missing", "no password supplied", "sslmode value",
               "invalid connection option", "invalid sslmode", "certificate")

# In the message of StoreUnavailable past the budget: how an answer's note (a recovery's
# `store` failure) says the database was away, not the request at fault.
BUDGET_SETTING = "PAGETRAIL_STORE_FAULT_BUDGET"

P = ParamSpec("P")
T = TypeVar("T")

_local = threading.local()  # depth of store_call frames in this thread


class _Outage:
    """The process's view of the current outage: one line when it starts, one when it ends;
    `seen` counts the faults met (a worker tells a job that met one from a job that failed)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started: float | None = None
        self.waiting = 0
        self.seen = 0

    def wait(self, reason: str, budget: float) -> None:
        with self._lock:
            self.seen += 1
            self.waiting += 1
            if self.started is not None:
                return
            self.started = time.monotonic()
        log.warning("waiting for the database (%s): retrying for up to %.0f s", reason, budget)

    def end_wait(self, *, answered: bool) -> None:
        with self._lock:
            self.waiting = max(0, self.waiting - 1)
            if self.started is None or not answered:
                if self.waiting == 0:
                    self.started = None
                return
            lasted = time.monotonic() - self.started
            self.started = None
        log.warning("the database answers again after %.0f s", lasted)


outage = _Outage()


def fault_reason(exc: BaseException) -> str:
    """The driver's first line, never the SQL or its parameters."""
    cause: BaseException = exc
    if isinstance(exc, StoreUnavailable) and exc.__cause__ is not None:
        cause = exc.__cause__
    if isinstance(cause, DBAPIError) and cause.orig is not None:
        text = str(cause.orig).strip()
        return text.splitlines()[0] if text else type(cause.orig).__name__
    text = str(cause).strip()
    return text.splitlines()[0] if text else type(cause).__name__


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a PostgreSQL driver error (psycopg's `sqlstate`, or its `diag`),
    None when it has none (a failure to connect, another driver)."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    code = getattr(orig, "sqlstate", None)
    if not code:
        diag = getattr(orig, "diag", None)
        code = getattr(diag, "sqlstate", None) if diag is not None else None
    return str(code) if code else None


def _sqlite_kind(orig: BaseException) -> FaultKind:
    name = str(getattr(orig, "sqlite_errorname", "") or "")
    if name:
        if name.startswith(SQLITE_AWAY_NAMES):
            return "away"
        return "busy" if name.startswith(SQLITE_BUSY_NAMES) else "permanent"
    message = str(orig).lower()
    if any(word in message for word in SQLITE_AWAY_WORDS):
        return "away"
    return "busy" if any(word in message for word in SQLITE_BUSY_WORDS) else "permanent"


def _sqlstate_kind(code: str) -> FaultKind:
    if code[:2] in AWAY_CLASSES or code in AWAY_CODES:
        return "away"
    if code[:2] in BUSY_CLASSES or code in BUSY_CODES:
        return "busy"
    return "permanent"


def fault_kind(exc: BaseException) -> FaultKind | None:
    """What a store error says of the database: `away` (it did not answer), `busy` (it
    answered, and cannot do it now), `permanent` (it will answer the same again), or None
    for an error that is not the driver's (a bug of ours, a ValueError).

    A StoreUnavailable is judged by its cause; one that already waited out its budget is
    `away` (the named error past the budget)."""
    if isinstance(exc, StoreRefused):
        return "permanent"
    if isinstance(exc, StoreUnavailable):
        if getattr(exc, "gave_up", False):
            return "busy" if getattr(exc, "fault", "away") == "busy" else "away"
        cause = exc.__cause__
        return fault_kind(cause) if cause is not None else None
    if not isinstance(exc, DBAPIError):
        return None
    if exc.connection_invalidated:
        return "away"
    orig = exc.orig
    if orig is not None and type(orig).__module__.startswith("sqlite3"):
        return _sqlite_kind(orig)
    code = sqlstate(exc)
    if code:
        return _sqlstate_kind(code)
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return "permanent"  # a constraint, bad SQL, bad data: the driver's classes say so
    message = str(orig if orig is not None else exc).lower()
    if any(words in message for words in PG_REFUSALS):
        return "permanent"  # a refused password or role, a database that does not exist
    return "away"  # connection refused, reset or lost: libpq gives no SQLSTATE for these


def is_transient(exc: BaseException) -> bool:
    """A fault of the infrastructure that passes (`fault_kind` away or busy): the database
    unreachable, restarting or dropping the connection, a lock, a deadlock, a disk full;
    SQLite locked past its busy timeout. Never a StoreUnavailable that already waited out
    its budget (an inner call: not waited for twice)."""
    if isinstance(exc, StoreUnavailable) and getattr(exc, "gave_up", False):
        return False
    return fault_kind(exc) in ("away", "busy")


def is_permanent(exc: BaseException) -> bool:
    """A driver error that no waiting changes (a limit, a refused password, bad SQL)."""
    return fault_kind(exc) == "permanent"


def refused(exc: BaseException, doing: str = "") -> StoreRefused:
    """The named error of a permanent driver error: its SQLSTATE and condition, and the
    driver's first line (never the SQL or its parameters)."""
    code = sqlstate(exc)
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    condition = str(getattr(orig, "sqlite_errorname", "") or type(orig).__name__)
    tag = f"SQLSTATE {code} {condition}" if code else condition
    while_doing = f" while {doing}" if doing else ""
    error = StoreRefused(f"the database refused the request{while_doing} ({tag}): "
                         f"{fault_reason(exc)}; not retried (an error that does not pass)")
    error.sqlstate = code  # type: ignore[attr-defined]
    return error


def is_store_fault(exc: BaseException) -> bool:
    """A transient fault, or the StoreUnavailable of a call that waited out its budget for
    one: the database was away (a worker puts the job back; nothing is recorded as failed).
    Never a permanent error (StoreRefused): that one is the job's."""
    if isinstance(exc, StoreRefused):
        return False
    return bool(getattr(exc, "gave_up", False)) or is_transient(exc)


def notes_store_fault(note: str) -> bool:
    """A failure note (an answer's `store` failure) made of a StoreUnavailable past the
    budget: that part of the answer is missing because the database was away."""
    return f"({BUDGET_SETTING})" in note


def gave_up(exc: BaseException, budget: float) -> StoreUnavailable:
    """The named error past the budget (marked so that no outer call waits again), saying
    whether the database was away or busy (a lock, a deadlock: `noted_fault`)."""
    if fault_kind(exc) == "busy":
        return away(f"the database was busy for {budget:.0f} s ({BUDGET_SETTING}): "
                    f"{fault_reason(exc)}", fault="busy")
    return away(f"the database did not answer for {budget:.0f} s "
                f"({BUDGET_SETTING}): {fault_reason(exc)}")


def away(message: str, fault: FaultKind = "away") -> StoreUnavailable:
    """StoreUnavailable marked as the database away (or busy) past its budget
    (`is_store_fault`)."""
    error = StoreUnavailable(message)
    error.gave_up = True  # type: ignore[attr-defined]
    error.fault = fault  # type: ignore[attr-defined]
    return error


def noted_fault(note: str) -> FaultKind:
    """Whether a failure note made past the budget (`notes_store_fault`) says the database
    was busy or away."""
    return "busy" if "was busy for" in note else "away"


def call_with_policy(budget: float, call: Callable[P, T], *args: P.args,
                     **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)` under the policy: transient faults retried with exponential
    backoff and jitter for up to `budget` seconds, then StoreUnavailable. A call made inside
    another (a store function calling another) runs once: the outermost one retries."""
    if getattr(_local, "depth", 0):
        return call(*args, **kwargs)
    _local.depth = 1
    try:
        try:
            return call(*args, **kwargs)  # the usual case: no fault, no retry machinery
        except (OperationalError, InterfaceError, StoreUnavailable) as exc:
            if not is_transient(exc):
                raise  # at once, never waited for (a session names it: StoreRefused)
            if budget <= 0:  # no waiting: the named error at the first fault
                raise gave_up(exc, 0) from exc
            first = exc
        return _ride_out(first, budget, call, *args, **kwargs)
    finally:
        _local.depth = 0


def _ride_out(first: BaseException, budget: float, call: Callable[P, T], *args: P.args,
              **kwargs: P.kwargs) -> T:
    """After a first transient fault: wait and retry until the call goes through or the
    budget (from now) is spent."""
    outage.wait(fault_reason(first), budget)
    retrying = Retrying(retry=retry_if_exception(is_transient),
                        stop=stop_after_delay(max(0.0, budget)),
                        wait=wait_random_exponential(multiplier=0.25, max=MAX_WAIT),
                        reraise=True)
    try:
        time.sleep(min(MAX_WAIT, 0.25 + 0.25 * random.random()))
        result = retrying(call, *args, **kwargs)
    except (OperationalError, InterfaceError, StoreUnavailable) as exc:
        outage.end_wait(answered=False)
        if is_transient(exc):
            raise gave_up(exc, budget) from exc
        raise
    outage.end_wait(answered=True)
    return result


def store_call(function: Callable[P, T]) -> Callable[P, T]:
    """A store function (first argument: the Store) run under the policy with the store's
    fault budget."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        store: Any = args[0] if args else kwargs.get("store")
        budget = getattr(store, "fault_budget", DEFAULT_BUDGET)
        return call_with_policy(budget, function, *args, **kwargs)

    return wrapper
