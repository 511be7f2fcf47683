"""Where answers go: a command's response_url, or a channel via chat.postMessage.

Every payload is validated against Block Kit limits before it leaves. Slack's 429s are
retried after Retry-After (slack_sdk's rate-limit retry handler), for the Web API and for
response_url alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from pydantic import SecretStr
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from pagetrail import PagetrailError
from pagetrail.bot.blocks import validate_message

RATE_LIMIT_RETRIES = 3


def secret(value: SecretStr | None) -> str:
    """A secret setting's value, blank when unset (the app and the digest poster read it)."""
    return value.get_secret_value().strip() if value is not None else ""


class SlackPostFailed(PagetrailError):
    """Slack refused or failed a post (after retries); `error` is Slack's error code
    ("not_in_channel", …) when Slack gave one."""

    code = "slack_post_failed"

    def __init__(self, message: str, *, error: str = "") -> None:
        super().__init__(message)
        self.error = error


def _refused(what: str, exc: SlackApiError) -> SlackPostFailed:
    error = str(exc.response.get("error") or "")
    return SlackPostFailed(f"{what} failed: {error}", error=error)


# What delivering a message can raise: Slack's refusals (after retries), the HTTP client's
# and the network's failures. Callers that can only log a lost message catch these.
DELIVERY_ERRORS = (SlackPostFailed, SlackClientError, aiohttp.ClientError, OSError,
                   TimeoutError)


def retry_handlers() -> list[AsyncRetryHandler]:
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=1),
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        AsyncServerErrorRetryHandler(max_retry_count=1),
    ]


def web_client(token: str | None, base_url: str) -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=base_url, retry_handlers=retry_handlers())


Route = Callable[[str], Awaitable[AsyncWebClient]]


class SlackPoster:
    """Posts through `client`, or through the client `route` gives for each channel (its
    workspace's token: bot.workspaces)."""

    def __init__(self, client: AsyncWebClient, route: Route | None = None) -> None:
        self.client = client
        self.route = route

    async def client_for(self, channel: str) -> AsyncWebClient:
        return self.client if self.route is None else await self.route(channel)

    async def respond(self, response_url: str, payload: dict[str, Any], *,
                      ephemeral: bool = False, replace_original: bool = False) -> None:
        validate_message(payload)
        hook = AsyncWebhookClient(response_url, retry_handlers=retry_handlers())
        body = {**payload, "response_type": "ephemeral" if ephemeral else "in_channel",
                "replace_original": replace_original}
        response = await hook.send_dict(body)
        if response.status_code >= 300:
            raise SlackPostFailed(f"response_url answered {response.status_code}")

    async def post(self, channel: str, payload: dict[str, Any],
                   thread_ts: str | None = None) -> str:
        """Post to a channel; returns the message ts. SlackPostFailed on an API error."""
        validate_message(payload)
        client = await self.client_for(channel)
        try:
            response = await client.chat_postMessage(
                channel=channel, blocks=payload["blocks"], text=payload["text"],
                thread_ts=thread_ts, unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            raise _refused("chat.postMessage", exc) from exc
        return str(response["ts"])

    async def ephemeral(self, channel: str, user: str, payload: dict[str, Any]) -> None:
        """A message in `channel` that only `user` sees (chat.postEphemeral)."""
        validate_message(payload)
        client = await self.client_for(channel)
        try:
            await client.chat_postEphemeral(channel=channel, user=user, blocks=payload["blocks"],
                                            text=payload["text"])
        except SlackApiError as exc:
            raise _refused("chat.postEphemeral", exc) from exc

    async def direct(self, channel: str, user: str, payload: dict[str, Any]) -> None:
        """A direct message to `user` from the bot of `channel`'s workspace (needs im:write)."""
        validate_message(payload)
        client = await self.client_for(channel)
        try:
            opened = await client.conversations_open(users=user)
            await client.chat_postMessage(channel=opened["channel"]["id"],
                                          blocks=payload["blocks"], text=payload["text"],
                                          unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            raise _refused("the direct message", exc) from exc

    async def upload(self, channel: str, content: bytes, *, filename: str, title: str,
                     alt_text: str, thread_ts: str | None = None) -> str:
        """Share a file in a channel with Slack's upload v2 (files.getUploadURLExternal, the
        upload, files.completeUploadExternal); returns the file id."""
        client = await self.client_for(channel)
        try:
            response = await client.files_upload_v2(
                channel=channel, content=content, filename=filename, title=title,
                alt_txt=alt_text, thread_ts=thread_ts)
        except SlackApiError as exc:
            raise _refused("file upload", exc) from exc
        files = response.get("files") or [{}]
        return str(files[0].get("id") or response.get("file", {}).get("id", ""))
