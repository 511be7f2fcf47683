"""Save Page Now 2 as it answers: recorded job statuses (pending → success), and the answers no
licensed recording was found for (tests/fixtures/archives/handmade_spn_answers.json), each
landing on a named outcome."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from archive_replay import FIXTURES, ArchiveReplay, cdx_rows, interactions

from pagetrail.tools.archive.spn import SavePageNow
from pagetrail.tools.net.fetch import Fetcher

JOB = "49eaab2f-b41e-4ee3-9950-81d26a3599f1"
URL = "https://time.gov/"
HANDMADE = json.loads((FIXTURES / "handmade_spn_answers.json").read_text())["answers"]


def handmade(name: str) -> tuple[int, dict[str, str], bytes]:
    answer = HANDMADE[name]
    if "text" in answer:
        return answer["status"], {"content-type": answer["content_type"]}, \
            answer["text"].encode()
    return answer["status"], {"content-type": "application/json"}, \
        json.dumps(answer["body"]).encode()


def recorded_status(index: int) -> tuple[int, dict[str, str], bytes]:
    response = interactions("spn_status_pending_success")[index]["response"]
    return response["status"], response["headers"], response["body"].encode()


class Spn:
    """Routes for one scenario: the POST's answer, the status answers in order, a listing."""

    def __init__(self, post: str, statuses: list[tuple[int, dict[str, str], bytes]] = (),
                 listing: list[tuple[str, str, str, str]] | None = None) -> None:
        self.post = post
        self.statuses = list(statuses)
        self.listing = listing

    def __call__(self, key: str):
        if key == "POST /save":
            return handmade(self.post)
        if key.startswith("/save/status/"):
            return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        if key.startswith("/cdx/search/cdx"):
            return cdx_rows(*(self.listing or []))
        return None


async def capture(routes: Spn, *urls: str):
    with ArchiveReplay(routes=routes) as replay:
        settings = replay.settings(
            spn_url=f"{replay.base}/save", ia_access_key="access", ia_secret_key="secret",
            spn_recent_days=0, spn_poll_interval=0.05, spn_job_seconds=10)
        async with Fetcher(settings) as fetcher:
            spn = SavePageNow(settings, fetcher)
            results = [await spn.capture(url) for url in urls]
        return results, replay


async def test_recorded_pending_then_success():
    [result], replay = await capture(Spn("post_job", [recorded_status(0), recorded_status(1)]),
                                     URL)
    assert result.status == "success" and result.job_id == JOB
    assert result.captured_at == datetime(2020, 9, 6, 21, 13, 29, tzinfo=UTC)
    assert "/20200906211329/https://time.gov/" in result.memento_url
    assert replay.hits[f"/save/status/{JOB}"] == 2  # polled while pending


async def test_same_snapshot_is_a_success_with_that_capture():
    [result], _ = await capture(Spn("post_same_snapshot",
                                    listing=[("20200906211329", URL, "200", "text/html")]), URL)
    assert result.status == "success"
    assert result.message.startswith("already_captured: The same snapshot had been made")
    assert "/20200906211329/https://time.gov/" in result.memento_url


async def test_daily_limit_is_named_and_stops_further_requests():
    results, replay = await capture(
        Spn("post_job", [handmade("status_too_many_daily_captures")]),
        URL, "https://time.gov/other")
    assert [r.status for r in results] == ["refused", "refused"]
    assert all(r.message.startswith("error:too-many-daily-captures: This URL has been "
                                    "already captured 10 times today") for r in results)
    assert replay.hits["POST /save"] == 1  # the second was not asked for


async def test_blocked_url_is_a_named_refusal():
    [result], _ = await capture(Spn("post_blocked_url"), URL)
    assert result.status == "refused" and result.message.startswith("error:blocked-url: ")


async def test_no_captures_is_a_named_error():
    [result], _ = await capture(Spn("post_job", [handmade("status_no_captures")]), URL)
    assert result.status == "error" and result.message.startswith("error:no-captures: ")


async def test_523_with_the_capture_in_the_listing_is_a_success():
    now = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    [result], replay = await capture(
        Spn("post_cloudflare_523", listing=[(now, URL, "200", "text/html")]), URL)
    assert result.status == "success" and f"/{now}/https://time.gov/" in result.memento_url
    assert "HTTP 523" in result.message and replay.hits["POST /save"] == 1


async def test_520_without_a_capture_is_archive_unavailable():
    [result], replay = await capture(
        Spn("post_cloudflare_520", listing=[("20200906211329", URL, "200", "text/html")]), URL)
    assert result.status == "error"
    assert result.message == "archive_unavailable: Save Page Now answered HTTP 520"
    assert replay.hits["POST /save"] == 1  # a POST is never repeated behind the caller's back


def test_outcome_names_for_counts_and_digests():
    from pagetrail.tools.archive.spn import outcome_name
    from pagetrail.tools.models import CaptureResult

    def named(status: str, message: str) -> str | None:
        return outcome_name(CaptureResult(url=URL, status=status, message=message))

    assert named("refused", "error:too-many-daily-captures: This URL has been already "
                            "captured 10 times today.") == "error:too-many-daily-captures"
    assert named("success", "already_captured: The same snapshot had been made") == \
        "already_captured"
    assert named("error", "archive_unavailable: Save Page Now answered HTTP 520") == \
        "archive_unavailable"
    assert named("success", "captured") is None and named("error", "") is None


async def test_queue_counts_named_outcomes():
    from pagetrail.tools.archive.spn import CaptureQueue

    with ArchiveReplay(routes=Spn("post_job", [handmade("status_too_many_daily_captures")])) \
            as replay:
        settings = replay.settings(
            spn_url=f"{replay.base}/save", ia_access_key="access", ia_secret_key="secret",
            spn_recent_days=0, spn_poll_interval=0.05, spn_job_seconds=10, spn_concurrency=1)
        async with Fetcher(settings) as fetcher:
            queue = CaptureQueue(SavePageNow(settings, fetcher), limit=5)
            queue.start()
            queue.offer(URL)
            queue.offer("https://time.gov/b")
            counts = await queue.close()
    assert counts == {"refused": 2, "error:too-many-daily-captures": 2}


def test_digest_names_save_page_now_outcomes():
    from pagetrail.tools.scan.digest import ScanDigest, scan_markdown, to_json

    digest = ScanDigest(target="https://site.example/", scan_id="s1", started_at="2026-01-01",
                        seconds=1.0, pages_crawled=1, links_found=3, urls_checked=3,
                        requests=3, captures={"success": 1, "refused": 2, "already_captured": 1,
                                              "error:too-many-daily-captures": 2})
    text = scan_markdown(digest)
    assert "Save Page Now: 1 success, 2 refused (already_captured: 1, " \
           "error:too-many-daily-captures: 2)." in text
    assert to_json(digest)["captures"]["error:too-many-daily-captures"] == 2


def test_slack_digest_names_save_page_now_outcomes_summed_over_watches():
    from pagetrail.bot.blocks import digest_blocks, validate_message
    from pagetrail.bot.digest_view import digest_view
    from pagetrail.tools.scan.digest import ChannelDigest, ScanDigest

    def scan(target: str, captures: dict[str, int]) -> ScanDigest:
        return ScanDigest(target=target, scan_id=target[-2:], started_at="2026-01-01",
                          seconds=1.0, pages_crawled=1, links_found=3, urls_checked=3,
                          requests=3, captures=captures)

    digest = ChannelDigest(channel="C1", period="2026-W02", scans=[
        scan("https://a.example/s1", {"success": 1, "refused": 1,
                                      "error:too-many-daily-captures": 1}),
        scan("https://b.example/s2", {"refused": 1, "error:too-many-daily-captures": 1,
                                      "already_captured": 1, "success": 1}),
    ])
    payload = digest_blocks(digest_view(digest))
    validate_message(payload)
    contexts = [element["text"] for block in payload["blocks"] if block["type"] == "context"
                for element in block["elements"]]
    assert "Save Page Now: 2 success, 2 refused (already_captured: 1, " \
           "error:too-many-daily-captures: 2)." in contexts
    quiet = digest_blocks(digest_view(ChannelDigest(channel="C1", period="2026-W02", scans=[
        scan("https://a.example/s1", {})])))
    assert "Save Page Now" not in json.dumps(quiet)
