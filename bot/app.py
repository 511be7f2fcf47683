"""The Bolt app: `build_app(settings, store)` wires the listeners to the engine.

One workspace: the bot token comes from the settings (SLACK_BOT_TOKEN). Many workspaces:
with SLACK_CLIENT_ID and SLACK_CLIENT_SECRET the app runs Slack's OAuth install flow
(GET /slack/install, then Slack redirects to /slack/oauth_redirect) and keeps each
installation in pagetrail's store (bot.workspaces); every request is answered with the
token of the workspace it came from. The Web API base URL (the OAuth token exchange
included) comes from PAGETRAIL_SLACK_API_URL, so tests and gateways can point the app
elsewhere. Requests are verified with SLACK_SIGNING_SECRET.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from pagetrail import ConfigError, PagetrailError, Settings, Store, remember_slack_channel
from pagetrail.bot import blocks, textcheck
from pagetrail.bot.engine import BotEngine
from pagetrail.bot.handlers import DigestRunner, SlackBot
from pagetrail.bot.home import home_entries, home_view
from pagetrail.bot.posting import SlackPoster, secret, web_client
from pagetrail.bot.ratelimit import KeyedLimiter, default_limiter
from pagetrail.bot.workspaces import (
    ThreadedInstallationStore,
    Workspaces,
    oauth_configured,
    oauth_stores,
    workspaces_for,
)

__all__ = ["INSTALL_PATH", "REDIRECT_PATH", "BotApp", "build_app", "secret"]

log = logging.getLogger(__name__)

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"


@dataclass
class BotApp:
    app: AsyncApp
    bot: SlackBot
    poster: SlackPoster  # digests: each channel's workspace token (bot.workspaces)
    workspaces: Workspaces
    installations: ThreadedInstallationStore | None = None  # None: one workspace


def build_app(settings: Settings, store: Store, *, limiter: KeyedLimiter | None = None,
              socket_mode: bool = False, digests: bool = True) -> BotApp:
    """The Bolt AsyncApp and its listeners. ConfigError when a needed secret is missing."""
    signing_secret = secret(settings.slack_signing_secret)
    if not signing_secret and not socket_mode:
        raise ConfigError("SLACK_SIGNING_SECRET is not set (needed to verify Slack's requests)")
    installations: ThreadedInstallationStore | None = None
    if oauth_configured(settings):
        if socket_mode:
            raise ConfigError("the install flow for many workspaces needs HTTP (Slack sends "
                              "the installing browser to /slack/oauth_redirect): serve without "
                              "--socket, or set SLACK_BOT_TOKEN instead of SLACK_CLIENT_ID")
        installations, states = oauth_stores(settings, store)
        client = web_client(None, settings.slack_api_url)
        oauth = AsyncOAuthSettings(
            client_id=(settings.slack_client_id or "").strip(),
            client_secret=secret(settings.slack_client_secret),
            scopes=list(settings.slack_scopes), user_scopes=[],
            redirect_uri=settings.slack_redirect_uri,
            authorization_url=settings.slack_authorize_url,
            install_path=INSTALL_PATH, redirect_uri_path=REDIRECT_PATH,
            installation_store=installations, installation_store_bot_only=True,
            state_store=states)
        app = AsyncApp(signing_secret=signing_secret, client=client, oauth_settings=oauth,
                       installation_store_bot_only=True, process_before_response=False)
        workspaces, poster = workspaces_for(settings, store, installations=installations)
    else:
        workspaces, poster = workspaces_for(settings, store)
        app = AsyncApp(signing_secret=signing_secret, client=poster.client,
                       process_before_response=False)
    engine = BotEngine(settings, store)
    runner: DigestRunner | None = None
    if digests:
        from pagetrail.bot.digest_post import channel_digest_runner

        runner = channel_digest_runner(store, settings, poster)
    bot = SlackBot(engine, poster, limiter or default_limiter(), runner)
    app.use(channel_recorder(store))
    app.command("/fixlink")(bot.on_fixlink)
    app.command("/linkrot")(bot.on_linkrot)
    app.action(blocks.ACTION_PICK)(bot.on_pick)
    app.action(blocks.ACTION_REJECT)(bot.on_reject)
    app.action(blocks.ACTION_MORE)(bot.on_more)
    app.shortcut(textcheck.CALLBACK_ID)(bot.on_fix_message)
    lifecycle = Lifecycle(installations)
    app.event("app_uninstalled")(lifecycle.on_uninstalled)
    app.event("tokens_revoked")(lifecycle.on_tokens_revoked)
    app.event("app_home_opened")(AppHome(settings, store, workspaces).on_opened)
    return BotApp(app, bot, poster, workspaces, installations)


def channel_recorder(store: Store) -> Callable[..., Awaitable[Any]]:
    """Global middleware: remember which workspace each channel is in (the first request
    from it, and when it changes), so that its digests are posted with that workspace's
    token and its App Home lists it. Written in the background, never before the request
    is acknowledged (Slack's 3 s): with the database away the write waits out the store's
    fault budget. A store failure is logged and the request goes on: answering matters more
    than the bookkeeping, and the next request from the channel tries again."""
    seen: set[tuple[str, str, str]] = set()
    writing: set[asyncio.Task[None]] = set()  # held until done (the loop keeps weak refs)

    async def remember(key: tuple[str, str, str]) -> None:
        try:
            await asyncio.to_thread(remember_slack_channel, store, *key)
        except PagetrailError as exc:
            seen.discard(key)
            log.warning("slack: could not record the workspace of channel %s: %s",
                        key[0], exc)

    async def record(context: AsyncBoltContext, next_: Callable[[], Awaitable[Any]]) -> Any:
        channel, team = context.channel_id or "", context.team_id or ""
        enterprise = context.enterprise_id or ""
        key = (channel, team, enterprise)
        # D…: a direct message (the App Home's own channel), not a channel that watches.
        if channel and team and not channel.startswith("D") and key not in seen:
            seen.add(key)
            task = asyncio.create_task(remember(key))
            writing.add(task)
            task.add_done_callback(writing.discard)
        return await next_()

    return record


class Lifecycle:
    """app_uninstalled and tokens_revoked. Many workspaces: the workspace's installation
    and bot token are deleted from the store, so its channels are served no more (their
    watches and digest history stay in the store: docs/slack.md). One workspace: the
    token in SLACK_BOT_TOKEN is dead now, which only the operator can fix: logged."""

    def __init__(self, installations: ThreadedInstallationStore | None) -> None:
        self.installations = installations

    async def on_uninstalled(self, context: AsyncBoltContext) -> None:
        team, enterprise = context.team_id, context.enterprise_id
        if self.installations is None:
            log.warning("slack: pagetrail was uninstalled from workspace %s; SLACK_BOT_TOKEN "
                        "no longer works", team)
            return
        await self.installations.async_delete_installation(enterprise_id=enterprise,
                                                           team_id=team)
        await self.installations.async_delete_bot(enterprise_id=enterprise, team_id=team)
        log.info("slack: pagetrail was uninstalled from workspace %s: its installation and "
                 "bot token are deleted; its channels are no longer served", team)

    async def on_tokens_revoked(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        tokens = event.get("tokens") if isinstance(event.get("tokens"), dict) else {}
        bots, oauth = tokens.get("bot"), tokens.get("oauth")
        bots = bots if isinstance(bots, list) else []
        users = [u for u in oauth if isinstance(u, str) and u] if isinstance(oauth, list) else []
        team, enterprise = context.team_id, context.enterprise_id
        if self.installations is None:
            if bots:
                log.warning("slack: the bot token of workspace %s was revoked; "
                            "SLACK_BOT_TOKEN no longer works", team)
            return
        for user in users:
            await self.installations.async_delete_installation(
                enterprise_id=enterprise, team_id=team, user_id=user)
        if bots:
            await self.installations.async_delete_bot(enterprise_id=enterprise, team_id=team)
        log.info("slack: tokens revoked in workspace %s (%d bot, %d user): deleted from the "
                 "store", team, len(bots), len(users))


class AppHome:
    """app_home_opened: publish the Home tab (the workspace's watches, last digests)."""

    def __init__(self, settings: Settings, store: Store, workspaces: Workspaces) -> None:
        self.settings = settings
        self.store = store
        self.workspaces = workspaces

    async def on_opened(self, event: dict[str, Any], context: AsyncBoltContext,
                        client: AsyncWebClient) -> None:
        user = event.get("user")
        if event.get("tab", "home") != "home" or not isinstance(user, str) or not user:
            return
        try:
            channels = await self.workspaces.channels_of(context.team_id or "")
            view = home_view(await home_entries(channels, self.settings, self.store))
            blocks.validate_message({"blocks": view["blocks"]})
            await client.views_publish(user_id=user, view=view)
        except (PagetrailError, SlackApiError, SlackClientError, OSError) as exc:
            log.warning("slack: the App Home of %s could not be published: %s", user, exc)
