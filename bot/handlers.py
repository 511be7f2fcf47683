"""Slash commands and buttons: ack at once, work in the background, post the answer.

Slack wants an acknowledgement within 3 seconds. Every handler acks first (with a short
"looking…" note, or the usage error), then runs the engine in a background task that waits
its turn in the per-user and per-channel limiter (a burst is queued, not dropped, up to
ratelimit.MAX_QUEUED_PER_USER waiting jobs a person: beyond that the command is refused
with an ephemeral note) and posts the Block Kit answer to the command's response_url.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from pagetrail import (
    PagetrailError,
    Settings,
    add_watch,
    list_watches,
    origin_of,
    remove_watch,
    validate_url,
)
from pagetrail.bot import blocks, textcheck
from pagetrail.bot.commands import (
    CommandUsageError,
    FixlinkRequest,
    LinkrotRequest,
    parse_fixlink,
    parse_linkrot,
)
from pagetrail.bot.engine import BotEngine
from pagetrail.bot.posting import DELIVERY_ERRORS, SlackPoster
from pagetrail.bot.ratelimit import KeyedLimiter, job_keys

log = logging.getLogger(__name__)

Ack = Callable[..., Awaitable[None]]
DigestRunner = Callable[[str], Awaitable[None]]

LOOKING = {
    "recover": "Looking for where {url} went… (the answer will appear here)",
    "check": "Checking {url}…",
    "memento": "Looking for an archived copy of {url}…",
    "signature": "Reading the archived copy of {url}…",
    "tags": "Collecting tags of {url}…",
    "search": "Searching…",
    "rank": "Ranking {n} candidates for {url}…",
    "related": "Looking for related archived pages of {url}…",
    "archive": "Asking the Internet Archive to capture {url}… (this takes a minute)",
}
TOO_MANY_QUEUED = ("Too many of your requests are queued already; "
                   "try again in a minute.")


def looking_text(request: FixlinkRequest, ahead: int) -> str:
    text = LOOKING.get(request.action, "Working…").format(url=blocks.escape(request.url),
                                                          n=len(request.candidates))
    if ahead:
        text += f" (queued: {ahead} ahead of you)"
    return text


class SlackBot:
    """The listeners registered on the Bolt app (see app.build_app)."""

    def __init__(self, engine: BotEngine, poster: SlackPoster, limiter: KeyedLimiter,
                 digest_runner: DigestRunner | None = None) -> None:
        self.engine = engine
        self.poster = poster
        self.limiter = limiter
        self.digest_runner = digest_runner
        self.tasks: set[asyncio.Task[None]] = set()

    # ---------------------------------------------------------------- background work

    def spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(job)
        self.tasks.add(task)  # keep a reference: the loop holds tasks only weakly
        task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        """Wait for the background jobs (shutdown, tests)."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    async def _answer(self, response_url: str, keys: list[str],
                      work: Callable[[], Awaitable[dict[str, Any]]], *,
                      ephemeral: bool = False) -> None:
        try:
            await self.limiter.take_turn(keys)  # admitted in on_fixlink / on_more
            payload = await work()
        except PagetrailError as exc:
            await self._tell(response_url, blocks.error_blocks(str(exc), exc.code))
            return
        except Exception:
            log.exception("bot job failed")
            await self._tell(response_url, blocks.error_blocks(
                "Something went wrong on our side; please try again later."))
            return
        try:
            await self.poster.respond(response_url, payload, ephemeral=ephemeral)
        except DELIVERY_ERRORS:
            log.exception("posting the answer failed")

    async def _tell(self, response_url: str, payload: dict[str, Any]) -> None:
        try:
            await self.poster.respond(response_url, payload, ephemeral=True)
        except DELIVERY_ERRORS:
            log.exception("posting an error failed")

    # ---------------------------------------------------------------- /fixlink

    async def on_fixlink(self, ack: Ack, command: dict[str, Any]) -> None:
        try:
            response_url = reply_url(command, self.engine.settings)
            request = parse_fixlink(command.get("text", ""), self.engine.settings)
        except PagetrailError as exc:
            log.info("slack: /fixlink refused: %s: %s", exc.code, exc)
            await ack(response_type="ephemeral", **blocks.error_blocks(str(exc), exc.code))
            return
        if request.action == "help":
            await ack(response_type="ephemeral", **blocks.help_blocks())
            return
        keys = job_keys(str(command.get("user_id", "")), str(command.get("channel_id", "")))
        # Everything that can fail was checked above: from here the place taken in the
        # person's queue is handed to the job, which gives it back (take_turn).
        if not self.limiter.admit(keys):
            await ack(response_type="ephemeral", text=TOO_MANY_QUEUED)
            return
        try:
            await ack(response_type="ephemeral",
                      text=looking_text(request, self.limiter.ahead_of(keys)))
        except BaseException:
            self.limiter.release(keys)
            raise
        self.spawn(self._answer(response_url, keys, lambda: self.engine.answer(request)))

    # ---------------------------------------------------------------- message shortcut

    async def on_fix_message(self, ack: Ack, body: dict[str, Any],
                             client: AsyncWebClient) -> None:
        """"Fix links in this message": acknowledged at once, answered in the thread (or
        privately, saying why, when the bot cannot post there)."""
        await ack()
        user, channel = _who_where(body)
        try:
            response_url: str | None = reply_url(body, self.engine.settings)
        except CommandUsageError:
            response_url = None  # the answer goes to the thread; no private fallback there
        keys = job_keys(user, channel)
        if not self.limiter.admit(keys):
            if response_url:
                await self._tell(response_url, blocks.message(
                    [blocks.section(TOO_MANY_QUEUED)], TOO_MANY_QUEUED))
            return
        settings, store = self.engine.settings, self.engine.store
        poster = SlackPoster(client)  # this workspace's token (Bolt's authorized client)

        async def work() -> None:
            try:
                await self.limiter.take_turn(keys)
                await textcheck.answer_shortcut(body, settings, store, poster, response_url)
            except DELIVERY_ERRORS:
                log.exception("posting the link check failed")

        self.spawn(work())

    # ---------------------------------------------------------------- buttons

    async def on_pick(self, ack: Ack, body: dict[str, Any]) -> None:
        await self._on_verdict(ack, body, rejected=False)

    async def on_reject(self, ack: Ack, body: dict[str, Any]) -> None:
        await self._on_verdict(ack, body, rejected=True)

    async def _on_verdict(self, ack: Ack, body: dict[str, Any], *, rejected: bool) -> None:
        click = await self._clicked(ack, body)
        if click is None:
            return
        user, channel, response_url, value = click
        try:
            dead_url, chosen_url = validate_url(value["u"]), validate_url(value.get("c", ""))
            await self.engine.record_pick(dead_url, chosen_url, by=user, where=channel,
                                          rejected=rejected)
        except PagetrailError as exc:
            await self._tell(response_url, blocks.error_blocks(str(exc), exc.code))
            return
        await self.poster.respond(response_url,
                                  blocks.pick_confirmation(user, dead_url, chosen_url, rejected))

    async def on_more(self, ack: Ack, body: dict[str, Any]) -> None:
        click = await self._clicked(ack, body)
        if click is None:
            return
        user, channel, response_url, value = click
        try:
            url, offset = validate_url(value["u"]), max(0, int(value.get("o", 0)))
            anchor = str(value.get("a", ""))
        except (PagetrailError, ValueError, TypeError) as exc:
            await self._tell(response_url, blocks.error_blocks(f"bad button: {exc}"))
            return

        async def more() -> dict[str, Any]:
            recovery = await self.engine.recover(url, anchor)  # answered from the store
            return blocks.recovery_blocks(recovery, offset=offset, anchor=anchor)

        keys = job_keys(user, channel)
        if not self.limiter.admit(keys):
            await self._tell(response_url, blocks.message(
                [blocks.section(TOO_MANY_QUEUED)], TOO_MANY_QUEUED))
            return
        self.spawn(self._answer(response_url, keys, more, ephemeral=True))

    async def _clicked(self, ack: Ack, body: dict[str, Any],
                       ) -> tuple[str, str, str, dict[str, Any]] | None:
        """Ack a button click: (user, channel, response_url, the button's value), or None
        when there is nowhere to answer or the button carries no link (said there)."""
        await ack()
        user, channel = _who_where(body)
        response_url = _button_reply_url(body, self.engine.settings)
        if response_url is None:
            return None
        try:
            value = _button_value(body)
        except PagetrailError as exc:
            await self._tell(response_url, blocks.error_blocks(str(exc), exc.code))
            return None
        return user, channel, response_url, value

    # ---------------------------------------------------------------- /linkrot

    async def on_linkrot(self, ack: Ack, command: dict[str, Any]) -> None:
        channel, user = command.get("channel_id", ""), command.get("user_id", "")
        try:
            response_url = reply_url(command, self.engine.settings)
            request = parse_linkrot(command.get("text", ""), self.engine.settings)
            reply = await self._linkrot(request, channel, user)
        except PagetrailError as exc:
            await ack(response_type="ephemeral", **blocks.error_blocks(str(exc), exc.code))
            return
        await ack(**reply)
        if request.action == "digest" and self.digest_runner is not None:
            self.spawn(self._digest_now(channel, response_url))

    async def _linkrot(self, request: LinkrotRequest, channel: str,
                       user: str) -> dict[str, Any]:
        store = self.engine.store
        if request.action == "watch":
            # The API refuses a name resolving to a private address now, as every face
            # does, not at the first weekly scan.
            change = await add_watch(request.target, channel=channel, by=user,
                                     settings=self.engine.settings, store=store)
            target = blocks.escape(change.target)  # an in-channel message: no mentions
            text = (f"This channel now watches {target}: a link-rot digest comes "
                    "weekly." if change.changed else f"This channel already watches {target}.")
            return {"response_type": "in_channel" if change.changed else "ephemeral",
                    "text": text}
        if request.action == "unwatch":
            change = await remove_watch(request.target, channel=channel,
                                        settings=self.engine.settings, store=store)
            target = blocks.escape(change.target)
            text = (f"This channel no longer watches {target}." if change.changed
                    else f"This channel does not watch {target}.")
            return {"response_type": "in_channel" if change.changed else "ephemeral",
                    "text": text}
        if request.action == "list":
            (watched,) = await list_watches(channel=channel, settings=self.engine.settings,
                                            store=store)
            return {"response_type": "ephemeral", **blocks.watches_blocks(watched.targets)}
        if request.action == "digest":
            if self.digest_runner is None:
                raise CommandUsageError("digests are not enabled in this deployment")
            return {"response_type": "ephemeral",
                    "text": "Running the link-rot digest for this channel now…"}
        return {"response_type": "ephemeral", **blocks.help_blocks()}

    async def _digest_now(self, channel: str, response_url: str) -> None:
        assert self.digest_runner is not None
        try:
            await self.digest_runner(channel)
        except PagetrailError as exc:
            await self._tell(response_url, blocks.error_blocks(str(exc), exc.code))
        except Exception:
            log.exception("digest now failed")
            await self._tell(response_url, blocks.error_blocks("The digest failed; it will "
                                                               "be retried."))


SLACK_HOOK_DOMAINS = (".slack.com", ".slack-gov.com")  # where Slack's response_urls live


def reply_url(payload: dict[str, Any], settings: Settings) -> str:
    """The request's response_url: every answer goes there, so a request without a usable one
    is refused before it takes anything (CommandUsageError). Usable: https on Slack's own
    domains, or the origin of the configured Slack API URL (a gateway, a test double) —
    never another address the bot would be made to post to."""
    value = payload.get("response_url")
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise CommandUsageError("this request carries no response_url to answer to")
    origin = origin_of(value)
    slack = origin is not None and origin[0] == "https" and \
        f".{origin[1]}".endswith(SLACK_HOOK_DOMAINS)
    if not slack and (origin is None or origin != origin_of(settings.slack_api_url)):
        raise CommandUsageError("this request's response_url is not Slack's")
    return value


def _button_reply_url(body: dict[str, Any], settings: Settings) -> str | None:
    """A button click's response_url, or None (logged): the click was already acked and
    there is nowhere to answer."""
    try:
        return reply_url(body, settings)
    except CommandUsageError:
        log.warning("slack: a button click without response_url ignored")
        return None


def _who_where(body: dict[str, Any]) -> tuple[str, str]:
    user = _field(body.get("user"), "id")
    channel = _field(body.get("channel"), "id") or _field(body.get("container"), "channel_id")
    return user, channel


def _field(value: Any, key: str) -> str:
    """`value[key]` as text when `value` is an object; "" for any other shape."""
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""


def _button_value(body: dict[str, Any]) -> dict[str, Any]:
    actions = body.get("actions")
    action = actions[0] if isinstance(actions, list) and actions else None
    raw = action.get("value") if isinstance(action, dict) else None
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError as exc:
        raise CommandUsageError("this button carries no link") from exc
    if not isinstance(value, dict) or "u" not in value:
        raise CommandUsageError("this button carries no link")
    return value
