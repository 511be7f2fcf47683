"""The Bolt app: `build_app(settings, store)` wires the listeners to the engine.

Single workspace: the bot token and signing secret come from the settings (environment
SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET); the Web API base URL from PAGETRAIL_SLACK_API_URL,
so tests and gateways can point the app elsewhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from slack_bolt.async_app import AsyncApp

from pagetrail import ConfigError, Settings, Store
from pagetrail.bot import blocks, textcheck
from pagetrail.bot.engine import BotEngine
from pagetrail.bot.handlers import DigestRunner, SlackBot
from pagetrail.bot.posting import SlackPoster, secret, web_client
from pagetrail.bot.ratelimit import KeyedLimiter, default_limiter

log = logging.getLogger(__name__)


@dataclass
class BotApp:
    app: AsyncApp
    bot: SlackBot
    poster: SlackPoster


def build_app(settings: Settings, store: Store, *, limiter: KeyedLimiter | None = None,
              socket_mode: bool = False, digests: bool = True) -> BotApp:
    """The Bolt AsyncApp and its listeners. ConfigError when a needed secret is missing."""
    token = secret(settings.slack_bot_token)
    signing_secret = secret(settings.slack_signing_secret)
    if not token:
        raise ConfigError("SLACK_BOT_TOKEN is not set")
    if not signing_secret and not socket_mode:
        raise ConfigError("SLACK_SIGNING_SECRET is not set (needed to verify Slack's requests)")
    client = web_client(token, settings.slack_api_url)
    app = AsyncApp(token=token, signing_secret=signing_secret, client=client,
                   process_before_response=False)
    poster = SlackPoster(client)
    engine = BotEngine(settings, store)
    runner: DigestRunner | None = None
    if digests:
        from pagetrail.bot.digest_post import channel_digest_runner

        runner = channel_digest_runner(store, settings, poster)
    bot = SlackBot(engine, poster, limiter or default_limiter(), runner)
    app.command("/fixlink")(bot.on_fixlink)
    app.command("/linkrot")(bot.on_linkrot)
    app.action(blocks.ACTION_PICK)(bot.on_pick)
    app.action(blocks.ACTION_REJECT)(bot.on_reject)
    app.action(blocks.ACTION_MORE)(bot.on_more)
    app.event("app_uninstalled")(_on_uninstalled)
    app.shortcut(textcheck.CALLBACK_ID)(bot.on_fix_message)
    return BotApp(app, bot, poster)


async def _on_uninstalled(event: dict[str, object]) -> None:
    log.warning("pagetrail was uninstalled from the workspace (%s)", event.get("type"))
