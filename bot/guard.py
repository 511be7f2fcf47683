"""The front door of the HTTP app: a request Slack could not have sent is answered 400 here,
before Bolt sees it, and logged once. Socket Mode's requests pass the same checks
(`check_socket_payload`, bot.server's handler) before Bolt sees them.

Bolt assumes well-formed requests: a non-numeric X-Slack-Request-Timestamp, a body that is
not UTF-8, or an interactivity `payload` that is not a JSON object raise inside it and
become a 500 with a traceback. Checking the shape first (not the signature: Bolt does that)
keeps every malformed request a fast, quiet 4xx that took nothing from the bot.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1_000_000  # Slack's command and action bodies are a few kB

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]


class Malformed(ValueError):
    """Why a request cannot be from Slack (the 4xx status and a short reason)."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return bytes(value)
    return None


def check_request(headers_of: Callable[[bytes], bytes | None], body: bytes) -> None:
    """Raise Malformed unless the request has the shape of one of Slack's (pure)."""
    timestamp = headers_of(b"x-slack-request-timestamp")
    if timestamp is not None and not timestamp.strip().isdigit():
        raise Malformed("X-Slack-Request-Timestamp is not a number", 401)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Malformed("the body is not UTF-8") from exc
    content_type = (headers_of(b"content-type") or b"").decode("latin-1").lower()
    if "json" in content_type:
        _json_object(text, "the JSON body")
        return
    try:
        form = parse_qs(text, keep_blank_values=True, errors="strict")
    except (ValueError, UnicodeDecodeError) as exc:
        raise Malformed("the form body is malformed") from exc
    if "payload" in form:
        check_payload(_json_object(form["payload"][0], "payload"))


# Fields of an interactivity payload that Bolt's matchers index without checking their type.
_OBJECT_FIELDS = ("user", "team", "channel", "container", "view", "message", "enterprise")


def check_payload(payload: dict[str, Any]) -> None:
    """An interactivity payload's fields have the types Bolt relies on (Malformed if not)."""
    if not isinstance(payload.get("type", ""), str):
        raise Malformed("payload.type is not text")
    for name in _OBJECT_FIELDS:
        if payload.get(name) is not None and not isinstance(payload[name], dict):
            raise Malformed(f"payload.{name} is not an object")
    actions = payload.get("actions")
    if actions is None:
        return
    if not isinstance(actions, list) or not all(
            isinstance(a, dict) and isinstance(a.get("action_id"), str)
            and isinstance(a.get("block_id", ""), str) for a in actions):
        raise Malformed("payload.actions is not a list of actions")


# Socket Mode's request kinds (slack_sdk.socket_mode) and the fields Bolt reads as text.
_COMMAND_FIELDS = ("command", "text", "user_id", "channel_id", "team_id", "response_url",
                   "trigger_id")


def check_socket_payload(kind: str, payload: Any) -> None:
    """A Socket Mode request's payload has the shape of one of Slack's, as `check_request`
    checks an HTTP one (Malformed if not; pure): a slash command's fields are text, an
    interactivity payload passes `check_payload`, an event is an object."""
    if not isinstance(payload, dict):
        raise Malformed(f"the {kind} payload is not an object")
    if kind == "slash_commands":
        for name in _COMMAND_FIELDS:
            if payload.get(name) is not None and not isinstance(payload[name], str):
                raise Malformed(f"the command's {name} is not text")
    elif kind == "interactive":
        check_payload(payload)
    elif kind == "events_api" and payload.get("event") is not None \
            and not isinstance(payload["event"], dict):
        raise Malformed("the event is not an object")


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Malformed(f"{what} is not JSON") from exc
    if not isinstance(value, dict):
        raise Malformed(f"{what} is not a JSON object")
    return value


def guarded(app: Asgi, path: str) -> Asgi:
    """`app` behind the shape check for POSTs to `path`; other requests pass untouched."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" \
                or scope.get("path") != path:
            await app(scope, receive, send)
            return
        try:
            body = await _read_body(receive)
            check_request(lambda name: _header(scope, name), body)
        except Malformed as exc:
            log.warning("slack: refused a malformed request (%s): %s", exc.status, exc)
            await _reply(send, exc.status, str(exc))
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the disconnect, when the client goes away

        await app(scope, replay, send)

    return guard


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Malformed("the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise Malformed("the body is too large", 413)
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _reply(send: Send, status: int, reason: str) -> None:
    data = f"{reason}\n".encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
