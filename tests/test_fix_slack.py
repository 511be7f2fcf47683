"""The message shortcut "Fix links in this message": a signed request to the running Bolt
app, the verdicts posted in the message's thread (Slack's Web API answered by the loopback
fake), the engine against the testbed world."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml
from slack_fake import FakeSlack, ServerThread, post_signed

from pagetrail.bot import blocks
from pagetrail.bot.app import build_app
from pagetrail.bot.server import asgi_app
from pagetrail.bot.textcheck import CALLBACK_ID
from pagetrail.store import Store

pytestmark = pytest.mark.testbed
SECRET = "test-signing-secret"
MANIFEST = Path(__file__).resolve().parent.parent / "bot" / "manifest.yaml"


@pytest.fixture(scope="module")
def slack(testbed, tmp_path_factory) -> Iterator[tuple[FakeSlack, ServerThread]]:
    fake = FakeSlack().start()
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('shortcut') / 'bot.db'}")
    settings = testbed.settings(slack_api_url=fake.api_url, SLACK_BOT_TOKEN="xoxb-test",
                                SLACK_SIGNING_SECRET=SECRET, database_url=store.url)
    server = ServerThread(asgi_app(build_app(settings, store, digests=False))).start()
    try:
        yield fake, server
    finally:
        server.stop()
        fake.stop()
        store.dispose()


def shortcut_body(text: str, fake: FakeSlack) -> str:
    payload = {
        "type": "message_action", "callback_id": CALLBACK_ID, "trigger_id": "1.2.3",
        "team": {"id": "T1", "domain": "fake"}, "api_app_id": "A1", "token": "legacy",
        "user": {"id": "U1", "name": "ann"}, "channel": {"id": "C-fix", "name": "docs"},
        "message_ts": "1561939200.000100", "response_url": fake.response_url("s1"),
        "message": {"type": "message", "user": "U2", "ts": "1561939200.000100",
                    "text": text},
    }
    return urlencode({"payload": json.dumps(payload)})


def test_manifest_declares_the_message_shortcut():
    manifest = yaml.safe_load(MANIFEST.read_text())
    shortcut = manifest["features"]["shortcuts"][0]
    assert shortcut == {"name": "Fix links in this message", "type": "message",
                        "callback_id": CALLBACK_ID, "description": shortcut["description"]}


def test_fix_links_in_this_message_answers_in_the_thread(slack, tiny_world):
    fake, server = slack
    text = (f"The solar farm story <{tiny_world.moved_from}|is here> and "
            f"<{tiny_world.nxdomain_url}>.")
    response = post_signed(server.url, SECRET, shortcut_body(text, fake))
    assert response.status_code == 200
    posted = fake.wait_for(lambda: fake.messages("C-fix"), timeout=120)[0]
    assert posted["thread_ts"] == "1561939200.000100"
    assert blocks.validate_blocks(posted["blocks"]) == []
    shown = json.dumps(posted["blocks"])
    assert tiny_world.moved_from in shown and tiny_world.nxdomain_url in shown
    assert "dead, no answer found" in shown
    assert ("moved" in shown and tiny_world.moved_to in shown) or "archived copy" in shown


def test_a_bad_signature_is_refused(slack):
    fake, server = slack
    response = post_signed(server.url, "wrong-secret", shortcut_body("x", fake))
    assert response.status_code == 401
