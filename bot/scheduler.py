"""The weekly digest schedule (APScheduler, inside `pagetrail serve slack`).

Monday 09:00 UTC by default; an hourly job retries the channels whose run of the week failed (post_due_digests
posts nothing twice, so running it often is safe). Without the long-running server, cron
can call `pagetrail digest run --post` instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from pagetrail import Settings, Store
from pagetrail.bot.digest_post import post_due_digests
from pagetrail.bot.posting import SlackPoster

log = logging.getLogger(__name__)

WEEKLY = CronTrigger(day_of_week="mon", hour=9, minute=0, timezone="UTC")
RETRY_EVERY_HOURS = 1


def start_digest_scheduler(store: Store, settings: Settings, poster: SlackPoster,
                           *, weekly: CronTrigger = WEEKLY,
                           channels: Callable[[], Awaitable[list[str] | None]] | None = None,
                           ) -> AsyncIOScheduler:
    """Start the jobs on the running event loop; the caller shuts the scheduler down.
    `channels`: the channels served at each run (bot.workspaces: the installed workspaces'
    ones); None, every watched channel."""

    async def job(only_failed: bool = False) -> None:
        served = await channels() if channels is not None else None
        outcomes = await post_due_digests(store, settings, poster, only_failed=only_failed,
                                          channels=served)
        for outcome in outcomes:
            if outcome.status != "skipped":
                log.info("digest %s %s: %s", outcome.channel, outcome.period, outcome.status)

    scheduler = AsyncIOScheduler(timezone="UTC")
    # max_instances=1 + coalesce: a slow scan never overlaps the next tick.
    scheduler.add_job(job, weekly, id="digest-weekly", max_instances=1, coalesce=True)
    scheduler.add_job(job, IntervalTrigger(hours=RETRY_EVERY_HOURS), id="digest-retry",
                      kwargs={"only_failed": True}, max_instances=1, coalesce=True)
    scheduler.start()
    return scheduler
