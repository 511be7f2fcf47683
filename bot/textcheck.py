"""The message shortcut "Fix links in this message": the links of a Slack message checked
(pagetrail.check_links_in_text), the verdicts answered in the message's thread — or, when
the bot cannot post there (not a member of the channel), to the person who asked alone,
saying so.

Slack writes links as `<https://…|label>`; the plain-text scanner stops at `|` and `>`, so
the message text is checked as it comes. The message's own time is the links' date (the
archived copy nearest it is the one its author saw).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pagetrail as api
from pagetrail import PagetrailError, Settings, Store
from pagetrail.bot import blocks
from pagetrail.bot.posting import DELIVERY_ERRORS, SlackPoster, SlackPostFailed

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
                          poster: SlackPoster, response_url: str | None = None) -> str:
    """Check the shortcut's message and answer in its thread (errors answered there too).
    When the bot cannot post there (not in the channel…), the answer goes privately to the
    person who asked (`answer_privately`). Returns where it went: "thread", "response_url",
    "ephemeral" or "direct"."""
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id", ""))
    user = str((body.get("user") or {}).get("id", ""))
    ts = str(message.get("thread_ts") or message.get("ts") or "")
    text = str(message.get("text", ""))[:MAX_MESSAGE_CHARS]
    try:
        result = await api.check_links_in_text(text, at=message_time(str(message.get("ts"))),
                                                fmt="text", settings=settings, store=store)
        payload = verdict_blocks(result)
    except PagetrailError as exc:
        payload = blocks.error_blocks(str(exc), exc.code)
    try:
        await poster.post(channel, payload, thread_ts=ts or None)
    except SlackPostFailed as exc:
        if exc.error not in CANNOT_POST:
            raise
        log.info("slack: cannot answer in channel %s (%s): answering %s privately",
                 channel, exc.error, user)
        return await answer_privately(poster, payload, channel=channel, user=user,
                                      response_url=response_url, reason=exc.error)
    return "thread"


# What chat.postMessage answers when the bot may not post in a channel; then the answer
# goes privately to the person who asked.
CANNOT_POST = frozenset({"not_in_channel", "channel_not_found", "is_archived",
                         "restricted_action", "restricted_action_read_only_channel",
                         "restricted_action_thread_only_channel",
                         "restricted_action_non_threadable_channel"})


def private_note(channel: str, reason: str, *, direct: bool) -> str:
    where = f"<#{channel}>" if channel.isalnum() else "this channel"
    told = ("so here is my answer as a direct message" if direct
            else "so only you can see this answer")
    return (f":lock: I cannot post in {where} ({blocks.escape(reason)}), {told}. "
            "Invite me to the channel (`/invite @pagetrail`) to get answers in the thread.")


def with_note(payload: dict[str, Any], note: str) -> dict[str, Any]:
    return blocks.message([blocks.context(note), *payload["blocks"]], payload["text"])


async def answer_privately(poster: SlackPoster, payload: dict[str, Any], *, channel: str,
                           user: str, response_url: str | None, reason: str) -> str:
    """The answer to `user` alone, saying why: through the shortcut's response_url (an
    ephemeral message in the channel, which needs no membership), else chat.postEphemeral,
    else a direct message. The last failure is raised when none works."""
    private = with_note(payload, private_note(channel, reason, direct=False))
    attempts: list[tuple[str, Callable[[], Awaitable[None]]]] = []
    if response_url:
        attempts.append(("response_url", lambda: poster.respond(response_url, private,
                                                                ephemeral=True)))
    if user:
        attempts.append(("ephemeral", lambda: poster.ephemeral(channel, user, private)))
        attempts.append(("direct", lambda: poster.direct(
            channel, user, with_note(payload, private_note(channel, reason, direct=True)))))
    failure: BaseException | None = None
    for name, attempt in attempts:
        try:
            await attempt()
            return name
        except DELIVERY_ERRORS as exc:
            log.warning("slack: the private answer by %s failed: %s", name, exc)
            failure = exc
    if failure is None:
        raise SlackPostFailed(f"cannot post in {channel} ({reason}) and no one to tell",
                              error=reason)
    raise failure
