"""The Celery application: pagetrail's unit jobs (tools.workers.jobs) as tasks on Redis.

`celery -A pagetrail.tools.workers.celery_app worker` and `pagetrail worker` run the same app. It is
configured from pagetrail's settings (PAGETRAIL_BROKER_URL, ...) when imported. Settings that
do not lose work:
- acks late + reject on a lost worker: a job is acknowledged after it ran, and a worker
  process that dies mid-job puts its job back; a whole worker killed leaves its job
  unacknowledged in Redis, which gives it to another worker after the visibility timeout
  (PAGETRAIL_BROKER_VISIBILITY_TIMEOUT, longer than the longest job's time limit);
- prefetch multiplier 1: a worker holds no more jobs than it runs;
- per-task soft and hard time limits;
- a fault of the infrastructure is never a job's failure: a store call waits for the
  database with backoff (store.faults, PAGETRAIL_STORE_FAULT_BUDGET); a job that met the
  database away past that budget, or the broker away, or that ran out of time while the
  database was away, is put back unacknowledged (rejected with requeue) for redelivery and
  nothing is recorded as failed; a job's own failure (bad input, an error of the database
  that does not pass: StoreRefused) is its recorded answer, and a job whose failure cannot
  be recorded is put back, not acknowledged;
- a job is not redelivered forever: its deliveries are counted in the broker's Redis
  (`deliveries`), and one delivered MAX_DELIVERIES times without an outcome — each time put
  back because the database was busy for it (a lock, a deadlock: store.faults `busy`), or
  its worker lost while running it — is recorded as failed, with the last reason. A delivery
  put back because the database, the broker or the network was away does not count: an
  outage is never a job's failure;
- results go to the store (the jobs table), never to a result backend (ignore_result);
- one queue per job kind, so a flood of checks never starves recoveries.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
import time
from typing import Any

from celery import Celery, Task, signals
from celery.exceptions import Reject, SoftTimeLimitExceeded
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from pagetrail.store.db import TRANSIENT_STORE_ERRORS, Store
from pagetrail.store.faults import fault_kind, fault_reason, is_store_fault, outage
from pagetrail.tools.net.netcheck import NetworkDown
from pagetrail.tools.settings import Settings, get_settings
from pagetrail.tools.workers.broker import (
    HARD_LIMIT_MARGIN,
    TASK_NAMES,
    configure,
    send_jobs,
    time_limit,
)
from pagetrail.tools.workers.dispatch import prepare_distributed
from pagetrail.tools.workers.jobs import run_job
from pagetrail.tools.workers.keys import JobKind, job_key
from pagetrail.tools.workers.scan_jobs import abandon_page

log = logging.getLogger(__name__)

# The broker's faults (Redis away while a job sends the jobs it fans out).
BROKER_FAULTS = (RedisConnectionError, RedisTimeoutError, KombuOperationalError, ConnectionError)
# Faults that pass: the job is put back for redelivery instead of failing. NetworkDown is
# this machine's network, not the link's (tools/net/netcheck.py): no verdict, retried later.
TRANSIENT = (*TRANSIENT_STORE_ERRORS, *BROKER_FAULTS, NetworkDown)
REDELIVERY_PAUSE = (1.0, 5.0)  # seconds (random in range) before a job is put back
MAX_DELIVERIES = 5  # deliveries of one job without an outcome before it is recorded failed
DELIVERIES_KEY = "pagetrail:deliveries:{}"  # Redis hash per task id: count, last reason
DELIVERIES_TTL = 7 * 24 * 3600  # seconds a count is kept (a job's redeliveries are closer)


app = Celery("pagetrail")
configure(app, get_settings())


# --- one event loop and one store per worker process ---------------------------------------

_local = threading.local()


def _runner() -> asyncio.Runner:
    runner = getattr(_local, "runner", None)
    if runner is None:
        runner = _local.runner = asyncio.Runner()
    return runner


def _store(settings: Settings) -> Store:
    from pagetrail.tools.settings import configured_store

    return configured_store(settings.database_url)


def is_fault(exc: BaseException) -> bool:
    """A fault of the infrastructure (the database or the broker away), not the job's."""
    if isinstance(exc, TRANSIENT_STORE_ERRORS):
        return is_store_fault(exc)
    return isinstance(exc, BROKER_FAULTS)


class Deliveries:
    """How many times each job (task id) was delivered without an outcome, in the broker's
    Redis (shared by every worker; a message put back keeps its task id). Counting is best
    effort: with Redis away the broker is away too, and the job waits for it anyway."""

    def __init__(self, url: str | None) -> None:
        self.url = url
        self._client: Any = None

    def _redis(self) -> Any:
        if self._client is None:
            from redis import Redis

            self._client = Redis.from_url(self.url or "", socket_timeout=5,
                                          socket_connect_timeout=5)
        return self._client

    def start(self, task_id: str) -> tuple[int, str]:
        """Count a delivery: (deliveries so far, this one included; the last reason)."""
        if not self.url or task_id == "?":
            return 1, ""
        key = DELIVERIES_KEY.format(task_id)
        try:
            pipe = self._redis().pipeline()
            pipe.hincrby(key, "count", 1)
            pipe.hget(key, "reason")
            pipe.expire(key, DELIVERIES_TTL)
            count, reason, _ = pipe.execute()
        except BROKER_FAULTS as exc:
            log.warning("job %s: its deliveries could not be counted: %s", task_id, exc)
            return 1, ""
        return int(count), (reason or b"").decode("utf-8", "replace")

    def put_back(self, task_id: str, reason: str, *, counts: bool) -> None:
        """A delivery put back: it counts (the database busy for this job) with its
        reason, or not (the database, broker or network away: uncounted)."""
        if not self.url or task_id == "?":
            return
        key = DELIVERIES_KEY.format(task_id)
        try:
            if counts:
                self._redis().hset(key, "reason", reason[:500])
            else:
                self._redis().hincrby(key, "count", -1)
        except BROKER_FAULTS as exc:
            log.warning("job %s: its deliveries could not be counted: %s", task_id, exc)

    def finished(self, task_id: str) -> None:
        if not self.url or task_id == "?":
            return
        try:
            self._redis().delete(DELIVERIES_KEY.format(task_id))
        except BROKER_FAULTS as exc:
            log.warning("job %s: its delivery count stays until it expires: %s", task_id, exc)


def _deliveries() -> Deliveries:
    counter = getattr(_local, "deliveries", None)
    if counter is None:
        counter = _local.deliveries = Deliveries(get_settings().broker_url)
    return counter


def counts_against_the_job(exc: BaseException) -> bool:
    """A fault that is about this job's work, not an outage: the database answered but was
    busy for it past the budget (a lock held, a deadlock, a serialization failure)."""
    return isinstance(exc, TRANSIENT_STORE_ERRORS) and fault_kind(exc) == "busy"


def put_back(kind: JobKind, task_id: str, exc: BaseException) -> Reject:
    """Reject(requeue=True) for a job that met a fault: the worker hands its message back to
    the broker (or, with the broker away, leaves it unacknowledged: the broker gives it out
    again after the visibility timeout). Nothing is recorded; a short random pause first, so
    that a fault that lasts does not spin. The delivery counts towards MAX_DELIVERIES only
    when the database was busy for the job (`counts_against_the_job`)."""
    _deliveries().put_back(task_id, f"{type(exc).__name__}: {fault_reason(exc)}",
                           counts=counts_against_the_job(exc))
    pause = random.uniform(*REDELIVERY_PAUSE)
    log.warning("job %s %s met a fault (%s: %s): put back for redelivery in %.0f s",
                kind, task_id, type(exc).__name__, fault_reason(exc), pause)
    time.sleep(pause)
    return Reject(f"{type(exc).__name__}: {fault_reason(exc)}", requeue=True)


def record_failure(kind: JobKind, items: list[dict[str, Any]], error: str) -> None:
    """Record jobs that failed for good (the store's policy waits for the database): the
    batch waiting for them ends and says why. A page job's scan goes on without it."""
    from pagetrail.store.jobs import JobRecord, record_jobs

    settings = get_settings()
    if kind == "page":
        for item in items:
            _runner().run(abandon_page(
                item, settings, _store(settings), error,
                lambda kind, batch: send_jobs(settings, kind, batch)))  # type: ignore[arg-type]
        return
    record_jobs(_store(settings), [
        JobRecord(kind, job_key(kind, item), item, "failed", {}, error) for item in items])


class JobTask(Task):
    """Runs a pagetrail job. A job that failed for good is recorded as failed in the store,
    with the exception, so the batch waiting for it ends and says why; a job that met a fault
    of the infrastructure is put back for redelivery (`put_back`), never failed."""

    kind: JobKind = "recover"

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any,
                   einfo: Any) -> None:
        """A failure outside the task's body (the hard time limit): recorded when it can be;
        the body records its own failures (`_run_task`)."""
        if getattr(exc, "pagetrail_recorded", False):
            return
        items = args[0] if args else kwargs.get("items", [])
        error = f"{type(exc).__name__}: {exc}"
        log.error("job %s %s failed for good: %s", self.kind, task_id, error)
        try:
            record_failure(self.kind, items, error)
        except TRANSIENT as store_down:
            log.error("could not record the failure of %s: %s", task_id, store_down)


def _run(kind: JobKind, items: list[dict[str, Any]]) -> int:
    settings = get_settings()
    limit = time_limit(settings, kind)

    async def bounded() -> int:
        # The event loop's own deadline ends the job cleanly before Celery's soft limit.
        async with asyncio.timeout(limit - 1):
            return len(await run_job(kind, items, settings, _store(settings)))

    try:
        return _runner().run(bounded())
    except SoftTimeLimitExceeded:
        # The signal landed inside the loop: a fresh loop for the next job.
        _runner().close()
        _local.runner = None
        raise


def _run_task(task: JobTask, kind: JobKind, items: list[dict[str, Any]]) -> int:
    """One delivery of a job: run it; a fault (or running out of time while the database
    was away) puts it back; any other failure is recorded, then raised (Celery logs it and
    acknowledges the message) — unless recording it met a fault: then it is put back."""
    faults_before = outage.seen
    task_id = task.request.id or "?"
    deliveries, last_reason = _deliveries().start(task_id)
    if deliveries > MAX_DELIVERIES:
        return _give_up(kind, items, task_id, deliveries - 1, last_reason)
    try:
        done = _run(kind, items)
    except TRANSIENT as exc:
        if is_fault(exc):
            raise put_back(kind, task_id, exc) from exc
        failure: BaseException = exc
    except (SoftTimeLimitExceeded, TimeoutError) as exc:
        if outage.seen != faults_before:  # its time went waiting for the database
            raise put_back(kind, task_id, exc) from exc
        failure = exc
    except Exception as exc:  # a bug or a limit: recorded below, then raised again
        failure = exc
    else:
        _deliveries().finished(task_id)
        return done
    _failed_for_good(kind, items, task_id, f"{type(failure).__name__}: {failure}")
    failure.pagetrail_recorded = True  # type: ignore[attr-defined]
    raise failure


def _failed_for_good(kind: JobKind, items: list[dict[str, Any]], task_id: str,
                     error: str) -> None:
    """Record the job as failed (then it is acknowledged: never delivered again); a fault
    of our own while recording puts it back instead."""
    log.error("job %s %s failed for good: %s", kind, task_id, error)
    try:
        record_failure(kind, items, error)
    except TRANSIENT as exc:
        if is_fault(exc):
            raise put_back(kind, task_id, exc) from exc
        raise
    _deliveries().finished(task_id)


def _give_up(kind: JobKind, items: list[dict[str, Any]], task_id: str, times: int,
             reason: str) -> int:
    """A job delivered MAX_DELIVERIES times without an outcome: recorded as failed (with why
    it kept coming back) and acknowledged, not run again."""
    _failed_for_good(kind, items, task_id,
                     f"delivered {times} times without an outcome, given up: "
                     f"{reason or 'its worker was lost while running it'}")
    return 0


def _task(kind: JobKind) -> Any:
    settings = get_settings()
    limit = time_limit(settings, kind)

    @app.task(name=TASK_NAMES[kind], base=JobTask, bind=True,
              soft_time_limit=limit, time_limit=limit + HARD_LIMIT_MARGIN, acks_late=True,
              reject_on_worker_lost=True, ignore_result=True)
    def task(self: JobTask, items: list[dict[str, Any]]) -> int:
        return _run_task(self, kind, items)

    task.kind = kind
    return task


check_task = _task("check")
recover_task = _task("recover")
scan_task = _task("scan")
page_task = _task("page")
digest_task = _task("digest")


# --- profiling (a diagnostic switch, off by default) ------------------------------------------

PROFILE_ENV = "PAGETRAIL_PROFILE_DIR"
_profiler: Any = None


@signals.worker_process_init.connect
def _start_profile(**_: Any) -> None:
    """With PAGETRAIL_PROFILE_DIR set, each pool process runs under cProfile and writes
    DIR/worker-PID.prof when it ends (where a job's CPU goes: bench/scale_workers.py
    --profile)."""
    global _profiler
    if os.environ.get(PROFILE_ENV):
        import cProfile

        _profiler = cProfile.Profile()
        _profiler.enable()


@signals.worker_process_shutdown.connect
def _write_profile(**_: Any) -> None:
    if _profiler is not None:
        _profiler.disable()
        _profiler.dump_stats(os.path.join(os.environ[PROFILE_ENV], f"worker-{os.getpid()}.prof"))


@signals.worker_init.connect
def _check_before_working(**_: Any) -> None:
    """A worker refuses to start with a configuration that cannot work (one clear line),
    and brings the store's schema up to date before taking jobs."""
    import sys

    from pagetrail.tools.errors import PagetrailError

    try:
        prepare_distributed(get_settings())
    except PagetrailError as exc:
        # Celery logs and ignores a signal handler's Exception: SystemExit stops the worker.
        print(f"pagetrail: {exc.code}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
