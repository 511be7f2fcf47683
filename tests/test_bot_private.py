"""One workspace (SLACK_BOT_TOKEN): the message shortcut answering privately when the bot
cannot post in the channel, and the App Home — signed requests to the running Bolt app,
Slack's Web API and response_url answered by the loopback fake."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_fake import FakeSlack, Recorded, ServerThread, post_signed, signed_headers

from pagetrail import Settings
from pagetrail.bot import blocks
from pagetrail.bot.app import build_app
from pagetrail.bot.server import asgi_app
from pagetrail.bot.textcheck import CALLBACK_ID
from pagetrail.store import Store

SECRET = "private-signing-secret"
NOT_IN_CHANNEL = {"ok": False, "error": "not_in_channel"}


@pytest.fixture(scope="module")
def slack(tmp_path_factory) -> Iterator[tuple[FakeSlack, ServerThread, Store]]:
    fake = FakeSlack().start()
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('private') / 'bot.db'}")
    settings = Settings(slack_api_url=fake.api_url, SLACK_BOT_TOKEN="xoxb-one",
                        SLACK_SIGNING_SECRET=SECRET, database_url=store.url)
    server = ServerThread(asgi_app(build_app(settings, store, digests=False))).start()
    try:
        yield fake, server, store
    finally:
        server.stop()
        fake.stop()
        store.dispose()


def shortcut(fake: FakeSlack, server: ServerThread, channel: str,
             response_url: str | None) -> None:
    payload: dict[str, Any] = {
        "type": "message_action", "callback_id": CALLBACK_ID, "trigger_id": "1.2.3",
        "team": {"id": "T1", "domain": "fake"}, "api_app_id": "A1", "token": "legacy",
        "user": {"id": "U1", "name": "ann"}, "channel": {"id": channel, "name": "docs"},
        "message_ts": "1561939200.000100",
        "message": {"type": "message", "user": "U2", "ts": "1561939200.000100",
                    "text": "nothing to check here"},
    }
    if response_url:
        payload["response_url"] = response_url
    body = urlencode({"payload": json.dumps(payload)})
    assert post_signed(server.url, SECRET, body).status_code == 200


def shown(record: Recorded) -> str:
    return json.dumps(record.body.get("blocks", "")) + str(record.body.get("text", ""))


def test_in_the_thread_when_the_bot_can_post(slack) -> None:
    fake, server, _store = slack
    shortcut(fake, server, "C-member", fake.response_url("member"))
    [posted] = fake.wait_for(lambda: [r for r in fake.posts("/api/chat.postMessage")
                                      if r.body.get("channel") == "C-member"])
    assert posted.body["thread_ts"] == "1561939200.000100"
    assert "No web links in this message." in shown(posted)
    assert fake.posts("/response/member") == []


def test_not_in_channel_answers_through_the_response_url_saying_why(slack) -> None:
    fake, server, _store = slack
    fake.fail("chat.postMessage", status=200, retry_after=None, body=NOT_IN_CHANNEL)
    shortcut(fake, server, "C-outside", fake.response_url("outside"))
    [private] = fake.wait_for(lambda: fake.posts("/response/outside"))
    assert private.body["response_type"] == "ephemeral"
    text = shown(private)
    assert "cannot post in" in text and "not_in_channel" in text
    assert "only you can see this" in text and "/invite @pagetrail" in text
    assert "No web links in this message." in text
    assert blocks.validate_blocks(private.body["blocks"]) == []


def test_then_an_ephemeral_message_then_a_direct_message(slack) -> None:
    fake, server, _store = slack
    # No response_url to use (it fails): chat.postEphemeral.
    fake.fail("chat.postMessage", status=200, retry_after=None, body=NOT_IN_CHANNEL)
    fake.fail("/response/gone", status=404, retry_after=None, body={"error": "expired"})
    shortcut(fake, server, "C-eph", fake.response_url("gone"))
    [ephemeral] = fake.wait_for(lambda: [r for r in fake.posts("/api/chat.postEphemeral")
                                         if r.body.get("channel") == "C-eph"])
    assert ephemeral.body["user"] == "U1" and "only you can see this" in shown(ephemeral)
    assert ephemeral.token == "bearer:xoxb-one"

    # Not even that (a private channel the bot is not in): a direct message, saying why.
    fake.fail("chat.postMessage", status=200, retry_after=None,
              body={"ok": False, "error": "channel_not_found"})
    fake.fail("chat.postEphemeral", status=200, retry_after=None,
              body={"ok": False, "error": "channel_not_found"})
    shortcut(fake, server, "C-private", None)
    [direct] = fake.wait_for(lambda: fake.messages("D-U1"))
    assert "as a direct message" in direct["text"] + json.dumps(direct["blocks"])
    assert "channel_not_found" in json.dumps(direct["blocks"])
    assert [r.body["users"] for r in fake.posts("/api/conversations.open")] == ["U1"]


def test_app_home_shows_the_channels_watches(slack) -> None:
    from pagetrail.store.watches import add_watch

    fake, server, store = slack
    add_watch(store, "C1", "https://docs.example.org/", key=str)
    add_watch(store, "C1", "https://blog.example.org/", key=str)
    body = json.dumps({"type": "event_callback", "team_id": "T1", "api_app_id": "A1",
                       "event": {"type": "app_home_opened", "user": "U5", "tab": "home",
                                 "channel": "D5"},
                       "event_id": "EvHome", "event_time": int(time.time())})
    response = httpx.post(server.url, content=body.encode(), timeout=10,
                          headers=signed_headers(SECRET, body, content_type="application/json"))
    assert response.status_code == 200
    [published] = fake.wait_for(lambda: fake.posts("/api/views.publish"))
    view = published.body["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert published.body["user_id"] == "U5" and view["type"] == "home"
    text = json.dumps(view["blocks"])
    assert "<#C1>" in text and "https://docs.example.org/" in text
    assert "https://blog.example.org/" in text and "No digest yet" in text
    assert blocks.validate_blocks(view["blocks"]) == []


def test_the_manifest_asks_for_the_scopes_the_install_flow_asks_for() -> None:
    import yaml

    from pagetrail.bot.app import REDIRECT_PATH

    manifest = yaml.safe_load((Path(__file__).resolve().parent.parent / "bot" /
                               "manifest.yaml").read_text())
    assert manifest["oauth_config"]["scopes"]["bot"] == Settings().slack_scopes
    assert all(url.endswith(REDIRECT_PATH) for url in manifest["oauth_config"]["redirect_urls"])
    assert set(manifest["settings"]["event_subscriptions"]["bot_events"]) == \
        {"app_home_opened", "app_uninstalled", "tokens_revoked"}
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
