"""Posting the weekly link-rot digest to Slack, once per channel and period.

`post_due_digests` runs the scanner for the channels whose digest of this period (ISO week)
is not posted yet (tools.digest.run_digests), posts one message per channel (counts, the top
dead links with their best suggestion and a Use-this button) and the full list as a thread,
paginated. Bookkeeping lives in store.models.DigestRun:

- `posted` turns true as soon as the main message is in the channel (its ts is kept in
  `summary["slack"]`), so a later run of the same period never posts it again;
- thread pages posted are counted in `summary["slack"]["thread_pages"]`; a run whose thread
  broke off is finished by the next call from its stored digest, without a new scan;
- a run that fails (scan or post) is marked "failed" with the error, says so in the channel
  (best effort), and the next call retries it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from pagetrail.bot import blocks
from pagetrail.bot.blocks import DeadLinkView, DigestView, DriftView
from pagetrail.bot.posting import DELIVERY_ERRORS, SlackPoster
from pagetrail.bot.watches import watched_channels
from pagetrail.store.db import Store
from pagetrail.store.models import DigestRun
from pagetrail.tools.digest import ChannelDigest, DigestLink, period_of, run_digests
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
Runner = Callable[..., Awaitable[list[ChannelDigest]]]


def utc_now() -> datetime:
    return datetime.now(UTC)


# ------------------------------------------------------------------------- view (pure)


def _dead_view(link: DigestLink) -> DeadLinkView:
    recovery = link.recovery
    suggestion = recovery.url if recovery is not None and recovery.url else None
    return DeadLinkView(
        url=link.url, verdict=link.verdict, confirmed=link.state == "confirmed",
        pages=[source.page_url for source in link.found_on],
        suggestion=suggestion,
        confidence=float(recovery.confidence or 0.0) if recovery is not None else 0.0,
        kind=(recovery.kind or "") if recovery is not None else "",
    )


def digest_view(digest: ChannelDigest) -> DigestView:
    """The channel's digest as the formatter's view: counts summed over its watches, newly
    confirmed dead links first (they carry suggestions), then the newly failing ones."""
    view = DigestView(channel=digest.channel, period=digest.period,
                      targets=[s.target for s in digest.scans])
    seen: set[str] = set()
    for scan in digest.scans:
        view.checked += scan.urls_checked
        # Counts from the scan's states: the listed sections are clipped, and they hold every
        # link in the state (a link suspect for two scans is listed in both).
        counts = scan.counts
        view.suspect += counts["suspect"]
        view.confirmed_dead += counts["confirmed"]
        view.fixed += counts["fixed"]
        view.flapping += counts["flapping"]
        if scan.error:
            view.errors.append(f"{scan.target}: {scan.error}")
    for group in ("newly_confirmed", "suspect"):
        for scan in digest.scans:
            for link in getattr(scan, group):
                if link.url not in seen:
                    seen.add(link.url)
                    view.dead.append(_dead_view(link))
    for scan in digest.scans:
        for item in scan.drifted:
            if item.url not in seen:
                seen.add(item.url)
                view.drifted.append(DriftView(
                    url=item.url, similarity=item.similarity,
                    archived_title=item.archived_title, live_title=item.live_title,
                    memento_url=item.memento_url,
                    memento_date=f"{item.memento_datetime:%Y-%m-%d}"))
    return view


# ------------------------------------------------------------------------- bookkeeping


def _posted(store: Store, channel: str, period: str) -> bool:
    with store.session() as s:
        return s.scalar(select(DigestRun.id).where(
            DigestRun.channel == channel, DigestRun.period == period,
            DigestRun.posted.is_(True)).limit(1)) is not None


def _failed_runs(store: Store, channel: str, period: str) -> list[tuple[int, dict[str, Any]]]:
    """This period's failed runs of `channel`, newest first: (id, summary)."""
    with store.session() as s:
        rows = s.scalars(select(DigestRun).where(
            DigestRun.channel == channel, DigestRun.period == period,
            DigestRun.status == "failed").order_by(DigestRun.id.desc())).all()
        return [(r.id, dict(r.summary or {})) for r in rows]


def stored_digest(summary: dict[str, Any]) -> ChannelDigest | None:
    """The digest a run recorded (run_digests stores it as the run's summary), if any."""
    if "scans" not in summary:
        return None
    try:
        return ChannelDigest.model_validate({k: v for k, v in summary.items() if k != "slack"})
    except ValueError:
        return None


def _unfinished(store: Store) -> list[tuple[int, dict[str, Any]]]:
    """Posted runs whose thread broke off: (id, summary)."""
    with store.session() as s:
        rows = s.scalars(select(DigestRun).where(DigestRun.posted.is_(True),
                                                 DigestRun.status == "partial")).all()
        return [(r.id, dict(r.summary)) for r in rows]


def _update(store: Store, run_id: int, **fields: Any) -> None:
    with store.session() as s:
        run = s.get(DigestRun, run_id)
        if run is None:
            return
        slack = fields.pop("slack", None)
        if slack is not None:
            run.summary = {**(run.summary or {}), "slack": slack}
        for name, value in fields.items():
            setattr(run, name, value)


def _record_failure(store: Store, channel: str, period: str, error: str, at: datetime) -> int:
    with store.session() as s:
        run = DigestRun(channel=channel, period=period, started_at=at, status="failed",
                        error=error[:2000])
        s.add(run)
        s.flush()
        return run.id


# ------------------------------------------------------------------------- posting


@dataclass
class PostOutcome:
    channel: str
    period: str
    status: str  # "posted" | "partial" | "failed" | "skipped"
    ts: str | None = None
    thread_pages: int = 0
    error: str = ""


async def _post_thread(poster: SlackPoster, store: Store, run_id: int, channel: str,
                       view: DigestView, ts: str, done: int) -> int:
    pages = blocks.digest_thread_pages(view)
    for number in range(done, len(pages)):
        await poster.post(channel, pages[number], thread_ts=ts)
        done = number + 1
        await asyncio.to_thread(_update, store, run_id, slack={"ts": ts, "thread_pages": done})
    return done


async def post_digest(poster: SlackPoster, store: Store, digest: ChannelDigest) -> PostOutcome:
    """Post one channel's digest (main message + thread) and record it on its DigestRun."""
    assert digest.run_id is not None, "run_digests records a DigestRun for every digest"
    view = digest_view(digest)
    run_id = digest.run_id
    try:
        ts = await poster.post(digest.channel, blocks.digest_blocks(view))
    except DELIVERY_ERRORS as exc:
        await asyncio.to_thread(_update, store, run_id, status="failed", error=str(exc)[:2000])
        await _say_failed(poster, digest.channel, digest.period)
        return PostOutcome(digest.channel, digest.period, "failed", error=str(exc))
    await asyncio.to_thread(_update, store, run_id, posted=True, status="partial",
                            slack={"ts": ts, "thread_pages": 0})
    await _post_chart(poster, store, run_id, digest.channel, digest.period)
    try:
        pages = await _post_thread(poster, store, run_id, digest.channel, view, ts, 0)
    except DELIVERY_ERRORS as exc:
        log.warning("digest thread for %s broke off: %s", digest.channel, exc)
        await asyncio.to_thread(_update, store, run_id, error=str(exc)[:2000])
        return PostOutcome(digest.channel, digest.period, "partial", ts, error=str(exc))
    await asyncio.to_thread(_update, store, run_id, status="posted", error="")
    return PostOutcome(digest.channel, digest.period, "posted", ts, pages)


async def _post_chart(poster: SlackPoster, store: Store, run_id: int, channel: str,
                      period: str) -> None:
    """The channel's link-health trend (tools.trend, from its stored digests, this one
    included) as a PNG below the digest. A chart that fails is noted on the run, never a
    failed digest."""
    from aiohttp import ClientError

    from pagetrail.bot.posting import SlackPostFailed
    from pagetrail.tools.trend import render_chart, stored_trend

    trend = await asyncio.to_thread(stored_trend, store, channel)
    png = await asyncio.to_thread(render_chart, trend)
    latest = trend.latest()
    alt = (f"Link health over {len(trend.periods)} weeks: "
           + ", ".join(f"{latest.get(name, 0)} {name}" for name in trend.series))
    try:
        file_id = await poster.upload(channel, png, filename=f"link-health-{period}.png",
                                      title=f"Link health, {period}", alt_text=alt)
    except (SlackPostFailed, ClientError, OSError) as exc:
        log.warning("digest chart for %s not uploaded: %s", channel, exc)
        await asyncio.to_thread(_note_chart, store, run_id, {"error": str(exc)[:500]})
        return
    await asyncio.to_thread(_note_chart, store, run_id,
                            {"file_id": file_id, "series": trend.to_dict()})


def _note_chart(store: Store, run_id: int, chart: dict[str, Any]) -> None:
    with store.session() as s:
        run = s.get(DigestRun, run_id)
        if run is not None:
            run.summary = {**(run.summary or {}), "chart": chart}


async def _say_failed(poster: SlackPoster, channel: str, period: str) -> None:
    notice = blocks.error_blocks(f"The link-rot digest for {period} could not be completed; "
                                 "it will be retried at the next run.")
    try:
        await poster.post(channel, notice)
    except DELIVERY_ERRORS as exc:  # Slack itself is what failed: nothing more to say
        log.warning("could not tell %s that its digest failed: %s", channel, exc)


async def _finish_threads(poster: SlackPoster, store: Store) -> list[PostOutcome]:
    outcomes = []
    for run_id, summary in await asyncio.to_thread(_unfinished, store):
        slack = summary.get("slack") or {}
        digest = stored_digest(summary)
        if digest is None:
            continue
        try:
            pages = await _post_thread(poster, store, run_id, digest.channel,
                                       digest_view(digest), str(slack["ts"]),
                                       int(slack.get("thread_pages", 0)))
        except DELIVERY_ERRORS as exc:
            log.warning("finishing digest thread %s failed: %s", run_id, exc)
            continue
        await asyncio.to_thread(_update, store, run_id, status="posted", error="")
        outcomes.append(PostOutcome(digest.channel, digest.period, "posted",
                                    str(slack["ts"]), pages))
    return outcomes


async def post_due_digests(store: Store, settings: Settings, poster: SlackPoster, *,
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
    due = [c for c in wanted if not await asyncio.to_thread(_posted, store, c, period)]
    failed = {c: await asyncio.to_thread(_failed_runs, store, c, period) for c in due}
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
    except Exception as exc:
        log.exception("digest run failed")
        for channel in due:
            await asyncio.to_thread(_record_failure, store, channel, period, str(exc), clock())
            await _say_failed(poster, channel, period)
            outcomes.append(PostOutcome(channel, period, "failed", error=str(exc)))
        return outcomes
    for digest in digests:
        if digest.channel not in due:
            await asyncio.to_thread(_update, store, digest.run_id or 0, status="skipped")
            continue
        outcomes.append(await post_digest(poster, store, digest))
    return outcomes


def channel_digest_runner(store: Store, settings: Settings, poster: SlackPoster,
                          ) -> Callable[[str], Awaitable[None]]:
    """`/linkrot digest now` for one channel."""

    async def run(channel: str) -> None:
        from pagetrail.tools.dispatch import configured_digest_runner

        # With a broker the digest is built by a worker (a digest job); posted from here.
        outcomes = await post_due_digests(store, settings, poster, channels=[channel],
                                          runner=configured_digest_runner(settings, store))
        if any(o.status == "skipped" and o.channel == channel for o in outcomes):
            period = period_of(utc_now())
            await poster.post(channel, blocks.message([blocks.section(
                f"This channel's digest for {period} is already posted.")], "digest posted"))

    return run


async def run_and_post(settings: Settings, store: Store | None = None, *,
                       channel: str | None = None, **run_options: Any) -> list[PostOutcome]:
    """For cron (`pagetrail digest run --post`): scan, post what is due, return outcomes."""
    from pagetrail.bot.app import secret
    from pagetrail.bot.posting import web_client
    from pagetrail.store.db import open_store
    from pagetrail.tools.errors import ConfigError

    token = secret(settings.slack_bot_token)
    if not token:
        raise ConfigError("SLACK_BOT_TOKEN is not set: cannot post digests")
    store = store or open_store(settings.database_url)
    poster = SlackPoster(web_client(token, settings.slack_api_url))
    return await post_due_digests(store, settings, poster,
                                  channels=[channel] if channel else None, **run_options)
