"""Malformed and hostile Slack requests through the running app (signed HTTP to uvicorn):
each gets a fast 4xx (or an ephemeral error), nothing is leaked, nothing is a 500."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_fake import FakeSlack, ServerThread, action_body, command_body, signed_headers

from pagetrail.bot import blocks
from pagetrail.bot.app import BotApp, build_app
from pagetrail.bot.ratelimit import KeyedLimiter, Limit
from pagetrail.bot.server import asgi_app
from pagetrail.store import Store

pytestmark = pytest.mark.testbed

SECRET = "hostile-signing-secret"
FAST = 2.5  # seconds: far from any timing noise, well inside Slack's 3 s


class App:
    def __init__(self, fake: FakeSlack, server: ServerThread, bot_app: BotApp) -> None:
        self.fake, self.server, self.bot_app = fake, server, bot_app

    def post(self, body: bytes | str, *, signed: bool = True,
             headers: dict[str, str] | None = None,
             content_type: str = "application/x-www-form-urlencoded") -> tuple[httpx.Response,
                                                                                float]:
        raw = body.encode() if isinstance(body, str) else body
        sent = signed_headers(SECRET, raw.decode("latin-1"), content_type=content_type) \
            if signed else {"content-type": content_type}
        if signed and not raw.isascii():
            # Sign the exact bytes (Slack signs the raw body): v0:ts:body.
            import hashlib
            import hmac
            ts = sent["x-slack-request-timestamp"]
            digest = hmac.new(SECRET.encode(), b"v0:" + ts.encode() + b":" + raw,
                              hashlib.sha256).hexdigest()
            sent["x-slack-signature"] = f"v0={digest}"
        sent.update(headers or {})
        started = time.monotonic()
        response = httpx.post(self.server.url, content=raw, headers=sent, timeout=10)
        return response, time.monotonic() - started


@pytest.fixture(scope="module")
def app(testbed, tmp_path_factory) -> Iterator[App]:
    fake = FakeSlack().start()
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'bot.db'}")
    settings = testbed.settings(slack_api_url=fake.api_url, SLACK_BOT_TOKEN="xoxb-test",
                                SLACK_SIGNING_SECRET=SECRET, database_url=store.url,
                                retries=0)
    limiter = KeyedLimiter({"user": Limit(rate=50, burst=50),
                            "channel": Limit(rate=50, burst=50)}, max_queued=3)
    bot_app = build_app(settings, store, limiter=limiter, digests=False)
    server = ServerThread(asgi_app(bot_app)).start()
    try:
        yield App(fake, server, bot_app)
    finally:
        server.stop()
        fake.stop()
        store.dispose()


def _command(text: str, **fields: Any) -> str:
    body = {"team_id": "T1", "channel_id": "C1", "user_id": "U1", "command": "/fixlink",
            "text": text, "api_app_id": "A1", "trigger_id": "1.2.3", **fields}
    return urlencode({k: v for k, v in body.items() if v is not None})


def test_non_numeric_timestamp_is_a_4xx_not_a_500(app: App, caplog) -> None:
    body = _command("help", response_url=app.fake.response_url("t"))
    for value in ("abc", "1e9", "", "12 34", "-5"):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            response, seconds = app.post(body, signed=False,
                                         headers={"x-slack-request-timestamp": value,
                                                  "x-slack-signature": "v0=00"})
        assert 400 <= response.status_code < 500, (value, response.status_code)
        assert seconds < FAST
        assert "Traceback" not in caplog.text


def test_non_utf8_body_is_a_400(app: App) -> None:
    body = b"command=%2Ffixlink&text=" + b"\xff\xfe caf\xe9" + b"&response_url=x"
    response, _ = app.post(body)
    assert response.status_code == 400


def test_percent_encoded_non_utf8_is_a_400(app: App) -> None:
    response, _ = app.post(_command("%FF", response_url=app.fake.response_url("p")
                                    ).replace("text=%25FF", "text=%FF"))
    assert response.status_code == 400


@pytest.mark.parametrize("payload", ["not json", "[1, 2, 3]", "\"text\"", "42", "null", "{"])
def test_payload_that_is_not_a_json_object_is_a_400(app: App, payload: str) -> None:
    response, seconds = app.post(urlencode({"payload": payload}))
    assert response.status_code == 400 and seconds < FAST


@pytest.mark.parametrize("body", ["[]", "{", "\"x\""])
def test_json_body_that_is_not_an_object_is_a_400(app: App, body: str) -> None:
    response, _ = app.post(body, content_type="application/json")
    assert response.status_code == 400


@pytest.mark.parametrize("shape", [
    {"actions": "x"}, {"actions": [1]}, {"actions": [{"value": 5}]}, {"user": "U1"},
    {"channel": ["C1"]}, {"container": 7},
])
def test_button_payloads_of_odd_shapes_are_acked_never_500(app: App, shape) -> None:
    payload = json.loads(dict(_parse(action_body(
        blocks.ACTION_PICK, json.dumps({"u": "https://example.org/"}),
        response_url=app.fake.response_url("b"))))["payload"])
    payload.update(shape)
    response, _ = app.post(urlencode({"payload": json.dumps(payload)}))
    assert response.status_code < 500


def test_button_without_response_url_is_acked_and_ignored(app: App) -> None:
    payload = json.loads(dict(_parse(action_body(
        blocks.ACTION_MORE, json.dumps({"u": "https://example.org/"}),
        response_url=app.fake.response_url("nr"))))["payload"])
    del payload["response_url"]
    response, _ = app.post(urlencode({"payload": json.dumps(payload)}))
    assert response.status_code == 200
    assert not app.bot_app.bot.limiter._admitted


def _parse(body: str) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl
    return parse_qsl(body)


def test_a_command_without_response_url_is_refused_and_takes_no_queue_slot(
        app: App) -> None:
    for _ in range(6):  # twice the queue depth
        response, seconds = app.post(_command("check https://example.org/page"))
        assert response.status_code == 200 and seconds < FAST
        ack = response.json()
        assert ack["response_type"] == "ephemeral"
        assert "response_url" in json.dumps(ack)
    assert not app.bot_app.bot.limiter._admitted
    # The person can still ask: a well-formed command is admitted.
    good = command_body("/fixlink", "help", response_url=app.fake.response_url("ok"))
    response, _ = app.post(good)
    assert "too many" not in response.text.lower()


@pytest.mark.parametrize("where", ["javascript:x", "http://127.0.0.1:9/hook",
                                   "http://169.254.169.254/latest", "https://evil.example/x",
                                   "https://hooks.slack.com.evil.example/x",
                                   "http://hooks.slack.com/commands/x"])
def test_response_url_that_is_not_slacks_is_refused(app: App, where: str) -> None:
    response, _ = app.post(_command("check https://example.org/", response_url=where))
    assert response.status_code == 200
    assert "response_url" in json.dumps(response.json())
    assert not app.bot_app.bot.limiter._admitted


def test_link_markup_with_a_spaced_label_is_unwrapped(app: App) -> None:
    body = command_body("/fixlink", "check <https://example.org/old|the old page>",
                        response_url=app.fake.response_url("m"), user="U-markup")
    response, _ = app.post(body)
    ack = response.json()
    assert "invalid_url" not in json.dumps(ack)
    assert "Checking https://example.org/old" in ack["text"]


def test_slack_escapes_in_a_wrapped_url_are_undone(app: App) -> None:
    body = command_body("/fixlink", "check <https://example.org/a?x=1&amp;y=2|a &amp; b>",
                        response_url=app.fake.response_url("e"), user="U-escape")
    response, _ = app.post(body)
    assert "https://example.org/a?x=1&amp;y=2" in response.json()["text"]  # escaped once


def test_slacks_own_response_urls_are_accepted() -> None:
    from pagetrail.bot.handlers import reply_url
    from pagetrail.tools.settings import Settings

    settings = Settings()
    for url in ("https://hooks.slack.com/commands/T1/123/abc",
                "https://hooks.slack-gov.com/actions/T1/1/x"):
        assert reply_url({"response_url": url}, settings) == url


# --- Socket Mode: the same checks before Bolt ----------------------------------------------

class _SocketSide:
    """Slack's side of the socket, recorded (the internet: the only part stood in for)."""

    def __init__(self) -> None:
        self.responses: list[Any] = []
        self.logger = logging.getLogger("socket-side")

    async def send_socket_mode_response(self, response: Any) -> None:
        self.responses.append(response)


@pytest.mark.parametrize("kind,payload", [
    ("interactive", {"type": "block_actions", "actions": "x"}),
    ("interactive", {"type": "block_actions", "user": "U1", "actions": []}),
    ("interactive", {"type": ["block_actions"]}),
    ("slash_commands", {"command": ["/fixlink"], "text": "x"}),
    ("slash_commands", {"command": "/fixlink", "text": {"a": 1}}),
    ("events_api", {"event": "app_mention"}),
])
async def test_socket_mode_payloads_pass_the_same_guard(tmp_path, caplog, kind,
                                                        payload) -> None:
    from slack_sdk.socket_mode.request import SocketModeRequest

    from pagetrail.bot.server import guarded_socket_handler
    from pagetrail.tools.settings import Settings

    store = Store(f"sqlite:///{tmp_path / 'socket.db'}")
    settings = Settings(SLACK_BOT_TOKEN="xoxb-test", database_url=store.url)
    bot_app = build_app(settings, store, socket_mode=True, digests=False)
    handler = guarded_socket_handler(bot_app, "xapp-test")
    dispatched: list[Any] = []

    async def spy(request: Any) -> Any:  # Bolt's own dispatch, observed
        dispatched.append(request)
        raise AssertionError("a malformed payload reached Bolt")

    bot_app.app.async_dispatch = spy  # type: ignore[method-assign]
    side = _SocketSide()
    try:
        with caplog.at_level(logging.WARNING, logger="pagetrail.bot.server"):
            await handler.handle(side, SocketModeRequest(kind, "env-1", payload))
    finally:
        await handler.client.close()
        store.dispose()
    assert dispatched == []
    assert [r.envelope_id for r in side.responses] == ["env-1"]  # acknowledged, not retried
    assert any("malformed Socket Mode request" in r.getMessage() for r in caplog.records)


async def test_a_well_formed_socket_mode_command_reaches_bolt(tmp_path) -> None:
    from slack_sdk.socket_mode.request import SocketModeRequest

    from pagetrail.bot.server import guarded_socket_handler
    from pagetrail.tools.settings import Settings

    fake = FakeSlack().start()
    store = Store(f"sqlite:///{tmp_path / 'socket.db'}")
    settings = Settings(SLACK_BOT_TOKEN="xoxb-test", database_url=store.url,
                        slack_api_url=fake.api_url)
    bot_app = build_app(settings, store, socket_mode=True, digests=False)
    handler = guarded_socket_handler(bot_app, "xapp-test")
    side = _SocketSide()
    try:
        await handler.handle(side, SocketModeRequest("slash_commands", "env-2", {
            "command": "/fixlink", "text": "help", "user_id": "U1", "channel_id": "C1",
            "team_id": "T1", "response_url": fake.response_url("socket")}))
    finally:
        await handler.client.close()
        store.dispose()
        fake.stop()
    [response] = side.responses
    assert response.envelope_id == "env-2"
    assert "/fixlink signature URL" in json.dumps(response.payload)  # Bolt's help ack
