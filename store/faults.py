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

Other driver errors (a missing table, a constraint violated) are not faults of the
infrastructure: they are raised at once, as before.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_random_exponential,
)

from pagetrail.store.errors import StoreUnavailable

log = logging.getLogger("pagetrail.store")

DEFAULT_BUDGET = 120.0  # seconds a call waits for the database (PAGETRAIL_STORE_FAULT_BUDGET)
MAX_WAIT = 8.0  # the longest pause between two attempts
# SQLite's OperationalErrors that pass: a lock held by another writer, a disk full or failing,
# a file that cannot be opened (a volume not mounted yet). "no such table", "near ...: syntax
# error" are not faults of the infrastructure.
SQLITE_TRANSIENT = ("locked", "busy", "disk", "full", "unable to open")

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


def is_transient(exc: BaseException) -> bool:
    """A fault of the infrastructure that passes: the database unreachable, restarting or
    dropping the connection; SQLite locked past its busy timeout, or its disk full."""
    if isinstance(exc, StoreUnavailable):
        if getattr(exc, "gave_up", False):
            return False  # a budget already spent (an inner call): not waited for twice
        cause = exc.__cause__
        return cause is not None and is_transient(cause)
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    if orig is not None and type(orig).__module__.startswith("sqlite3"):
        message = str(orig).lower()
        return any(word in message for word in SQLITE_TRANSIENT)
    return True  # PostgreSQL: connection refused or lost, shutting down, starting up, disk full


def is_store_fault(exc: BaseException) -> bool:
    """A transient fault, or the StoreUnavailable of a call that waited out its budget for
    one: the database was away (a worker puts the job back; nothing is recorded as failed)."""
    return bool(getattr(exc, "gave_up", False)) or is_transient(exc)


def notes_store_fault(note: str) -> bool:
    """A failure note (an answer's `store` failure) made of a StoreUnavailable past the
    budget: that part of the answer is missing because the database was away."""
    return f"({BUDGET_SETTING})" in note


def gave_up(exc: BaseException, budget: float) -> StoreUnavailable:
    """The named error past the budget (marked so that no outer call waits again)."""
    return away(f"the database did not answer for {budget:.0f} s "
                f"({BUDGET_SETTING}): {fault_reason(exc)}")


def away(message: str) -> StoreUnavailable:
    """StoreUnavailable marked as the database away past its budget (`is_store_fault`)."""
    error = StoreUnavailable(message)
    error.gave_up = True  # type: ignore[attr-defined]
    return error


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
                raise
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
