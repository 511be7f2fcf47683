"""The unit jobs: check URLs, recover one link, scan one target, build one channel's digest.

Each is a function of (input, settings, store) that reads and writes only through store/ and
ends by recording its outcome in the store's job table (store.jobs), keyed by its input.
They are idempotent: a job whose (kind, key) is already recorded returns that record without
doing the work again, and recording never overwrites (first writer wins), so a redelivered
job — a worker killed after writing, before acknowledging — leaves the store as one run does.
The in-process dispatcher and the Celery tasks (tools.workers.celery_app) call these same functions.

Inputs are plain JSON objects (they travel in broker messages):
- check:   {"url": ..., "batch": ...}         key: hash of batch and URL (a re-check is a
                                                new batch; a redelivery is not)
- recover: {"url", "source_url", "anchor", "context", "date"}   key: hash of the input, so a
           rerun of a batch file skips the links already answered
- scan:    {"target", "request", "depth", "max_pages", "same_site_only"}   key: request id
           (in-process: one Scanner run; with a broker: fanned out as page jobs, see
           tools.workers.scan_jobs; its record is written by the page job that finishes the scan)
- page:    {"scan", "url", "depth", "target", "max_depth", "max_pages", "same_site_only"}
           key: hash of scan and URL; recorded in the scan's frontier (store.frontier), not
           in the jobs table
- digest:  {"channel", "request", "recover"}    key: request id; the scans of its watched
           targets are shared with the other channels' digest jobs of the period
           (`shared_site_scan`: a scan job whose request is watch:PERIOD:OPTIONS-KEY)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pagetrail.store.db import Store
from pagetrail.store.faults import away as store_away
from pagetrail.store.faults import is_store_fault, noted_fault, notes_store_fault
from pagetrail.store.jobs import JobRecord, load_jobs, mark_job, record_jobs
from pagetrail.tools.errors import BadJobInput, JobFailed, PagetrailError
from pagetrail.tools.settings import Settings
from pagetrail.tools.workers.broker import send_jobs
from pagetrail.tools.workers.keys import RECOVER_FIELDS, JobKind, job_key

if TYPE_CHECKING:
    from pagetrail.tools.scan.digest import ScanDigest
    from pagetrail.tools.scan.scanner import ScanOptions

MAX_CANDIDATES = 10


def _failed(kind: JobKind, key: str, item: dict[str, Any], exc: PagetrailError) -> JobRecord:
    """The record of a job that failed for good. A store fault (the database away past the
    fault budget) is raised instead: nothing is recorded as failed because the database was
    away; the job stays unfinished (a rerun or a redelivery does it)."""
    if is_store_fault(exc):
        raise exc
    return JobRecord(kind, key, item, "failed", {}, f"{exc.code}: {exc}")


async def _done(store: Store, kind: JobKind, keys: Sequence[str]) -> dict[str, JobRecord]:
    return await asyncio.to_thread(load_jobs, store, kind, keys)


async def _running(store: Store, kind: JobKind, key: str, item: dict[str, Any]) -> None:
    """A long job says it started (store.jobs.job_state tells queued from running)."""
    await asyncio.to_thread(mark_job, store, kind, key, item, "running")


async def _record(store: Store, records: Sequence[JobRecord]) -> None:
    await asyncio.to_thread(record_jobs, store, records)


# --- check ----------------------------------------------------------------------------------

async def check_jobs(items: Sequence[dict[str, Any]], settings: Settings,
                     store: Store) -> list[JobRecord]:
    """Check URLs (one job each), sharing one client; politely (the per-host rate applies:
    these are bulk checks). Returns each job's stored record, in order.

    The client is the scanner's lean one (tools.net.bulkfetch: the fetch layer's guarantees,
    the Fetcher for proxied hosts and faults worth a retry): httpx cost most of a check's
    CPU, which bounds how many checks a machine's workers run."""
    from pagetrail.tools.linkcheck.check import check_link
    from pagetrail.tools.net.bulkfetch import BulkFetcher
    from pagetrail.tools.net.fetch import Fetcher

    keys = [job_key("check", item) for item in items]
    done = await _done(store, "check", keys)
    todo = [(key, item) for key, item in zip(keys, items, strict=True) if key not in done]
    if todo:
        async with Fetcher(settings) as fetcher:
            client = BulkFetcher(fetcher)

            async def one(key: str, item: dict[str, Any]) -> JobRecord:
                try:
                    result = await check_link(item["url"], client,  # type: ignore[arg-type]
                                              settings=settings, polite=True)
                except PagetrailError as exc:  # InvalidURL: the input's fault, recorded
                    return _failed("check", key, item, exc)
                return JobRecord("check", key, item, "done", result.model_dump(mode="json"))

            try:
                records = await asyncio.gather(*(one(key, item) for key, item in todo))
            finally:
                await client.aclose()
        await _record(store, records)
        done = await _done(store, "check", keys)
    return [done[key] for key in keys]


# --- recover --------------------------------------------------------------------------------

def recover_input(raw: dict[str, Any]) -> dict[str, Any]:
    """A recovery job's input from a batch row: the known fields, blanks dropped.
    BadJobInput when the URL is missing or the date is not ISO."""
    item = {name: str(raw[name]).strip() for name in RECOVER_FIELDS
            if raw.get(name) not in (None, "") and str(raw[name]).strip()}
    if "url" not in item:
        raise BadJobInput("a row without a url")
    if "date" in item:
        try:
            datetime.fromisoformat(item["date"].replace("Z", "+00:00"))
        except ValueError:
            raise BadJobInput(f"not an ISO date: {item['date']!r} (try 2019-06-01)") from None
    return item


async def recover_job(item: dict[str, Any], settings: Settings, store: Store) -> JobRecord:
    """Recover one dead link (the full pipeline, with the store's caches, picks and moves)."""
    from pagetrail.tools.recovery.route import recover_link

    key = job_key("recover", item)
    done = await _done(store, "recover", [key])
    if key in done:
        return done[key]
    link_date = None
    if item.get("date"):
        link_date = datetime.fromisoformat(item["date"].replace("Z", "+00:00"))
    try:
        # Not fresh: a redelivery after the answer was stored (killed before recording the
        # job) reads that answer back instead of storing a second one. But an answer that
        # lost parts (known moves, picks, what it learned, the local index) because the
        # database was away past its budget is redone, never kept (`_lost_to_the_store`).
        for fresh in (False, True):
            recovery = await recover_link(
                item["url"], source_url=item.get("source_url"), anchor=item.get("anchor"),
                context=item.get("context"), link_date=link_date,
                max_candidates=MAX_CANDIDATES, fresh=fresh, settings=settings, store=store)
            lost = _lost_to_the_store(recovery)
            if not lost or not recovery.cached:
                break
        if lost:  # not recorded: the job is redone (redelivery, or a rerun of the batch)
            raise store_away(lost, fault=noted_fault(lost))
        record = JobRecord("recover", key, item, "done", recovery.model_dump(mode="json"))
    except PagetrailError as exc:
        record = _failed("recover", key, item, exc)
    await _record(store, [record])
    return (await _done(store, "recover", [key]))[key]


def _lost_to_the_store(recovery: Any) -> str:
    """The first of a recovery's failures that says the database was away past its fault
    budget ("" when none does)."""
    return next((f"{f.engine}: {f.error}" for f in recovery.failures
                 if notes_store_fault(f.error)), "")


# --- scan and digest (long work the faces enqueue) -----------------------------------------

async def scan_job(item: dict[str, Any], settings: Settings, store: Store, *,
                   fan_out: bool | None = None) -> JobRecord | None:
    """Scan one target and build its digest. In-process the scanner resumes an unfinished
    scan of the same target and options, so a redelivered scan continues instead of starting
    over. With a broker (or `fan_out`) the scan is fanned out as page jobs (tools.workers.scan_jobs)
    and None is returned: the page job that drains the frontier records this job's outcome."""
    from pagetrail.tools.scan.digest import build_digest, to_json
    from pagetrail.tools.scan.scanner import ScanOptions, scan

    key = job_key("scan", item)
    done = await _done(store, "scan", [key])
    if key in done:
        return done[key]
    await _running(store, "scan", key, item)
    if settings.broker_url if fan_out is None else fan_out:
        from pagetrail.tools.workers.scan_jobs import start_scan

        try:
            await start_scan(item, key, settings, store, _sender(settings))
        except PagetrailError as exc:
            await _record(store, [_failed("scan", key, item, exc)])
            return (await _done(store, "scan", [key]))[key]
        return None
    options = ScanOptions(depth=int(item.get("depth", 2)),
                          max_pages=int(item.get("max_pages", 500)),
                          same_site_only=bool(item.get("same_site_only", False)))
    try:
        result = await scan(item["target"], store=store, settings=settings, options=options)
        digest = await asyncio.to_thread(build_digest, store, result)
        record = JobRecord("scan", key, item, "done", to_json(digest))
    except PagetrailError as exc:
        record = _failed("scan", key, item, exc)
    await _record(store, [record])
    return (await _done(store, "scan", [key]))[key]


async def page_job(item: dict[str, Any], settings: Settings, store: Store) -> None:
    """One page of a distributed site scan (tools.workers.scan_jobs.page_job)."""
    from pagetrail.tools.workers.scan_jobs import page_job as crawl_one

    await crawl_one(item, settings, store, _sender(settings))


def _sender(settings: Settings) -> Callable[[str, list[dict[str, Any]]], None]:
    """How a job sends the jobs it fans out: to the workers (the broker is configured)."""
    return lambda kind, items: send_jobs(settings, kind, items)  # type: ignore[arg-type]


async def digest_job(item: dict[str, Any], settings: Settings, store: Store) -> JobRecord:
    """Build one channel's digest (scans of its watched targets; recorded as a DigestRun
    ready to post). The job record holds the run ids."""
    from pagetrail.tools.scan.digest import run_digests

    key = job_key("digest", item)
    done = await _done(store, "digest", [key])
    if key in done:
        return done[key]
    await _running(store, "digest", key, item)
    digests = await run_digests(store, settings, channel=item["channel"],
                                recover=bool(item.get("recover", True)),
                                scanned=lambda target, options, period: shared_site_scan(
                                    target, options, period, settings, store))
    record = JobRecord("digest", key, item, "done",
                       {"runs": [d.run_id for d in digests], "channel": item["channel"]})
    await _record(store, [record])
    return (await _done(store, "digest", [key]))[key]


SHARED_SCAN_POLL = 1.0  # seconds between looks at a shared scan another job is running


async def shared_site_scan(target: str, options: ScanOptions, period: str, settings: Settings,
                           store: Store) -> ScanDigest:
    """The digest of the scan of `target` for `period`, shared by every digest job of that
    period (a site watched by several channels is scanned once, not once per channel): a
    scan job keyed by site, options and period. The first digest job to claim it runs it
    here, in-process (fanning it out would have this job wait, holding a worker, for page
    jobs that may need that very worker); the others wait for its record. A holder that died
    is taken over once the scan's time limit has passed. JobFailed: the scan failed."""
    from pagetrail.store.jobs import claim_job
    from pagetrail.tools.scan.digest import ScanDigest

    item = {"target": target, "depth": options.depth, "max_pages": options.max_pages,
            "same_site_only": options.same_site_only,
            "request": f"watch:{period}:{options.key(target)}"}
    key = job_key("scan", item)
    stale = timedelta(seconds=settings.scan_time_limit + 60)
    while True:
        record = (await _done(store, "scan", [key])).get(key)
        if record is None and await asyncio.to_thread(claim_job, store, "scan", key, item,
                                                      stale_after=stale):
            record = await scan_job(item, settings, store, fan_out=False)
        if record is not None:
            if record.status != "done":
                raise JobFailed(f"the scan of {target} failed: {record.error}")
            return ScanDigest.model_validate(record.result)
        await asyncio.sleep(SHARED_SCAN_POLL)


async def run_job(kind: JobKind, items: Sequence[dict[str, Any]], settings: Settings,
                  store: Store) -> list[JobRecord | None]:
    """Run jobs of one kind (checks together, the others one by one). None for a job whose
    outcome is recorded later (a fanned-out scan) or elsewhere (a page, in its frontier)."""
    if kind == "check":
        return list(await check_jobs(items, settings, store))
    if kind == "page":
        for item in items:
            await page_job(item, settings, store)
        return [None] * len(items)
    single = {"recover": recover_job, "scan": scan_job, "digest": digest_job}[kind]
    return [await single(item, settings, store) for item in items]
