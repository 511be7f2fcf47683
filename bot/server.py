"""Running the app: HTTP (ASGI under uvicorn, Slack's requests at /slack/events; with the
install flow also GET /slack/install and /slack/oauth_redirect) or Socket Mode. HTTP binds 127.0.0.1 by default — Bolt's built-in server binds every interface —
so exposing the bot is a decision (a reverse proxy, or --host)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from slack_bolt.adapter.asgi.async_handler import AsyncSlackRequestHandler

from pagetrail import ConfigError, Settings, Store
from pagetrail.bot.app import BotApp, build_app, secret
from pagetrail.bot.guard import Asgi, Malformed, check_socket_payload, guarded

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
DEFAULT_PORT = 3000


def asgi_app(bot_app: BotApp) -> Asgi:
    """The ASGI application: POST /slack/events (commands, interactivity, events), each
    request's shape checked (bot.guard) before Bolt verifies and dispatches it."""
    return guarded(AsyncSlackRequestHandler(bot_app.app, path=EVENTS_PATH), EVENTS_PATH)


async def serve_http(settings: Settings, store: Store, *, host: str = "127.0.0.1",
                     port: int = DEFAULT_PORT, scheduler: bool = True) -> None:
    import uvicorn

    bot_app = build_app(settings, store)
    config = uvicorn.Config(asgi_app(bot_app), host=host, port=port, log_level="info",
                            lifespan="off")
    async with _scheduler(settings, store, bot_app, scheduler):
        await uvicorn.Server(config).serve()
    await bot_app.bot.drain()


async def serve_socket(settings: Settings, store: Store, *, scheduler: bool = True) -> None:
    app_token = secret(settings.slack_app_token)
    if not app_token:
        raise ConfigError("SLACK_APP_TOKEN (xapp-…) is not set: Socket Mode needs it")
    bot_app = build_app(settings, store, socket_mode=True)
    async with _scheduler(settings, store, bot_app, scheduler):
        await guarded_socket_handler(bot_app, app_token).start_async()


def guarded_socket_handler(bot_app: BotApp, app_token: str) -> Any:
    """Bolt's Socket Mode handler behind the same shape checks as the HTTP app (bot.guard):
    a payload Slack could not have sent is acknowledged (so it is not sent again), logged
    once, and never reaches Bolt."""
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
    from slack_sdk.socket_mode.response import SocketModeResponse

    class GuardedSocketModeHandler(AsyncSocketModeHandler):
        async def handle(self, client: Any, req: Any) -> None:
            try:
                check_socket_payload(req.type, req.payload)
            except Malformed as exc:
                log.warning("slack: refused a malformed Socket Mode request: %s", exc)
                await client.send_socket_mode_response(
                    SocketModeResponse(envelope_id=req.envelope_id))
                return
            await super().handle(client, req)

    return GuardedSocketModeHandler(bot_app.app, app_token)


@contextlib.asynccontextmanager
async def _scheduler(settings: Settings, store: Store, bot_app: BotApp, enabled: bool):  # type: ignore[no-untyped-def]
    if not enabled:
        yield
        return
    from pagetrail.bot.scheduler import start_digest_scheduler

    sched = start_digest_scheduler(store, settings, bot_app.poster,
                                   channels=bot_app.workspaces.served_channels)
    try:
        yield
    finally:
        sched.shutdown(wait=False)
        await asyncio.sleep(0)
