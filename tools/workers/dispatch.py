"""Dispatchers: where the unit jobs (tools.workers.jobs) run.

One interface, two implementations, chosen by configuration (`get_dispatcher`):
- `InProcessDispatcher` (default; no Redis): the jobs run on this process's event loop;
- `CeleryDispatcher` (PAGETRAIL_BROKER_URL=redis://...): the jobs go to Celery workers
  (tools.workers.celery_app), one queue per kind; completion is read from the store, which holds
  every job's outcome (store.jobs), so progress and answers need no result backend.

Both skip jobs the store already holds (a rerun resumes) and call `progress(done, total)`
as jobs complete.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pagetrail.store.db import Store
from pagetrail.store.jobs import JobRecord, done_keys, load_jobs, mark_job
from pagetrail.tools.errors import (
    BrokerUnavailable,
    ConfigError,
    JobFailed,
    JobsStalled,
)
from pagetrail.tools.net.politeness import spread_hosts
from pagetrail.tools.recovery.revisit import UNANSWERED, answered_afresh
from pagetrail.tools.settings import Settings, mask_url
from pagetrail.tools.workers.broker import configure, send_task
from pagetrail.tools.workers.jobs import run_job
from pagetrail.tools.workers.keys import REVISIT_FIELD, JobKind, job_key

ProgressFn = Callable[[int, int], None]
REDIS_SCHEMES = ("redis", "rediss")
POLL_WINDOW = 500  # pending keys looked up at a time (CeleryDispatcher._finished)
IN_PROCESS_CONCURRENCY = {"check": 8, "recover": 4, "scan": 1, "page": 8,
                          "digest": 1}  # jobs at once


# --- configuration checks -------------------------------------------------------------------

def validate_broker_url(url: str) -> str:
    """The broker URL, or ConfigError (one line, no password) when it is not a Redis URL."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError:
        raise ConfigError("PAGETRAIL_BROKER_URL is malformed "
                          "(try redis://127.0.0.1:6379/0)") from None
    if parts.scheme not in REDIS_SCHEMES or not parts.hostname:
        raise ConfigError(f"PAGETRAIL_BROKER_URL must be a Redis URL such as "
                          f"redis://127.0.0.1:6379/0, not {mask_url(url)}")
    return url.strip()


def require_shared_store(settings: Settings) -> None:
    """Workers need a store many processes can write: PostgreSQL, not SQLite."""
    if settings.database_url.startswith("sqlite"):
        raise ConfigError("PAGETRAIL_BROKER_URL is set but the store is SQLite: workers need "
                          "PostgreSQL (PAGETRAIL_DATABASE_URL=postgresql://USER:PASSWORD@HOST/DB)")


def ping_broker(url: str, timeout: float = 3.0) -> None:
    """BrokerUnavailable (one line) unless Redis at `url` answers."""
    from redis import Redis
    from redis.exceptions import RedisError

    client = Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    except RedisError as exc:
        raise BrokerUnavailable(f"cannot reach the broker at {mask_url(url)}: "
                                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                                ) from None
    finally:
        client.close()


def prepare_distributed(settings: Settings) -> None:
    """What a worker or a dispatching command checks first: a Redis broker URL, a shared
    store, a reachable broker; then the store's schema is brought up to date (once, before
    the worker forks its processes).

    TODO(#20): the migrate-once lock (SQLite file lock, PostgreSQL advisory lock) lands in
    store.migrate.upgrade; opening the store here is where workers take it."""
    if not settings.broker_url:
        raise ConfigError("no broker configured: set PAGETRAIL_BROKER_URL=redis://HOST:PORT/DB")
    url = validate_broker_url(settings.broker_url)
    require_shared_store(settings)
    ping_broker(url)
    from pagetrail.tools.settings import configured_store

    # The settings' store (its pool and fault budget: the one the jobs use); no connection
    # crosses a fork.
    configured_store(settings.database_url).engine.dispose()


# --- the interface ------------------------------------------------------------------------------

class Dispatcher(ABC):
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store

    async def run(self, kind: JobKind, items: Sequence[dict[str, Any]], *,
                  progress: ProgressFn | None = None) -> list[JobRecord]:
        """Run the jobs (those not already done) and return every job's record, in order."""
        keys = [job_key(kind, item) for item in items]
        total = len(set(keys))
        done = await asyncio.to_thread(done_keys, self.store, kind, keys)
        if progress is not None:
            progress(len(done), total)
        todo: dict[str, dict[str, Any]] = {}
        for key, item in zip(keys, items, strict=True):
            if key not in done:
                todo.setdefault(key, item)
        if todo and kind == "check":  # chunks of checks: each host's URLs spread out
            entries = list(todo.items())
            todo = dict(entries[i] for i in spread_hosts([item.get("url", "")
                                                          for _, item in entries]))
        if todo:
            await self._run(kind, todo, len(done), total, progress)
        records = await asyncio.to_thread(load_jobs, self.store, kind, keys)
        missing = [key for key in keys if key not in records]
        if missing:
            raise JobsStalled(f"{len(missing)} {kind} job(s) did not finish")
        return [records[key] for key in keys]

    async def recover(self, items: Sequence[dict[str, Any]], *,
                      progress: ProgressFn | None = None) -> list[JobRecord]:
        """Recover a batch of links ("recover" jobs), then once more each link the batch
        answered with no live page (tools.recovery.revisit: the remembered answer is given
        again, at no request, unless the batch's later links taught the store what could
        answer it). Every item's record, in order: the second one's answer when it was
        answered afresh (`revisit.answered_afresh`; its requests both runs'), else the
        first."""
        records = await self.run("recover", items, progress=progress)
        again = [i for i, record in enumerate(records) if record.status == "done"
                 and record.result.get("answer") in UNANSWERED]
        if not again:
            return records
        second_runs = await self.run("recover",
                                     [{**items[i], REVISIT_FIELD: "1"} for i in again])
        final = list(records)
        for i, second in zip(again, second_runs, strict=True):
            spent = int(second.result.get("requests") or 0)
            if second.status == "done" and answered_afresh(
                    (second.result.get("evidence") or {}).get("revisited"), spent):
                requests = int(records[i].result.get("requests") or 0) + spent
                final[i] = replace(records[i], result={**second.result, "requests": requests})
        return final

    @abstractmethod
    async def _run(self, kind: JobKind, todo: dict[str, dict[str, Any]], done: int,
                   total: int, progress: ProgressFn | None) -> None: ...

    @abstractmethod
    async def enqueue(self, kind: JobKind, item: dict[str, Any]) -> str:
        """Start one job without waiting for it; returns its key (its record appears in the
        store when it is done)."""


class InProcessDispatcher(Dispatcher):
    """Today's behaviour: the jobs run on this event loop, a few at a time (`concurrency`
    jobs — chunks of `check_chunk` URLs for checks — at once; default per kind)."""

    # Enqueued jobs, held until done (the loop keeps only weak references to tasks): shared,
    # since a dispatcher is often made for one call and dropped.
    _background: set[asyncio.Task[Any]] = set()  # noqa: RUF012

    def __init__(self, settings: Settings, store: Store, *,
                 concurrency: int | None = None) -> None:
        super().__init__(settings, store)
        self.concurrency = concurrency

    async def _run(self, kind: JobKind, todo: dict[str, dict[str, Any]], done: int,
                   total: int, progress: ProgressFn | None) -> None:
        items = list(todo.values())
        size = max(1, self.settings.check_chunk) if kind == "check" else 1
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        gate = asyncio.Semaphore(self.concurrency or IN_PROCESS_CONCURRENCY[kind])
        count = done

        async def one(chunk: list[dict[str, Any]]) -> None:
            nonlocal count
            async with gate:
                await run_job(kind, chunk, self.settings, self.store)
            count += len(chunk)
            if progress is not None:
                progress(count, total)

        await asyncio.gather(*(one(chunk) for chunk in chunks))

    async def enqueue(self, kind: JobKind, item: dict[str, Any]) -> str:
        await asyncio.to_thread(mark_job, self.store, kind, job_key(kind, item), item, "queued")
        task = asyncio.create_task(run_job(kind, [item], self.settings, self.store))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return job_key(kind, item)


class CeleryDispatcher(Dispatcher):
    """Sends the jobs to Celery workers over Redis; progress and answers from the store.

    `stall_seconds`: how long without any job finishing before `run` gives up (JobsStalled):
    long enough for a lost worker's jobs to come back (the visibility timeout) and run."""

    def __init__(self, settings: Settings, store: Store, *, poll_seconds: float = 0.5,
                 stall_seconds: float | None = None) -> None:
        super().__init__(settings, store)
        from celery import Celery

        self.client = Celery("pagetrail-client")
        configure(self.client, settings)
        self.poll_seconds = poll_seconds
        longest = max(settings.check_time_limit, settings.recover_time_limit,
                      settings.scan_time_limit)
        self.stall_seconds = (stall_seconds if stall_seconds is not None
                              else settings.broker_visibility_timeout + longest + 60)

    def _send(self, kind: JobKind, items: list[dict[str, Any]]) -> None:
        send_task(self.client, kind, items)

    async def _run(self, kind: JobKind, todo: dict[str, dict[str, Any]], done: int,
                   total: int, progress: ProgressFn | None) -> None:
        items = list(todo.values())
        size = max(1, self.settings.check_chunk) if kind == "check" else 1

        def send_all() -> None:
            for i in range(0, len(items), size):
                self._send(kind, items[i:i + size])

        await asyncio.to_thread(send_all)
        pending = dict.fromkeys(todo)  # in sending order
        last_change = time.monotonic()
        while pending:
            await asyncio.sleep(self.poll_seconds)
            finished = await asyncio.to_thread(self._finished, kind, list(pending))
            if finished:
                for key in finished:
                    del pending[key]
                last_change = time.monotonic()
                if progress is not None:
                    progress(total - len(pending), total)
            elif time.monotonic() - last_change > self.stall_seconds:
                raise JobsStalled(f"no {kind} job finished for {self.stall_seconds:.0f} s; "
                                  f"{len(pending)} of {total} not done (are workers running "
                                  f"on the '{kind}' queue?)")

    def _finished(self, kind: JobKind, pending: list[str]) -> set[str]:
        """Which pending keys are done, looked up a window at a time from the oldest: the
        workers take jobs in sending order, so a window not wholly done ends the look (the
        rest are found on later polls). Asking for every pending key each poll cost the
        store ~40 lookups a second at the start of a 20,000-link batch."""
        finished: set[str] = set()
        for i in range(0, len(pending), POLL_WINDOW):
            window = pending[i:i + POLL_WINDOW]
            found = done_keys(self.store, kind, window)
            finished |= found
            if len(found) < len(window):
                break
        return finished

    async def enqueue(self, kind: JobKind, item: dict[str, Any]) -> str:
        # Marked before it is sent: a fast worker's `running` or record then follows it.
        await asyncio.to_thread(mark_job, self.store, kind, job_key(kind, item), item, "queued")
        await asyncio.to_thread(self._send, kind, [item])
        return job_key(kind, item)


def get_dispatcher(settings: Settings, store: Store) -> Dispatcher:
    """Celery when PAGETRAIL_BROKER_URL is set (after checking the configuration works:
    ConfigError / BrokerUnavailable otherwise), else in-process."""
    if settings.broker_url:
        validate_broker_url(settings.broker_url)
        require_shared_store(settings)
        ping_broker(settings.broker_url)
        return CeleryDispatcher(settings, store)
    return InProcessDispatcher(settings, store)


async def scan_on_workers(dispatcher: Dispatcher, target: str, *, depth: int, max_pages: int,
                          same_site_only: bool, recover_limit: int = 0,
                          progress: ProgressFn | None = None) -> dict[str, Any]:
    """A site scan as a job (on a worker when the dispatcher is Celery), then recoveries of
    its newly confirmed dead links fanned out as recovery jobs. The digest as JSON (a
    failed scan raises JobFailed with its recorded error)."""
    import uuid

    from pagetrail.tools.scan.digest import DigestRecovery, ScanDigest

    item = {"target": target, "request": uuid.uuid4().hex, "depth": depth,
            "max_pages": max_pages, "same_site_only": same_site_only}
    (record,) = await dispatcher.run("scan", [item])
    if record.status != "done":
        raise JobFailed(f"scan of {target} failed: {record.error}")
    digest = ScanDigest.model_validate(record.result)
    links = digest.newly_confirmed[:max(0, recover_limit)]
    if links:
        items = []
        for link in links:
            source = link.found_on[0] if link.found_on else None
            items.append({k: v for k, v in {
                "url": link.url, "source_url": source.page_url if source else None,
                "anchor": source.anchor if source else None,
                "context": source.context if source else None}.items() if v})
        for link, answer in zip(links, await dispatcher.recover(items, progress=progress),
                                strict=True):
            if answer.status != "done":
                continue  # its error is in the jobs table; the digest shows no answer
            top = next(iter(answer.result.get("candidates") or []), None)
            link.recovery = DigestRecovery(
                answer=answer.result["answer"], url=top["url"] if top else None,
                kind=top["kind"] if top else None,
                confidence=top["confidence"] if top else None,
                cached=bool(answer.result.get("cached")))
    return digest.model_dump(mode="json")


def digest_runner(dispatcher: Dispatcher) -> Callable[..., Any]:
    """A drop-in for `tools.scan.digest.run_digests` that builds each channel's digest as a job
    (on the workers when the dispatcher is Celery): one digest job per channel, the digests
    read back from the runs the jobs recorded. A target watched by several channels is
    scanned once per period: the channels' jobs share one scan job keyed by site, options
    and period (tools.workers.jobs.shared_site_scan)."""
    import uuid

    from pagetrail.store.jobs import digest_run_summaries
    from pagetrail.tools.scan.digest import ChannelDigest, _watches

    async def run(store: Store, settings: Settings | None = None, *, clock: Any = None,
                  channel: str | None = None, recover: bool = True,
                  **_options: Any) -> list[ChannelDigest]:
        channels = [channel] if channel is not None else list(
            (await asyncio.to_thread(_watches, store)).keys())
        items = [{"channel": c, "request": uuid.uuid4().hex, "recover": recover}
                 for c in channels]
        records = await dispatcher.run("digest", items)
        failures = [f"{r.input['channel']}: {r.error}" for r in records if r.status != "done"]
        if failures:
            raise JobFailed(f"digest job(s) failed: {'; '.join(failures)}")
        run_ids = [run_id for r in records for run_id in r.result["runs"]]
        digests = []
        for run_id, summary in await asyncio.to_thread(digest_run_summaries, store, run_ids):
            digest = ChannelDigest.model_validate(
                {k: v for k, v in summary.items() if k != "slack"})
            digest.run_id = run_id
            digests.append(digest)
        return digests

    return run


def configured_digest_runner(settings: Settings, store: Store) -> Callable[..., Any]:
    """`run_digests` in-process, or `digest_runner` on the workers when a broker is set."""
    if not settings.broker_url:
        from pagetrail.tools.scan.digest import run_digests

        return run_digests

    async def on_workers(*args: Any, **kwargs: Any) -> Any:
        # get_dispatcher checks the configuration and pings the broker (blocking calls).
        dispatcher = await asyncio.to_thread(get_dispatcher, settings, store)
        return await digest_runner(dispatcher)(*args, **kwargs)

    return on_workers
