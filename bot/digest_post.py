"""Posting the weekly link-rot digest to Slack, once per channel and period.

The delivery — which digests are due, posting each once, finishing a thread that broke
off, the bookkeeping of every run — is the engine's (tools.scan.digest_delivery, over
store.digests). This module is Slack's side of it: `SlackDigestPoster` (one message per
channel — counts, the top dead links with their best suggestion and a Use-this button —
the full list as a paginated thread, the trend chart, a failure notice), the `/linkrot
digest now` runner and the cron entry point.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pagetrail import (
    ChannelDigest,
    PostOutcome,
    Settings,
    Store,
    configured_digest_runner,
    period_of,
)
from pagetrail import deliver_due_digests as deliver
from pagetrail.bot import blocks
from pagetrail.bot.digest_view import digest_view
from pagetrail.bot.posting import DELIVERY_ERRORS, SlackPoster

__all__ = ["PostOutcome", "SlackDigestPoster", "channel_digest_runner", "digest_view",
           "post_due_digests", "run_and_post"]


class SlackDigestPoster:
    """pagetrail.DigestPoster for Slack: Block Kit messages through SlackPoster."""

    delivery_errors = DELIVERY_ERRORS

    def __init__(self, poster: SlackPoster) -> None:
        self.poster = poster

    def thread(self, digest: ChannelDigest) -> list[dict[str, Any]]:
        return blocks.digest_thread_pages(digest_view(digest))

    async def post_main(self, digest: ChannelDigest) -> str:
        return await self.poster.post(digest.channel, blocks.digest_blocks(digest_view(digest)))

    async def post_reply(self, channel: str, parent: str, page: Any) -> None:
        await self.poster.post(channel, page, thread_ts=parent)

    async def upload_chart(self, channel: str, period: str, png: bytes, alt_text: str) -> str:
        return await self.poster.upload(channel, png, filename=f"link-health-{period}.png",
                                        title=f"Link health, {period}", alt_text=alt_text)

    async def say_failed(self, channel: str, period: str) -> None:
        await self.poster.post(channel, blocks.error_blocks(
            f"The link-rot digest for {period} could not be completed; "
            "it will be retried at the next run."))


async def post_due_digests(store: Store, settings: Settings, poster: SlackPoster, *,
                           channels: Sequence[str] | None = None,
                           **options: Any) -> list[PostOutcome]:
    """pagetrail.deliver_due_digests, posting to Slack through `poster`."""
    return await deliver(store, settings, SlackDigestPoster(poster), channels=channels,
                         **options)


def channel_digest_runner(store: Store, settings: Settings, poster: SlackPoster,
                          ) -> Callable[[str], Awaitable[None]]:
    """`/linkrot digest now` for one channel."""

    async def run(channel: str) -> None:
        # With a broker the digest is built by a worker (a digest job); posted from here.
        outcomes = await post_due_digests(store, settings, poster, channels=[channel],
                                          runner=configured_digest_runner(settings, store))
        if any(o.status == "skipped" and o.channel == channel for o in outcomes):
            period = period_of(datetime.now(UTC))
            await poster.post(channel, blocks.message([blocks.section(
                f"This channel's digest for {period} is already posted.")], "digest posted"))

    return run


async def run_and_post(settings: Settings, store: Store | None = None, *,
                       channel: str | None = None, **run_options: Any) -> list[PostOutcome]:
    """For cron (`pagetrail digest run --post`): scan, post what is due, return outcomes."""
    from pagetrail import ConfigError, open_store
    from pagetrail.bot.posting import secret, web_client

    token = secret(settings.slack_bot_token)
    if not token:
        raise ConfigError("SLACK_BOT_TOKEN is not set: cannot post digests")
    store = store or open_store(settings.database_url)
    poster = SlackPoster(web_client(token, settings.slack_api_url))
    return await post_due_digests(store, settings, poster,
                                  channels=[channel] if channel else None, **run_options)
