"""The Slack app end to end: signed HTTP requests to the running app (uvicorn on loopback),
Slack's Web API and response_url answered by a loopback recorder, the engine against the
testbed world."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from slack_fake import (
    FakeSlack,
    ServerThread,
    action_body,
    command_body,
    post_signed,
)
from slack_sdk.signature import SignatureVerifier
from sqlalchemy import select

from pagetrail.bot import blocks
from pagetrail.bot.app import BotApp, build_app
from pagetrail.bot.ratelimit import KeyedLimiter, Limit
from pagetrail.bot.server import asgi_app
from pagetrail.store import Pick, Store, Watch

pytestmark = pytest.mark.testbed

SECRET = "test-signing-secret"
ACK_LIMIT = 3.0  # Slack's deadline for the acknowledgement


@dataclass
class Running:
    fake: FakeSlack
    server: ServerThread
    bot_app: BotApp
    store: Store
    world: Any
    counter: int = 0

    def command(self, command: str, text: str, *, user: str = "U1",
                channel: str = "C1") -> tuple[Any, str, float]:
        """Send a signed slash command; (HTTP response, its response_url name, seconds)."""
        self.counter += 1
        name = f"r{self.counter}"
        body = command_body(command, text, response_url=self.fake.response_url(name),
                            user=user, channel=channel)
        started = time.monotonic()
        response = post_signed(self.server.url, SECRET, body)
        return response, name, time.monotonic() - started

    def click(self, action_id: str, value: str, *, user: str = "U1",
              channel: str = "C1") -> tuple[Any, str]:
        self.counter += 1
        name = f"a{self.counter}"
        body = action_body(action_id, value, response_url=self.fake.response_url(name),
                           user=user, channel=channel)
        return post_signed(self.server.url, SECRET, body), name

    def answer(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        posts = self.fake.wait_for(lambda: self.fake.posts(f"/response/{name}"), timeout)
        return posts[0].body


@pytest.fixture(scope="module")
def running(testbed, tiny_world, tmp_path_factory) -> Iterator[Running]:
    fake = FakeSlack().start()
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('bot') / 'bot.db'}")
    settings = testbed.settings(
        slack_api_url=fake.api_url, SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET=SECRET, database_url=store.url,
        read_timeout=4.0, total_timeout=5.0, retries=0, recovery_seconds=20.0,
    )
    limiter = KeyedLimiter({"user": Limit(rate=2.0, burst=1), "channel": Limit(rate=50, burst=50)})
    bot_app = build_app(settings, store, limiter=limiter)
    server = ServerThread(asgi_app(bot_app)).start()
    try:
        yield Running(fake, server, bot_app, store, tiny_world)
    finally:
        server.stop()
        fake.stop()
        store.dispose()


def button_values(payload: dict[str, Any], action_id: str) -> list[dict[str, Any]]:
    found = []
    for block in payload.get("blocks", []):
        elements = block.get("elements", []) if block["type"] == "actions" else \
            [block["accessory"]] if "accessory" in block else []
        found += [json.loads(e["value"]) for e in elements if e.get("action_id") == action_id]
    return found


def all_text(payload: dict[str, Any]) -> str:
    return json.dumps(payload.get("blocks", [])) + payload.get("text", "")


# ------------------------------------------------------------------------ request verification


def test_bad_signature_is_rejected(running: Running) -> None:
    body = command_body("/fixlink", "help", response_url=running.fake.response_url("x"))
    forged = SignatureVerifier("not-the-secret").generate_signature(
        timestamp=str(int(time.time())), body=body)
    response = post_signed(running.server.url, SECRET, body, signature=forged)
    assert response.status_code == 401


def test_stale_timestamp_is_rejected(running: Running) -> None:
    body = command_body("/fixlink", "help", response_url=running.fake.response_url("x"))
    response = post_signed(running.server.url, SECRET, body,
                           timestamp=int(time.time()) - 10 * 60)  # signed, but replayed
    assert response.status_code == 401


# ------------------------------------------------------------------------ usage errors


@pytest.mark.parametrize(("text", "expected"), [
    ("", "URL is missing"),
    ("ftp://example.org/file", "only http and https"),
    ("http://10.1.2.3/admin", "private"),
    ("http://169.254.169.254/latest/meta-data", "cloud-metadata"),
    ("frobnicate https://example.org/", "unknown subcommand"),
])
def test_usage_errors_get_an_ephemeral_explanation(running: Running, text: str,
                                                   expected: str) -> None:
    response, name, seconds = running.command("/fixlink", text)
    assert response.status_code == 200 and seconds < ACK_LIMIT
    ack = response.json()
    assert ack["response_type"] == "ephemeral"
    assert expected in all_text(ack)
    time.sleep(0.2)
    assert not running.fake.posts(f"/response/{name}")  # nothing runs in the background


def test_help_is_answered_in_the_ack(running: Running) -> None:
    response, _name, _ = running.command("/fixlink", "help")
    assert "/fixlink signature URL" in all_text(response.json())
    assert not blocks.validate_blocks(response.json()["blocks"])


# ------------------------------------------------------------------------ /fixlink URL


def test_fixlink_finds_the_moved_page_and_buttons_record_picks(running: Running) -> None:
    world = running.world
    response, name, seconds = running.command("/fixlink", f"{world.moved_from} solar farm boom")
    assert response.status_code == 200 and seconds < ACK_LIMIT
    assert "Looking for where" in response.json()["text"]

    answer = running.answer(name)
    assert answer["response_type"] == "in_channel"
    assert blocks.validate_blocks(answer["blocks"]) == []
    picks = button_values(answer, blocks.ACTION_PICK)
    assert picks and picks[0] == {"u": world.moved_from, "c": world.moved_to}
    assert "Archived copy" in all_text(answer)

    # Use this: the pick is stored with who and where.
    click, clicked = running.click(blocks.ACTION_PICK, json.dumps(picks[0]), user="U7",
                                   channel="C9")
    assert click.status_code == 200
    confirmation = running.answer(clicked)
    assert "picked" in all_text(confirmation)
    with running.store.session() as s:
        rows = s.scalars(select(Pick).where(Pick.dead_url == world.moved_from)).all()
        assert [(p.chosen_url, p.by, p.where, p.via, p.rejected) for p in rows] == \
            [(world.moved_to, "U7", "C9", "slack", False)]

    # Not it: a rejection is stored.
    rejects = button_values(answer, blocks.ACTION_REJECT)
    click, clicked = running.click(blocks.ACTION_REJECT, json.dumps(rejects[-1]), user="U8")
    running.answer(clicked)
    with running.store.session() as s:
        rejected = s.scalars(select(Pick).where(Pick.rejected.is_(True))).all()
        assert [(p.chosen_url, p.by) for p in rejected] == [(rejects[-1]["c"], "U8")]


def test_untrusted_text_never_mentions_in_posted_answers_or_errors(running: Running) -> None:
    from test_bot_blocks import assert_no_mentions

    world = running.world
    hostile = "<!channel>|<@U0ADMIN><http://x|y>"
    # A recovery answer: the URL (and so the fallback text) carries the mentions.
    response, name, _ = running.command("/fixlink", f"{world.moved_from}?q={hostile}",
                                        user="U-hostile")
    ack = response.json()
    assert "&lt;!channel&gt;" in ack["text"] and "<!channel>" not in ack["text"]
    answer = running.answer(name)
    assert blocks.validate_blocks(answer["blocks"]) == []
    assert_no_mentions(answer)
    assert "&lt;!channel&gt;|&lt;@U0ADMIN&gt;" in answer["text"]
    # Errors, in the ack.
    response, _n, _ = running.command(
        "/fixlink", f"memento {world.moved_from} x{hostile}", user="U-hostile")
    assert "not a date" in all_text(response.json())
    assert_no_mentions(response.json())
    # An in-channel watch confirmation echoes the target.
    response, _n, _ = running.command("/linkrot", f"watch https://blog.example.org/{hostile}",
                                      channel="C-hostile")
    assert "<!channel>" not in response.json()["text"]
    assert "<@U0ADMIN>" not in response.json()["text"]


def test_show_more_pages_through_the_candidates(running: Running) -> None:
    world = running.world
    _response, name, _ = running.command("/fixlink", world.archived_only, user="U-more")
    answer = running.answer(name)
    assert blocks.validate_blocks(answer["blocks"]) == []
    value = json.dumps({"u": world.archived_only, "o": 3, "a": ""})
    click, clicked = running.click(blocks.ACTION_MORE, value, user="U-more")
    assert click.status_code == 200
    more = running.answer(clicked)
    assert more["response_type"] == "ephemeral"
    assert blocks.validate_blocks(more["blocks"]) == []
    assert "candidate-1" not in all_text(more)  # the next page, not the first again


def test_alive_and_redirected_links_get_that_answer(running: Running) -> None:
    world = running.world
    _r, alive, _ = running.command("/fixlink", world.news_root, user="U-alive")
    _r, moved, _ = running.command("/fixlink", world.live_redirect, user="U-redirect")
    assert "This link works" in all_text(running.answer(alive))
    redirected = running.answer(moved)
    assert "This link redirects" in all_text(redirected)
    assert button_values(redirected, blocks.ACTION_PICK)[0]["c"] == world.moved_to


def test_ack_is_fast_when_the_recovery_is_slow(running: Running) -> None:
    started = time.monotonic()
    response, name, seconds = running.command("/fixlink", running.world.timeout_url,
                                              user="U-slow")
    assert response.status_code == 200
    assert seconds < ACK_LIMIT
    answer = running.answer(name, timeout=90)
    took = running.fake.posts(f"/response/{name}")[0].at - started
    assert took > ACK_LIMIT  # the work really outlasted Slack's deadline
    assert blocks.validate_blocks(answer["blocks"]) == []


# ------------------------------------------------------------------------ primitives


@pytest.mark.parametrize(("template", "expected"), [
    ("check {moved_from}", "Link check"),
    ("memento {moved_from} 2019-12-31", "Archived copy"),
    ("signature {moved_from}", "LS5"),
    ("tags {moved_from}", "Tags"),
    ("search solar farms", "Search"),
    ("rank {moved_from} {moved_to} {wind_page}", "Ranked candidates"),
    ("related {moved_from}", ""),
])
def test_primitives_answer_with_valid_blocks(running: Running, template: str,
                                             expected: str) -> None:
    world = running.world
    text = template.format(moved_from=world.moved_from, moved_to=world.moved_to,
                           wind_page=world.wind_page)
    response, name, seconds = running.command("/fixlink", text, user=f"U-{template[:4]}")
    assert response.status_code == 200 and seconds < ACK_LIMIT
    answer = running.answer(name)
    assert blocks.validate_blocks(answer["blocks"]) == []
    assert expected in all_text(answer)
    if template.startswith("rank"):
        ranked = button_values(answer, blocks.ACTION_PICK)
        assert ranked[0]["c"] == world.moved_to  # the moved page beats the unrelated one


def test_slack_429_on_response_url_is_retried(running: Running) -> None:
    running.counter += 1
    name = f"r{running.counter}-429"
    running.fake.fail(f"/response/{name}", status=429, retry_after=1)
    body = command_body("/fixlink", f"check {running.world.news_root}",
                        response_url=running.fake.response_url(name), user="U-429")
    assert post_signed(running.server.url, SECRET, body).status_code == 200
    attempts = running.fake.wait_for(
        lambda: [r for r in running.fake.posts(f"/response/{name}", ok_only=False)
                 if r.status == 200] and running.fake.posts(f"/response/{name}", ok_only=False))
    assert [r.status for r in attempts] == [429, 200]
    assert attempts[1].at - attempts[0].at >= 1.0  # waited for Retry-After


def test_a_burst_is_queued_not_dropped(running: Running) -> None:
    names = []
    acks = []
    for _ in range(4):
        response, name, seconds = running.command(
            "/fixlink", f"check {running.world.news_root}", user="U-burst")
        assert seconds < ACK_LIMIT
        acks.append(response.json()["text"])
        names.append(name)
    assert any("queued" in text for text in acks[1:])
    answers = [running.fake.wait_for(lambda n=n: running.fake.posts(f"/response/{n}"))[0]
               for n in names]
    assert len(answers) == 4
    times = sorted(a.at for a in answers)
    assert times[-1] - times[0] >= 1.0  # 2 per second for one person: spread out, all served


def test_a_flood_beyond_the_queue_cap_is_refused(running: Running) -> None:
    limiter = running.bot_app.bot.limiter
    saved = (limiter.max_queued, dict(limiter.limits))
    # One token every 2 s for this person: the flood below outruns it by far.
    limiter.max_queued = 2
    limiter.limits["user"] = Limit(rate=0.5, burst=1)
    try:
        sent = []
        for _ in range(6):
            response, name, seconds = running.command(
                "/fixlink", f"check {running.world.news_root}", user="U-flood")
            assert response.status_code == 200 and seconds < ACK_LIMIT
            sent.append((name, response.json()))
        refused = [(n, ack) for n, ack in sent if "try again in a minute" in ack["text"]]
        accepted = [n for n, ack in sent if "try again in a minute" not in ack["text"]]
        # The first runs at once, two wait their turn; the rest are refused, ephemerally.
        assert len(accepted) == 3 and len(refused) == 3
        assert all(ack["response_type"] == "ephemeral" and "queued" in ack["text"]
                   for _n, ack in refused)
        for name in accepted:
            assert "Link check" in all_text(running.answer(name))
        time.sleep(0.5)
        assert all(not running.fake.posts(f"/response/{n}") for n, _ack in refused)
        # Once the queue has drained, the person is served again.
        response, name, _ = running.command("/fixlink", f"check {running.world.news_root}",
                                            user="U-flood")
        assert "try again" not in response.json()["text"]
        assert "Link check" in all_text(running.answer(name))
    finally:
        limiter.max_queued, limiter.limits = saved[0], saved[1]


# ------------------------------------------------------------------------ /linkrot


def test_linkrot_watch_list_unwatch(running: Running) -> None:
    site = "blog.example.org"
    response, _n, _ = running.command("/linkrot", f"watch {site}", channel="C-watch")
    assert "now watches https://blog.example.org/" in response.json()["text"]
    response, _n, _ = running.command("/linkrot", f"watch {site}", channel="C-watch")
    assert "already watches" in response.json()["text"]
    response, _n, _ = running.command("/linkrot", "list", channel="C-watch")
    assert "https://blog.example.org/" in all_text(response.json())
    with running.store.session() as s:
        assert s.scalars(select(Watch.target).where(Watch.channel == "C-watch")).all() == \
            ["https://blog.example.org/"]
    response, _n, _ = running.command("/linkrot", f"unwatch {site}", channel="C-watch")
    assert "no longer watches" in response.json()["text"]
    response, _n, _ = running.command("/linkrot", "watch http://10.0.0.7/x", channel="C-watch")
    assert response.json()["response_type"] == "ephemeral"
    assert "private" in all_text(response.json())


def test_linkrot_digest_now_posts_to_the_channel(running: Running) -> None:
    page = running.world.blog_page
    running.command("/linkrot", f"watch {page}", channel="C-digest")
    response, _name, seconds = running.command("/linkrot", "digest now", channel="C-digest")
    assert seconds < ACK_LIMIT and "Running the link-rot digest" in response.json()["text"]
    posted = running.fake.wait_for(lambda: running.fake.messages("C-digest"), timeout=120)
    main = posted[0]
    assert blocks.validate_blocks(main["blocks"]) == []
    assert "Link-rot digest" in all_text(main)


def test_event_url_verification_and_events(running: Running) -> None:
    import httpx
    from slack_fake import signed_headers

    challenge = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "x"})
    response = httpx.post(running.server.url, content=challenge.encode(),
                          headers=signed_headers(SECRET, challenge,
                                                 content_type="application/json"))
    assert response.status_code == 200 and response.json()["challenge"] == "c-123"
    event = json.dumps({"type": "event_callback", "team_id": "T1", "api_app_id": "A1",
                        "event": {"type": "app_uninstalled"}, "event_id": "Ev1",
                        "event_time": int(time.time())})
    response = httpx.post(running.server.url, content=event.encode(),
                          headers=signed_headers(SECRET, event, content_type="application/json"))
    assert response.status_code == 200
