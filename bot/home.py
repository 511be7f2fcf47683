"""The App Home tab: the workspace's watched sites, channel by channel, with each channel's
last digest (its counts, from the digest runs in the store). Published (views.publish) when
a person opens the tab (event app_home_opened)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pagetrail import Settings, Store, list_watches, stored_trend
from pagetrail.bot import blocks

MAX_CHANNELS = 15  # three blocks each, within the 50 blocks validate_blocks allows
MAX_TARGETS = 10  # per channel; `/linkrot list` there has them all
COUNT_LABELS = {"alive": "working", "suspect": "suspect", "confirmed": "confirmed dead",
                "fixed": "fixed", "drifted": "content changed"}


@dataclass
class HomeChannel:
    channel: str
    targets: list[str]
    period: str | None = None  # the ISO week of the last recorded digest
    counts: dict[str, int] = field(default_factory=dict)


def channel_ref(channel: str) -> str:
    return f"<#{channel}>" if channel.isalnum() else f"`{blocks.escape(channel)}`"


def last_digest_line(entry: HomeChannel) -> str:
    if entry.period is None:
        return "No digest yet: the first comes on Monday (or `/linkrot digest now` there)."
    counts = " · ".join(f"{entry.counts.get(name, 0):,} {label}"
                        for name, label in COUNT_LABELS.items())
    return f"Last digest, {blocks.escape(entry.period)}: {counts}"


def home_view(entries: Sequence[HomeChannel]) -> dict[str, Any]:
    """The Home tab's view (pure)."""
    shown: list[dict[str, Any] | None] = [blocks.header("pagetrail: watched sites")]
    if not entries:
        shown.append(blocks.section(
            "No channel of this workspace watches a site yet. In a channel: "
            "`/linkrot watch SITE` — a link-rot digest then comes there weekly."))
    for entry in entries[:MAX_CHANNELS]:
        lines = [f"• {blocks.link(t, t, 200)}" for t in entry.targets[:MAX_TARGETS]]
        if len(entry.targets) > MAX_TARGETS:
            lines.append(f"…and {len(entry.targets) - MAX_TARGETS} more (`/linkrot list` "
                         "in the channel)")
        shown += [blocks.divider(),
                  blocks.section(f"*{channel_ref(entry.channel)}* watches:\n" + "\n".join(lines)),
                  blocks.context(last_digest_line(entry))]
    if len(entries) > MAX_CHANNELS:
        shown.append(blocks.context(f"…and {len(entries) - MAX_CHANNELS} more channels."))
    shown.append(blocks.context("`/fixlink URL` finds where a dead link went; "
                                "`/linkrot watch SITE` in a channel watches a site."))
    return {"type": "home", "blocks": [b for b in shown if b]}


async def home_entries(channels: Sequence[str], settings: Settings,
                       store: Store) -> list[HomeChannel]:
    """Each channel's watches and last digest, from the store."""
    entries = []
    for channel in channels:
        (watched,) = await list_watches(channel=channel, settings=settings, store=store)
        if not watched.targets:
            continue
        trend = await asyncio.to_thread(stored_trend, store, channel)
        entries.append(HomeChannel(channel, list(watched.targets),
                                   trend.periods[-1] if trend.periods else None,
                                   trend.latest()))
    return entries
