"""Delivering channel digests: post each once per channel and period, resume what broke off.

The engine's side of a digest face (the Slack bot today): which digests are due, which run
to post or finish, and the bookkeeping of each run (store.digests). The face gives a
`DigestPoster` — how a digest, its thread pages, its chart and a failure notice reach a
channel — and never touches the runs itself.

- A run's `posted` turns true as soon as the main message is in the channel (its ts kept in
  `summary["slack"]`), so a later delivery of the same period never posts it again;
- thread pages posted are counted in `summary["slack"]["thread_pages"]`; a run whose thread
  broke off is finished by the next delivery from its stored digest, without a new scan;
- a run that fails (scan or post) is marked "failed" with the error, the channel is told
  (best effort), and the next delivery retries it — posting the digest that was built, if
  any: scanning again would count the same failures twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from pagetrail.store.db import Store
from pagetrail.store.digests import (
    add_run,
    failed_runs,
    is_posted,
    unfinished_runs,
    update_run,
)
from pagetrail.store.watches import watched_channels
from pagetrail.tools.scan.digest import ChannelDigest, period_of, run_digests, stored_digest
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
Runner = Callable[..., Awaitable[list[ChannelDigest]]]


def utc_now() -> datetime:
    return datetime.now(UTC)


class DigestPoster(Protocol):
    """How a face puts a digest in a channel. Each call raises one of `delivery_errors`
    when the message (or file) did not get there."""

    delivery_errors: tuple[type[Exception], ...]

    def thread(self, digest: ChannelDigest) -> Sequence[Any]:
        """The digest's thread pages, in order (opaque to the engine)."""
        ...

    async def post_main(self, digest: ChannelDigest) -> str:
        """Post the digest's main message; its id (the thread's parent)."""
        ...

    async def post_reply(self, channel: str, parent: str, page: Any) -> None: ...

    async def upload_chart(self, channel: str, period: str, png: bytes, alt_text: str) -> str:
        """Share the trend chart; its file id."""
        ...

    async def say_failed(self, channel: str, period: str) -> None: ...


@dataclass
class PostOutcome:
    channel: str
    period: str
    status: str  # "posted" | "partial" | "failed" | "skipped"
    ts: str | None = None
    thread_pages: int = 0
    error: str = ""


async def _update(store: Store, run_id: int, **fields: Any) -> None:
    await asyncio.to_thread(lambda: update_run(store, run_id, **fields))


async def _post_thread(poster: DigestPoster, store: Store, run_id: int,
                       digest: ChannelDigest, ts: str, done: int) -> int:
    pages = poster.thread(digest)
    for number in range(done, len(pages)):
        await poster.post_reply(digest.channel, ts, pages[number])
        done = number + 1
        await _update(store, run_id, summary={"slack": {"ts": ts, "thread_pages": done}})
    return done


async def post_digest(poster: DigestPoster, store: Store,
                      digest: ChannelDigest) -> PostOutcome:
    """Post one channel's digest (main message, chart, thread) and record it on its run."""
    assert digest.run_id is not None, "run_digests records a DigestRun for every digest"
    run_id = digest.run_id
    try:
        ts = await poster.post_main(digest)
    except poster.delivery_errors as exc:
        await _update(store, run_id, status="failed", error=str(exc))
        await _say_failed(poster, digest.channel, digest.period)
        return PostOutcome(digest.channel, digest.period, "failed", error=str(exc))
    await _update(store, run_id, posted=True, status="partial",
                  summary={"slack": {"ts": ts, "thread_pages": 0}})
    await _post_chart(poster, store, run_id, digest.channel, digest.period)
    try:
        pages = await _post_thread(poster, store, run_id, digest, ts, 0)
    except poster.delivery_errors as exc:
        log.warning("digest thread for %s broke off: %s", digest.channel, exc)
        await _update(store, run_id, error=str(exc))
        return PostOutcome(digest.channel, digest.period, "partial", ts, error=str(exc))
    await _update(store, run_id, status="posted", error="")
    return PostOutcome(digest.channel, digest.period, "posted", ts, pages)


async def _post_chart(poster: DigestPoster, store: Store, run_id: int, channel: str,
                      period: str) -> None:
    """The channel's link-health trend (tools.scan.trend, from its stored digests, this one
    included) as a PNG below the digest. A chart that fails is noted on the run, never a
    failed digest."""
    from pagetrail.tools.scan.trend import render_chart, stored_trend

    trend = await asyncio.to_thread(stored_trend, store, channel)
    png = await asyncio.to_thread(render_chart, trend)
    latest = trend.latest()
    alt = (f"Link health over {len(trend.periods)} weeks: "
           + ", ".join(f"{latest.get(name, 0)} {name}" for name in trend.series))
    try:
        file_id = await poster.upload_chart(channel, period, png, alt)
    except poster.delivery_errors as exc:
        log.warning("digest chart for %s not uploaded: %s", channel, exc)
        await _update(store, run_id, summary={"chart": {"error": str(exc)[:500]}})
        return
    await _update(store, run_id, summary={"chart": {"file_id": file_id,
                                                    "series": trend.to_dict()}})


async def _say_failed(poster: DigestPoster, channel: str, period: str) -> None:
    try:
        await poster.say_failed(channel, period)
    except poster.delivery_errors as exc:  # delivery itself is what failed: nothing to add
        log.warning("could not tell %s that its digest failed: %s", channel, exc)


async def _finish_threads(poster: DigestPoster, store: Store) -> list[PostOutcome]:
    outcomes = []
    for run_id, summary in await asyncio.to_thread(unfinished_runs, store):
        slack = summary.get("slack") or {}
        digest = stored_digest(summary)
        if digest is None:
            continue
        try:
            pages = await _post_thread(poster, store, run_id, digest, str(slack["ts"]),
                                       int(slack.get("thread_pages", 0)))
        except poster.delivery_errors as exc:
            log.warning("finishing digest thread %s failed: %s", run_id, exc)
            continue
        await _update(store, run_id, status="posted", error="")
        outcomes.append(PostOutcome(digest.channel, digest.period, "posted",
                                    str(slack["ts"]), pages))
    return outcomes


async def post_due_digests(store: Store, settings: Settings, poster: DigestPoster, *,
                           clock: Clock | None = None, channels: Sequence[str] | None = None,
                           runner: Runner = run_digests, only_failed: bool = False,
                           **run_options: Any) -> list[PostOutcome]:
    """Scan and post the digests of this period that are not posted yet; finish broken-off
    threads. Safe to call as often as you like: nothing is posted twice. With
    `only_failed`, only channels whose run of this period failed are retried."""
    clock = clock or utc_now
    outcomes = await _finish_threads(poster, store)
    period = period_of(clock())
    wanted = list(channels) if channels is not None else \
        await asyncio.to_thread(watched_channels, store)
    due = [c for c in wanted if not await asyncio.to_thread(is_posted, store, c, period)]
    failed = {c: await asyncio.to_thread(failed_runs, store, c, period) for c in due}
    if only_failed:
        due = [c for c in due if failed[c]]
    outcomes += [PostOutcome(c, period, "skipped") for c in wanted if c not in due]
    # A digest that was built but not posted is posted as it was: scanning again would
    # count the same failures twice and lose this week's changes.
    for channel in list(due):
        for run_id, summary in failed[channel]:
            digest = stored_digest(summary)
            if digest is not None:
                digest.run_id = run_id
                outcomes.append(await post_digest(poster, store, digest))
                due.remove(channel)
                break
    if not due:
        return outcomes
    everyone = channels is None and len(due) == len(wanted)
    try:
        if everyone:  # one scan per target, however many channels watch it
            digests = await runner(store, settings, clock=clock, **run_options)
        else:
            digests = []
            for channel in due:
                digests += await runner(store, settings, clock=clock, channel=channel,
                                        **run_options)
    except Exception as exc:  # any failure of the run is each due channel's named failure:
        # recorded on its run, told to it, retried next time; the traceback is logged
        log.exception("digest run failed")
        error = str(exc)
        for channel in due:
            await asyncio.to_thread(lambda c=channel: add_run(
                store, c, period, at=clock(), status="failed", error=error))
            await _say_failed(poster, channel, period)
            outcomes.append(PostOutcome(channel, period, "failed", error=error))
        return outcomes
    for digest in digests:
        if digest.channel not in due:
            await _update(store, digest.run_id or 0, status="skipped")
            continue
        outcomes.append(await post_digest(poster, store, digest))
    return outcomes
