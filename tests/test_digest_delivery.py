"""tools.scan.digest_delivery through its DigestPoster seam, with a face that is not Slack: a
digest is posted once per channel and period, a thread that broke off is finished by the
next delivery from the stored run, and the runs' bookkeeping (store.digests) says so —
on SQLite and PostgreSQL (the `store` fixture)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from pagetrail.store.digests import add_run, is_posted, run_summaries
from pagetrail.tools.recovery.memory import add_watch
from pagetrail.tools.scan.digest import ChannelDigest, ScanDigest, period_of, to_json
from pagetrail.tools.scan.digest_delivery import post_due_digests
from pagetrail.tools.settings import get_settings

NOW = datetime(2030, 1, 9, 9, 0, tzinfo=UTC)


class Undelivered(Exception):
    pass


class ListPoster:
    """A face that keeps what it is given; `fail_reply` makes that reply fail once."""

    delivery_errors = (Undelivered,)

    def __init__(self) -> None:
        self.posted: list[tuple[str, Any]] = []
        self.fail_reply: int | None = None

    def thread(self, digest: ChannelDigest) -> list[str]:
        return [f"{digest.channel} page {n}" for n in range(3)]

    async def post_main(self, digest: ChannelDigest) -> str:
        self.posted.append((digest.channel, "main"))
        return f"ts-{len(self.posted)}"

    async def post_reply(self, channel: str, parent: str, page: Any) -> None:
        if self.fail_reply is not None and page.endswith(f"page {self.fail_reply}"):
            self.fail_reply = None
            raise Undelivered("the face dropped a reply")
        self.posted.append((channel, page))

    async def upload_chart(self, channel: str, period: str, png: bytes, alt_text: str) -> str:
        assert png.startswith(b"\x89PNG")
        self.posted.append((channel, "chart"))
        return "F1"

    async def say_failed(self, channel: str, period: str) -> None:
        self.posted.append((channel, "failed"))


def test_posted_once_and_a_broken_thread_finished(store) -> None:
    add_watch(store, "C1", "https://example.org/", by="U1")
    scans = [ScanDigest(target="https://example.org/", scan_id="s1",
                        started_at=NOW.isoformat(), seconds=1.0, pages_crawled=1,
                        links_found=3, urls_checked=3, requests=3, states={"ok": 3})]
    runs = 0

    async def runner(store_, settings, *, clock, **_options) -> list[ChannelDigest]:
        nonlocal runs
        runs += 1
        digest = ChannelDigest(channel="C1", period=period_of(clock()), scans=scans)
        digest.run_id = add_run(store_, "C1", digest.period, at=clock(), status="ready",
                                summary=to_json(digest))
        return [digest]

    poster = ListPoster()
    poster.fail_reply = 1

    def deliver() -> list[Any]:
        return asyncio.run(post_due_digests(store, get_settings(), poster,
                                            clock=lambda: NOW, runner=runner))

    [first] = deliver()
    assert (first.status, first.thread_pages) == ("partial", 0)
    assert poster.posted == [("C1", "main"), ("C1", "chart"), ("C1", "C1 page 0")]
    assert is_posted(store, "C1", period_of(NOW))

    finished, skipped = deliver()  # the thread resumes from the stored run, no new scan
    assert (finished.status, finished.thread_pages, finished.ts) == ("posted", 3, first.ts)
    assert skipped.status == "skipped"
    assert poster.posted[3:] == [("C1", "C1 page 1"), ("C1", "C1 page 2")]
    assert runs == 1

    assert [o.status for o in deliver()] == ["skipped"]  # nothing is posted twice
    assert len(poster.posted) == 5
    [summary] = run_summaries(store, "C1", ["posted"])
    assert summary["slack"] == {"ts": first.ts, "thread_pages": 3}
    assert summary["chart"]["file_id"] == "F1"
