"""Save Page Now 2: ask the Internet Archive to capture a page while it is alive.

The SPN2 API (IA's "Save Page Now 2 Public API Docs"): `POST {spn_url}` with the form
`url=…&if_not_archived_within=…` and the header `Authorization: LOW <access>:<secret>` (the
account's S3-style keys) answers `{"url": …, "job_id": …}`; `GET {spn_url}/status/{job_id}`
answers `{"status": "pending"}` until `"success"` (with `timestamp` and `original_url`) or
`"error"` (with `status_ext`, e.g. `error:user-session-limit`, `error:too-many-daily-captures`).

Limits kept here, all settings: at most `spn_concurrency` captures in progress at once — per
process, and with a store across every process sharing it (store.captures.claim_slot; IA
limits concurrent capture sessions per account) — at most `spn_daily_cap` capture requests
per UTC day counted in the store (so every process and worker shares the count),
a 429 pauses every capture of the process for its Retry-After (else an exponential backoff),
and each capture has a budget of `spn_job_seconds` for its request, waits and polls.

Before asking, a URL captured within `spn_recent_days` is skipped: first pagetrail's own
capture records, then the archive's listing (tools.archive.memento). Without keys nothing is asked;
that is said once per process and every answer says it too.

SPN2 as it answers (docs/archives.md has the table): every outcome's message starts with its
name — the archive's own `status_ext` (`error:too-many-daily-captures`, `error:blocked-url`,
`error:no-captures`, `error:user-session-limit`, …) or pagetrail's (`already_captured`,
`archive_unavailable`, `daily_cap`). "The same snapshot had been made N ago" (a POST answered
without a job) is a success with that capture, read from the archive's listing. A 520/523 (or
another gateway failure) is checked against the listing before it is called a failure: the
capture often succeeded. `error:too-many-daily-captures` stops this process's captures until
the next UTC day (the archive would refuse them all).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from pagetrail.store.captures import (
    claim_slot,
    finish_capture,
    recent_capture,
    requested_since,
    start_capture,
)
from pagetrail.store.db import STORE_ERRORS, Store
from pagetrail.tools.archive.memento import ArchiveEndpoint, list_mementos, parse_timestamp
from pagetrail.tools.errors import (
    ArchiveUnavailable,
    BodyTooLarge,
    FetchFailed,
    NoMemento,
    PagetrailError,
    RateLimited,
    RefusedAddress,
)
from pagetrail.tools.models import CaptureResult
from pagetrail.tools.net.fetch import Fetcher, Response, retry_after_seconds
from pagetrail.tools.net.urls import validate_url
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

NO_KEYS = ("no Internet Archive keys (set PAGETRAIL_IA_ACCESS_KEY and PAGETRAIL_IA_SECRET_KEY): "
           "links are not sent to Save Page Now")
MAX_BACKOFF = 300.0
SPN_ANSWER_BYTES = 256 * 1024
# status_ext values that mean "too many at once, try later" rather than "this URL failed".
RETRY_LATER = frozenset({"error:user-session-limit", "error:too-many-requests",
                         "error:capture-location-error", "error:no-browsers-available"})
# status_ext values that are the archive refusing, not the capture failing.
REFUSALS = {
    "error:too-many-daily-captures": "the archive's daily limit of captures is reached "
                                     "(this URL's, or the account's): try again tomorrow",
    "error:blocked-url": "the archive does not capture this URL (its owner asked it not to)",
    "error:blocked": "the site blocked the archive's crawler",
    "error:blocked-client-ip": "the archive refuses captures from this address",
    "error:no-access": "the page needs a login the archive does not have",
    "error:unauthorized": "the page answered 401 to the archive's crawler",
}
DAILY_LIMIT = "error:too-many-daily-captures"
# Gateway answers after which the capture may well have been made: ask the listing.
CHECK_LISTING = frozenset({502, 504, 520, 521, 522, 523, 524})
_SAME_SNAPSHOT = "same snapshot"
_said_no_keys = False

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


# --- request building (pure) -------------------------------------------------------------

def credentials(settings: Settings) -> tuple[str, str] | None:
    access = settings.ia_access_key.get_secret_value() if settings.ia_access_key else ""
    secret = settings.ia_secret_key.get_secret_value() if settings.ia_secret_key else ""
    return (access, secret) if access and secret else None


def auth_headers(settings: Settings) -> dict[str, str]:
    """SPN2's S3-key authentication; empty without keys. Never logged."""
    keys = credentials(settings)
    if keys is None:
        return {}
    return {"Authorization": f"LOW {keys[0]}:{keys[1]}", "Accept": "application/json"}


def save_form(url: str, settings: Settings, *, capture_all: bool = False) -> dict[str, str]:
    """The POST form for one capture: only the URL and options, nothing about the user."""
    form = {"url": url, "skip_first_archive": "1"}
    days = settings.spn_recent_days
    if days > 0:
        # SPN2 takes a duration ("30d", "5h"): it skips the capture itself when it has one.
        form["if_not_archived_within"] = f"{max(1, round(days * 24))}h"
    if capture_all:
        form["capture_all"] = "1"  # also capture 4xx/5xx answers
    return form


def status_url(settings: Settings, job_id: str) -> str:
    return f"{settings.spn_url.rstrip('/')}/status/{quote(job_id, safe='')}"


def memento_for(settings: Settings, timestamp: str, original_url: str) -> str:
    """The capture's replay URL in the first configured archive (the one SPN writes to)."""
    prefix = next((a for a in settings.archives if a.strip()), "https://web.archive.org/web")
    return ArchiveEndpoint.of(prefix).memento_url(timestamp, original_url)


def parse_answer(response: Response) -> dict[str, Any]:
    """The JSON object SPN answered; an error-shaped dict when it answered something else."""
    try:
        payload = json.loads(response.content.decode("utf-8", "replace"))
    except ValueError:
        return {"status": "error", "status_ext": f"http:{response.status}",
                "message": f"Save Page Now answered HTTP {response.status} (not JSON)"}
    if not isinstance(payload, dict):
        return {"status": "error", "status_ext": "bad-answer",
                "message": "Save Page Now answered JSON that is not an object"}
    return payload


def backoff_seconds(response: Response, attempt: int) -> float:
    """Retry-After when given (seconds or HTTP date), else 5 s doubling per attempt."""
    wait = retry_after_seconds(response.headers.get("retry-after"))
    if wait is None:
        wait = 5.0 * (2 ** attempt)
    return min(MAX_BACKOFF, max(0.0, wait))


_OUTCOME_NAME = re.compile(r"^(error:[a-z0-9-]+|[a-z_]+)(?=: |$)")


def outcome_name(result: CaptureResult) -> str | None:
    """The named outcome a capture's message starts with (`error:too-many-daily-captures`,
    `already_captured`, `archive_unavailable`, `daily_cap`, …); None for a plain one."""
    match = _OUTCOME_NAME.match(result.message)
    name = match.group(1) if match else None
    return None if name in (None, "captured", result.status) else name


def say_no_keys_once() -> None:
    global _said_no_keys
    if not _said_no_keys:
        _said_no_keys = True
        log.warning("Save Page Now: %s", NO_KEYS)


# --- the client ------------------------------------------------------------------------------

class SavePageNow:
    """One process's SPN2 client: shares the concurrency slots and the 429 pause between
    every capture it makes. Use with a Fetcher that is open."""

    def __init__(self, settings: Settings, fetcher: Fetcher, store: Store | None = None, *,
                 clock: Clock = utc_now) -> None:
        self.settings = settings
        self.fetcher = fetcher
        self.store = store
        self.clock = clock
        self._slots = asyncio.Semaphore(max(1, settings.spn_concurrency))
        self._paused_until = 0.0  # monotonic time before which no request is sent (429)
        self._daily_limit_until: datetime | None = None  # error:too-many-daily-captures
        self._daily_limit_words = ""
        self.requests = 0

    @property
    def has_keys(self) -> bool:
        return credentials(self.settings) is not None

    async def capture(self, url: str, *, source: str = "cli") -> CaptureResult:
        """Ask for a capture of `url` unless it was captured recently. Raises InvalidURL."""
        url = validate_url(url)
        if not self.has_keys:
            say_no_keys_once()
            return CaptureResult(url=url, status="no_keys", message=NO_KEYS)
        recent = await self._recent(url)
        if recent is not None:
            return recent
        if self._daily_limit_until is not None and self.clock() < self._daily_limit_until:
            message = f"{DAILY_LIMIT}: {self._daily_limit_words or REFUSALS[DAILY_LIMIT]}"
            await self._record(url, source, "refused", message=message)
            return CaptureResult(url=url, status="refused", message=message)
        if self.store is not None and self.settings.spn_daily_cap >= 0:
            midnight = self.clock().replace(hour=0, minute=0, second=0, microsecond=0)
            used = await asyncio.to_thread(requested_since, self.store, midnight)
            if used >= self.settings.spn_daily_cap:
                message = (f"daily_cap: daily cap of {self.settings.spn_daily_cap} capture "
                           "requests reached (PAGETRAIL_SPN_DAILY_CAP); try again tomorrow")
                await self._record(url, source, "refused", message=message)
                return CaptureResult(url=url, status="refused", message=message)
        capture_id = await self._record(url, source, "queued")
        try:
            async with self._slots:
                # The budget starts with the slot: waiting for one is not the capture's time.
                deadline = time.monotonic() + self.settings.spn_job_seconds
                if capture_id is not None and not await self._claim(capture_id, deadline):
                    result = CaptureResult(
                        url=url, status="refused",
                        message=f"{self.settings.spn_concurrency} captures stayed in progress "
                                "for this account (other pagetrail processes) for longer than "
                                "this capture's budget")
                else:
                    result = await self._run(url, deadline)
        except asyncio.CancelledError:
            # A stopped capture must not stay "pending": that would count as archived.
            if self.store is not None and capture_id is not None:
                finish_capture(self.store, capture_id, status="error",
                               message="stopped before the archive answered")
            raise
        if self.store is not None and capture_id is not None:
            await asyncio.to_thread(
                finish_capture, self.store, capture_id, status=result.status,
                job_id=result.job_id, memento_url=result.memento_url,
                captured_at=result.captured_at, message=result.message)
        return result

    async def _claim(self, capture_id: int, deadline: float) -> bool:
        """Wait for a store-wide slot (captures in flight across processes), within budget."""
        assert self.store is not None
        window = timedelta(seconds=self.settings.spn_job_seconds)
        while True:
            now = self.clock()
            if await asyncio.to_thread(claim_slot, self.store, capture_id,
                                       limit=max(1, self.settings.spn_concurrency),
                                       since=now - window, at=now):
                return True
            wait = max(0.05, min(1.0, self.settings.spn_poll_interval))
            if time.monotonic() + wait > deadline:
                return False
            await asyncio.sleep(wait)

    async def _record(self, url: str, source: str, status: str,
                      message: str = "") -> int | None:
        if self.store is None:
            return None
        return await asyncio.to_thread(start_capture, self.store, url, source=source,
                                       at=self.clock(), status=status, message=message)

    async def _recent(self, url: str) -> CaptureResult | None:
        """A capture within spn_recent_days: ours (store), else the archive's (CDX/TimeMap)."""
        days = self.settings.spn_recent_days
        if days <= 0:
            return None
        since = self.clock() - timedelta(days=days)
        if self.store is not None:
            ours = await asyncio.to_thread(recent_capture, self.store, url, since)
            if ours is not None:
                return CaptureResult(url=url, status="skipped", memento_url=ours.memento_url,
                                     captured_at=ours.captured_at, job_id=ours.job_id,
                                     message=f"already asked for at {ours.requested_at:%Y-%m-%d}"
                                             f" ({ours.status})")
        try:
            captures = await list_mementos(url, self.fetcher, self.settings)
        except (ArchiveUnavailable, NoMemento) as exc:  # NoMemento: ArchiveExcluded
            log.info("Save Page Now: archive listing of %s failed (%s); asking anyway", url, exc)
            return None
        fresh = [c for c in captures if c.datetime >= since and (c.status in (None, 200))]
        if not fresh:
            return None
        newest = fresh[-1]
        result = CaptureResult(url=url, status="skipped", memento_url=newest.memento_url,
                               captured_at=newest.datetime,
                               message=f"archived {newest.datetime:%Y-%m-%d %H:%M} UTC, "
                                       f"within {days:g} days")
        if self.store is not None:
            # Remembered as of the capture's own time, so that it covers the URL exactly as
            # long as the capture is recent: until then no scan asks IA or its index again.
            capture_id = await asyncio.to_thread(
                start_capture, self.store, url, source="archive", at=newest.datetime,
                status="skipped", message=result.message)
            await asyncio.to_thread(finish_capture, self.store, capture_id, status="skipped",
                                    memento_url=result.memento_url,
                                    captured_at=result.captured_at, message=result.message)
        return result

    async def _pause(self, deadline: float) -> bool:
        """Wait out a 429 pause; False when the budget ends first."""
        wait = self._paused_until - time.monotonic()
        if wait <= 0:
            return True
        if time.monotonic() + wait > deadline:
            return False
        await asyncio.sleep(wait)
        return True

    async def _run(self, url: str, deadline: float) -> CaptureResult:
        started = self.clock()
        result = await self._ask(url, deadline)
        if result.status == "error" and result.message.startswith("archive_unavailable"):
            # A 520/523 often comes after the capture was made: the listing says.
            made = await self._captured_since(url, started)
            if made is not None:
                return made.model_copy(update={
                    "job_id": result.job_id,
                    "message": f"captured (the archive's listing has it although Save Page "
                               f"Now answered: {result.message})"})
        return result

    async def _captured_since(self, url: str, since: datetime) -> CaptureResult | None:
        """The archive's newest capture of `url` made since `since` (minus a minute of clock
        skew), as a success; None when the listing has none or cannot be read."""
        try:
            captures = await list_mementos(url, self.fetcher, self.settings)
        except PagetrailError as exc:
            log.info("Save Page Now: listing of %s unreadable (%s)", url, exc)
            return None
        fresh = [c for c in captures if c.datetime >= since - timedelta(minutes=1)
                 and c.status in (None, 200)]
        if not fresh:
            return None
        newest = fresh[-1]
        return CaptureResult(url=url, status="success", memento_url=newest.memento_url,
                             captured_at=newest.datetime, message="captured")

    async def _already_captured(self, url: str, words: str) -> CaptureResult:
        """SPN answered "The same snapshot had been made N ago": the capture it means is the
        newest in the archive's listing — a success with that capture."""
        try:
            captures = await list_mementos(url, self.fetcher, self.settings)
        except PagetrailError as exc:
            log.info("Save Page Now: listing of %s unreadable (%s)", url, exc)
            captures = []
        good = [c for c in captures if c.status in (None, 200)]
        message = f"already_captured: {words[:300]}"
        if not good:
            return CaptureResult(url=url, status="skipped", message=message)
        newest = good[-1]
        return CaptureResult(url=url, status="success", memento_url=newest.memento_url,
                             captured_at=newest.datetime, message=message)

    def _refused(self, url: str, payload: dict[str, Any], job_id: str) -> CaptureResult | None:
        """The archive refusing (daily limit, blocked URL, …): `refused`, named; None when
        the answer is not a refusal."""
        reason = str(payload.get("status_ext") or "")
        if reason not in REFUSALS:
            return None
        words = str(payload.get("message") or "")[:300] or REFUSALS[reason]
        if reason == DAILY_LIMIT:
            midnight = self.clock().replace(hour=0, minute=0, second=0, microsecond=0)
            self._daily_limit_until = midnight + timedelta(days=1)
            self._daily_limit_words = words
        return CaptureResult(url=url, status="refused", job_id=job_id,
                             message=f"{reason}: {words}")

    async def _ask(self, url: str, deadline: float) -> CaptureResult:
        headers = auth_headers(self.settings)
        attempt = 0
        while True:
            if not await self._pause(deadline):
                return CaptureResult(url=url, status="refused",
                                     message="Save Page Now asked us to slow down (429) for "
                                             "longer than this capture's budget")
            try:
                self.requests += 1
                response = await self.fetcher.post_form(
                    self.settings.spn_url, save_form(url, self.settings), headers=headers,
                    max_bytes=SPN_ANSWER_BYTES)
            except (FetchFailed, RateLimited, RefusedAddress, BodyTooLarge) as exc:
                return CaptureResult(url=url, status="error",
                                     message=f"Save Page Now unreachable: {exc}")
            if response.status == 429 or (response.status == 200 and parse_answer(response)
                                          .get("status_ext") in RETRY_LATER):
                wait = backoff_seconds(response, attempt)
                attempt += 1
                self._paused_until = max(self._paused_until, time.monotonic() + wait)
                log.info("Save Page Now: slow down (%s); pausing %.0f s", response.status, wait)
                continue
            payload = parse_answer(response)
            if response.status in (401, 403) and payload.get("status_ext") not in (
                    DAILY_LIMIT, "error:blocked-url", "error:blocked-client-ip"):
                return CaptureResult(url=url, status="error",
                                     message="Save Page Now refused the keys "
                                             f"(HTTP {response.status}): check them")
            job_id = str(payload.get("job_id") or "")
            words = str(payload.get("message") or "")
            if not job_id and _SAME_SNAPSHOT in words.lower():
                return await self._already_captured(url, words)
            refused = self._refused(url, payload, job_id)
            if refused is not None:
                return refused
            if response.status in CHECK_LISTING or response.status >= 500:
                return CaptureResult(url=url, status="error", job_id=job_id,
                                     message=f"archive_unavailable: Save Page Now answered "
                                             f"HTTP {response.status}")
            if response.status != 200 or not job_id:
                return self._failed(url, payload, job_id, f"HTTP {response.status}")
            return await self._poll(url, job_id, deadline)

    async def _poll(self, url: str, job_id: str, deadline: float) -> CaptureResult:
        headers = auth_headers(self.settings)
        interval = max(0.05, self.settings.spn_poll_interval)
        attempt = 0
        while True:
            try:
                self.requests += 1
                response = await self.fetcher.get(status_url(self.settings, job_id),
                                                  headers=headers, endpoint=True, retry=False,
                                                  max_bytes=SPN_ANSWER_BYTES)
            except (FetchFailed, RateLimited, BodyTooLarge) as exc:
                log.info("Save Page Now: status of %s failed: %s", job_id, exc)
                response = None
            wait = interval
            if response is not None and response.status == 429:
                wait = backoff_seconds(response, attempt)
                attempt += 1
            elif response is not None and response.status == 200:
                payload = parse_answer(response)
                status = payload.get("status")
                if status == "success":
                    return self._succeeded(url, job_id, payload)
                if status == "error":
                    refused = self._refused(url, payload, job_id)
                    if refused is not None:
                        return refused
                    return self._failed(url, payload, job_id, "error")
            if time.monotonic() + wait > deadline:
                return CaptureResult(url=url, status="pending", job_id=job_id,
                                     message="capture still in progress when the budget "
                                             f"({self.settings.spn_job_seconds:g} s) ran out")
            await asyncio.sleep(wait)

    def _succeeded(self, url: str, job_id: str, payload: dict[str, Any]) -> CaptureResult:
        timestamp = str(payload.get("timestamp") or "")
        original = str(payload.get("original_url") or url)
        when = parse_timestamp(timestamp) if timestamp else None
        memento = memento_for(self.settings, timestamp, original) if when else ""
        words = str(payload.get("message") or "")[:300]
        message = f"already_captured: {words}" if _SAME_SNAPSHOT in words.lower() else "captured"
        return CaptureResult(url=url, status="success", job_id=job_id, memento_url=memento,
                             captured_at=when, message=message)

    @staticmethod
    def _failed(url: str, payload: dict[str, Any], job_id: str, fallback: str) -> CaptureResult:
        reason = str(payload.get("status_ext") or fallback)
        message = str(payload.get("message") or "")[:300]
        return CaptureResult(url=url, status="error", job_id=job_id,
                             message=f"{reason}: {message}" if message else reason)


# --- the scan's queue -----------------------------------------------------------------------

class CaptureQueue:
    """Captures a scan asks for: `offer()` never waits (a full or closed queue drops the URL
    and counts it), workers run beside the scan's checks, `close()` waits for the rest
    within the budget of one capture and cancels what is left."""

    def __init__(self, spn: SavePageNow, *, limit: int, source: str = "scan") -> None:
        self.spn = spn
        self.limit = limit
        self.source = source
        self.offered = 0
        self.dropped = 0
        self.results: list[CaptureResult] = []
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._seen: set[str] = set()
        self._dropped: set[str] = set()
        self._workers: list[asyncio.Task[None]] = []
        self._closed = False

    def start(self) -> None:
        self._workers = [asyncio.create_task(self._work())
                         for _ in range(max(1, self.spn.settings.spn_concurrency))]

    def offer(self, url: str) -> bool:
        if url in self._seen:
            return False
        if self._closed or self.offered >= self.limit:
            if url not in self._dropped:  # counted once, however often it is offered
                self._dropped.add(url)
                self.dropped += 1
            return False
        self._seen.add(url)
        self.offered += 1
        self._queue.put_nowait(url)
        return True

    async def _work(self) -> None:
        while True:
            url = await self._queue.get()
            try:
                self.results.append(await self.spn.capture(url, source=self.source))
            except (PagetrailError, *STORE_ERRORS, OSError) as exc:  # one URL's failure
                log.warning("Save Page Now: capture of %s failed: %s", url, exc)
                self.results.append(CaptureResult(url=url, status="error",
                                                  message=f"{type(exc).__name__}: {exc}"))
            finally:
                self._queue.task_done()

    async def close(self, timeout: float | None = None) -> dict[str, int]:
        """Wait for queued captures (at most `timeout`, default one capture's budget), then
        stop; returns counts per status (plus `dropped` and `unfinished`), and per named
        outcome (`error:too-many-daily-captures`, `already_captured`, …)."""
        self._closed = True
        budget = self.spn.settings.spn_job_seconds if timeout is None else timeout
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), budget)
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.status] = counts.get(result.status, 0) + 1
            name = outcome_name(result)  # and each named outcome, beside its status
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
        unfinished = self.offered - len(self.results)
        if unfinished:
            counts["unfinished"] = unfinished
        if self.dropped:
            counts["dropped"] = self.dropped
        return counts
