"""Weekly digests posted to a (loopback) Slack: counts two weeks in a row, no duplicates."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from slack_fake import FakeSlack
from sqlalchemy import select

from pagetrail.bot import blocks
from pagetrail.bot.digest_post import post_due_digests
from pagetrail.bot.posting import SlackPoster, web_client
from pagetrail.store import DigestRun
from pagetrail.tools.recovery.memory import add_watch
from pagetrail.tools.scan.scanner import ScanOptions

pytestmark = pytest.mark.testbed

WEEK_1 = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)  # a Monday
WEEK_2 = WEEK_1 + timedelta(days=7)


def digest_messages(fake: FakeSlack, channel: str) -> list[dict]:
    """Main digest messages (not thread replies, not failure notices)."""
    return [m for m in fake.messages(channel)
            if not m.get("thread_ts") and "Link-rot digest" in m.get("text", "")]


def counts_line(message: dict) -> str:
    return next(b["text"]["text"] for b in message["blocks"]
                if b["type"] == "section" and "links checked" in b["text"]["text"])


def test_two_weeks_of_digests_without_duplicates(store, testbed, tiny_world) -> None:
    fake = FakeSlack().start()
    try:
        settings = testbed.settings(confirm_failures=2, confirm_days=3, retries=0,
                                    database_url=store.url)
        poster = SlackPoster(web_client("xoxb-test", fake.api_url))
        add_watch(store, "C1", tiny_world.blog_page, by="U1")
        options = {"options": ScanOptions(depth=0, max_pages=5)}

        async def run(moment: datetime):
            return await post_due_digests(store, settings, poster, clock=lambda: moment,
                                          **options)

        # Week 1: the link to the moved article fails for the first time: suspect.
        outcomes = asyncio.run(run(WEEK_1))
        assert [o.status for o in outcomes] == ["posted"]
        [first] = digest_messages(fake, "C1")
        assert blocks.validate_blocks(first["blocks"]) == []
        line = counts_line(first)
        assert "*1* suspect" in line and "*0* confirmed dead" in line
        assert tiny_world.moved_from in json.dumps(first["blocks"])
        thread = [m for m in fake.messages("C1") if m.get("thread_ts")]
        assert thread and all(m["thread_ts"] == outcomes[0].ts for m in thread)
        assert tiny_world.moved_from in json.dumps(thread)

        # Same week again: nothing is scanned or posted twice.
        before = len(fake.messages())
        assert [o.status for o in asyncio.run(run(WEEK_1 + timedelta(hours=3)))] == ["skipped"]
        assert len(fake.messages()) == before

        # Week 2: Slack fails the digest post once; the channel is told, nothing is duplicated.
        fake.fail("chat.postMessage", status=200, retry_after=None,
                  body={"ok": False, "error": "fatal_error"})
        assert [o.status for o in asyncio.run(run(WEEK_2))] == ["failed"]
        assert any("could not be completed" in m.get("text", "") for m in fake.messages("C1"))
        assert len(digest_messages(fake, "C1")) == 1

        # The retry posts the digest that was built (a second failure a week later:
        # confirmed dead, with the recovered suggestion and a Use-this button).
        assert [o.status for o in asyncio.run(run(WEEK_2 + timedelta(hours=1)))] == ["posted"]
        assert [o.status for o in asyncio.run(run(WEEK_2 + timedelta(hours=2)))] == ["skipped"]
        messages = digest_messages(fake, "C1")
        assert len(messages) == 2
        second = messages[1]
        assert blocks.validate_blocks(second["blocks"]) == []
        line = counts_line(second)
        assert "*0* suspect" in line and "*1* confirmed dead" in line
        picks = [json.loads(b["accessory"]["value"]) for b in second["blocks"]
                 if b.get("accessory", {}).get("action_id") == blocks.ACTION_PICK]
        assert {"u": tiny_world.moved_from, "c": tiny_world.moved_to} in picks

        with store.session() as s:
            runs = s.scalars(select(DigestRun).where(DigestRun.channel == "C1")
                             .order_by(DigestRun.id)).all()
            assert [(r.period, r.status, r.posted) for r in runs] == [
                ("2030-W02", "posted", True), ("2030-W03", "posted", True)]
    finally:
        fake.stop()
