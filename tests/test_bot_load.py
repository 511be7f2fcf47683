"""Slack acks are never held up by CPU work (#20): while three `/fixlink signature` jobs parse
a 4.5 MB archived page (100,000 links), other people's commands are acked fast. Signed HTTP
to the running Bolt app; the archive is a loopback server (tests/heavy_archive.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from heavy_archive import HeavyArchive
from slack_fake import FakeSlack, ServerThread, command_body, post_signed

from pagetrail.bot.app import build_app
from pagetrail.bot.server import asgi_app
from pagetrail.store import Store
from pagetrail.tools.settings import Settings

SECRET = "load-signing-secret"
ACK_BOUND = 2.5  # generous: the point is "not seconds of parsing", Slack's limit is 3 s
HEAVY_JOBS = 3


@pytest.fixture
def heavy(tmp_path) -> Iterator[tuple[FakeSlack, ServerThread, HeavyArchive]]:
    archive = HeavyArchive().start()
    fake = FakeSlack().start()
    store = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    settings = Settings(archives=[archive.prefix], slack_api_url=fake.api_url,
                        SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                        database_url=store.url, search_engines=["site"], retries=0)
    server = ServerThread(asgi_app(build_app(settings, store, digests=False))).start()
    try:
        yield fake, server, archive
    finally:
        server.stop()
        fake.stop()
        archive.stop()
        store.dispose()


def test_acks_stay_fast_while_huge_pages_are_parsed(heavy) -> None:
    fake, server, archive = heavy
    for n in range(HEAVY_JOBS):
        body = command_body("/fixlink", f"signature https://8.8.8.8/big/{n}",
                            response_url=fake.response_url(f"heavy{n}"), user=f"U-heavy{n}")
        assert post_signed(server.url, SECRET, body).status_code == 200
    fake.wait_for(lambda: archive.captures >= 1, timeout=60)

    def answered() -> int:
        return sum(1 for n in range(HEAVY_JOBS) if fake.posts(f"/response/heavy{n}"))

    acks: list[float] = []
    deadline = time.monotonic() + 180
    while answered() < HEAVY_JOBS and time.monotonic() < deadline:
        body = command_body("/fixlink", "help", response_url=fake.response_url("h"),
                            user=f"U-light{len(acks)}")
        started = time.monotonic()
        response = post_signed(server.url, SECRET, body)
        acks.append(time.monotonic() - started)
        assert response.status_code == 200
        time.sleep(0.1)
    assert answered() == HEAVY_JOBS
    assert len(acks) >= 5, acks  # the light commands really ran alongside the heavy jobs
    assert max(acks) < ACK_BOUND, sorted(acks)[-5:]
    for n in range(HEAVY_JOBS):
        assert "solar" in str(fake.posts(f"/response/heavy{n}")[0].body)
