"""The message shortcut "Fix links in this message": the links of a Slack message checked
(pagetrail.check_links_in_text), the verdicts answered in the message's thread.

Slack writes links as `<https://…|label>`; the plain-text scanner stops at `|` and `>`, so
the message text is checked as it comes. The message's own time is the links' date (the
archived copy nearest it is the one its author saw).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pagetrail as api
from pagetrail import PagetrailError, Settings, Store
from pagetrail.bot import blocks

log = logging.getLogger(__name__)

CALLBACK_ID = "fix_links_in_message"
MAX_MESSAGE_CHARS = 20_000
VERDICT_LABELS = {
    "alive": ":white_check_mark: alive",
    "moved": ":arrow_right: moved",
    "replacement": ":twisted_rightwards_arrows: replacement",
    "archived": ":file_cabinet: archived copy",
    "never-existed": ":x: never existed (no capture anywhere, host answers, nothing similar)",
    "unfixable": ":x: dead, no answer found",
    "skipped": ":grey_question: not checked",
}


def message_time(ts: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(ts), UTC)
    except (TypeError, ValueError):
        return None


def verdict_blocks(result: api.TextCheck) -> dict[str, Any]:
    """One section per link: verdict, new address or capture, support of the sentence."""
    if not result.links:
        return blocks.message([blocks.section("No web links in this message.")],
                              "No web links in this message.")
    sections: list[dict[str, Any] | None] = [blocks.header("Links in this message")]
    for link in result.links:
        lines = [f"{blocks.link(link.url)} — {VERDICT_LABELS[link.verdict]}"]
        if link.new_url:
            when = f" (captured {link.memento_date:%Y-%m-%d})" if link.memento_date else ""
            lines.append(f"→ {blocks.link(link.new_url)}{when}")
        if link.support is not None:
            lines.append(f"supports the sentence: {blocks.percent(link.support.score)} — "
                         f"_{blocks.escape(blocks.clip(link.support.passage, 200))}_")
        sections.append(blocks.section("\n".join(lines)))
    dead = sum(1 for link in result.links if link.verdict in ("never-existed", "unfixable"))
    fixed = sum(1 for link in result.links if link.new_url)
    summary = f"{len(result.links)} link(s): {fixed} with a new address, {dead} dead"
    sections.append(blocks.context(blocks.escape(summary)))
    return blocks.message(sections, summary)


async def answer_shortcut(body: dict[str, Any], settings: Settings, store: Store,
                          poster: Any) -> None:
    """Check the shortcut's message and answer in its thread (errors answered there too)."""
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id", ""))
    ts = str(message.get("thread_ts") or message.get("ts") or "")
    text = str(message.get("text", ""))[:MAX_MESSAGE_CHARS]
    try:
        result = await api.check_links_in_text(text, at=message_time(str(message.get("ts"))),
                                                fmt="text", settings=settings, store=store)
        payload = verdict_blocks(result)
    except PagetrailError as exc:
        payload = blocks.error_blocks(str(exc), exc.code)
    await poster.post(channel, payload, thread_ts=ts or None)
