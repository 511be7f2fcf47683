"""The unit jobs: check URLs, recover one link, scan one target, build one channel's digest.

Each is a function of (input, settings, store) that reads and writes only through store/ and
ends by recording its outcome in the store's job table (store.jobs), keyed by its input.
They are idempotent: a job whose (kind, key) is already recorded returns that record without
doing the work again, and recording never overwrites (first writer wins), so a redelivered
job — a worker killed after writing, before acknowledging — leaves the store as one run does.
The in-process dispatcher and the Celery tasks (tools.celery_app) call these same functions.

Inputs are plain JSON objects (they travel in broker messages):
- check:   {"url": ..., "batch": ...}         key: hash of batch and URL (a re-check is a
                                                new batch; a redelivery is not)
- recover: {"url", "source_url", "anchor", "context", "date"}   key: hash of the input, so a
           rerun of a batch file skips the links already answered
- scan:    {"target", "request", "depth", "max_pages", "same_site_only"}   key: request id
- digest:  {"channel", "request", "recover"}    key: request id
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pagetrail.store.db import Store
from pagetrail.store.jobs import JobRecord, load_jobs, record_jobs
from pagetrail.tools.errors import BadJobInput, PagetrailError
from pagetrail.tools.settings import Settings

JobKind = Literal["check", "recover", "scan", "digest"]
KINDS: tuple[JobKind, ...] = ("check", "recover", "scan", "digest")
RECOVER_FIELDS = ("url", "source_url", "anchor", "context", "date")
MAX_CANDIDATES = 10


def job_key(kind: JobKind, item: dict[str, Any]) -> str:
    """The natural key of a job: what makes two deliveries the same job."""
    if kind == "check":
        identity: dict[str, Any] = {"batch": item.get("batch", ""), "url": item["url"]}
    elif kind == "recover":
        identity = {name: item.get(name) or None for name in RECOVER_FIELDS}
    else:
        identity = {"request": item["request"]}
    payload = json.dumps({"kind": kind, **identity}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _failed(kind: JobKind, key: str, item: dict[str, Any], exc: PagetrailError) -> JobRecord:
    return JobRecord(kind, key, item, "failed", {}, f"{exc.code}: {exc}")


async def _done(store: Store, kind: JobKind, keys: Sequence[str]) -> dict[str, JobRecord]:
    return await asyncio.to_thread(load_jobs, store, kind, keys)


async def _record(store: Store, records: Sequence[JobRecord]) -> None:
    await asyncio.to_thread(record_jobs, store, records)


# --- check ----------------------------------------------------------------------------------

async def check_jobs(items: Sequence[dict[str, Any]], settings: Settings,
                     store: Store) -> list[JobRecord]:
    """Check URLs (one job each), sharing one client; politely (the per-host rate applies:
    these are bulk checks). Returns each job's stored record, in order.

    The client is the scanner's lean one (tools.bulkfetch: the fetch layer's guarantees,
    the Fetcher for proxied hosts and faults worth a retry): httpx cost most of a check's
    CPU, which bounds how many checks a machine's workers run."""
    from pagetrail.tools.bulkfetch import BulkFetcher
    from pagetrail.tools.check import check_link
    from pagetrail.tools.fetch import Fetcher

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
    from pagetrail.tools.api import recover_link

    key = job_key("recover", item)
    done = await _done(store, "recover", [key])
    if key in done:
        return done[key]
    link_date = None
    if item.get("date"):
        link_date = datetime.fromisoformat(item["date"].replace("Z", "+00:00"))
    try:
        # use_cache: a redelivery after the answer was stored (killed before recording the
        # job) reads that answer back instead of storing a second one.
        recovery = await recover_link(
            item["url"], source_url=item.get("source_url"), anchor=item.get("anchor"),
            context=item.get("context"), link_date=link_date, max_candidates=MAX_CANDIDATES,
            settings=settings, store=store)
        record = JobRecord("recover", key, item, "done", recovery.model_dump(mode="json"))
    except PagetrailError as exc:
        record = _failed("recover", key, item, exc)
    await _record(store, [record])
    return (await _done(store, "recover", [key]))[key]


# --- scan and digest (long work the faces enqueue) -----------------------------------------

async def scan_job(item: dict[str, Any], settings: Settings, store: Store) -> JobRecord:
    """Scan one target and build its digest. The scanner resumes an unfinished scan of the
    same target and options, so a redelivered scan continues instead of starting over."""
    from pagetrail.tools.digest import build_digest, to_json
    from pagetrail.tools.scanner import ScanOptions, scan

    key = job_key("scan", item)
    done = await _done(store, "scan", [key])
    if key in done:
        return done[key]
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


async def digest_job(item: dict[str, Any], settings: Settings, store: Store) -> JobRecord:
    """Build one channel's digest (scans of its watched targets; recorded as a DigestRun
    ready to post). The job record holds the run ids."""
    from pagetrail.tools.digest import run_digests

    key = job_key("digest", item)
    done = await _done(store, "digest", [key])
    if key in done:
        return done[key]
    digests = await run_digests(store, settings, channel=item["channel"],
                                recover=bool(item.get("recover", True)))
    record = JobRecord("digest", key, item, "done",
                       {"runs": [d.run_id for d in digests], "channel": item["channel"]})
    await _record(store, [record])
    return (await _done(store, "digest", [key]))[key]


async def run_job(kind: JobKind, items: Sequence[dict[str, Any]], settings: Settings,
                  store: Store) -> list[JobRecord]:
    """Run jobs of one kind (checks together, the others one by one)."""
    if kind == "check":
        return await check_jobs(items, settings, store)
    single = {"recover": recover_job, "scan": scan_job, "digest": digest_job}[kind]
    return [await single(item, settings, store) for item in items]
