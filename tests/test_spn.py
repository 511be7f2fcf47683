"""Save Page Now 2 (tools/archive/spn.py) against the testbed's SPN endpoint, whose captures pywb's
recorder writes into the world's collection: request building, keys, limits (concurrency,
daily cap, 429 with Retry-After), status polling, and scan → capture → memento.

A testbed of its own (not the session one): captures change the archive it serves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pagetrail.store import open_store
from pagetrail.store.captures import captures_of
from pagetrail.store.scans import get_scan
from pagetrail.tools.archive import spn as spn_module
from pagetrail.tools.archive.memento import fetch_memento, list_mementos
from pagetrail.tools.archive.spn import SavePageNow, auth_headers, save_form, status_url
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.scan.scanner import ScanOptions, scan
from pagetrail.tools.settings import Settings
from pagetrail.tools.testbed.runner import TestbedThread, start_in_thread
from pagetrail.tools.testbed.spn import TESTBED_KEYS
from pagetrail.tools.testbed.worldgen import WorldBuilder

SOURCE = "https://source.example/reading"
TARGET = "https://target.example/{}"
ARCHIVED = "https://target.example/archived"
FANNED = "https://source.example/fanned"  # its links are asked for by that test only


def _page(title: str, body: str = "", links: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><main>"
            f"<h1>{title}</h1><p>{body or title + ' text.'}</p>{links}</main></body></html>")


@pytest.fixture(scope="module")
def spn_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spn-world") / "w"
    b = WorldBuilder(root, name="spn")
    b.host("source.example")
    b.host("target.example")
    links = "".join(f'<a href="{u}">{u}</a> ' for u in
                    (TARGET.format("fresh"), ARCHIVED, TARGET.format("missing"),
                     "https://source.example/about"))
    b.page(SOURCE, _page("Reading list", "Links we like.", links))
    b.page(FANNED, _page("More reading", "Links for the fanned-out scan.", "".join(
        f'<a href="{u}">{u}</a> ' for u in (TARGET.format("f0"), TARGET.format("f1"),
                                           "https://source.example/about"))))
    b.page("https://source.example/", _page("Source"))
    b.page("https://target.example/", _page("Target"))
    b.page("https://source.example/about", _page("About us"))
    b.text("https://source.example/robots.txt", "User-agent: *\nAllow: /\n")
    b.text("https://target.example/robots.txt", "User-agent: *\nAllow: /\n")
    for name in ("fresh", "archived", "q0", "q1", "f0", "f1", *(f"p{i}" for i in range(15))):
        b.page(TARGET.format(name), _page(f"Target page {name}",
                                          f"The live text of target page {name}."))
    b.capture(ARCHIVED, "20190710000000", html=_page("Target page archived"))
    b.write()
    return root


@pytest.fixture(scope="module")
def spn_testbed(spn_world: Path) -> Iterator[TestbedThread]:
    handle = start_in_thread(spn_world)
    yield handle
    handle.stop()


@pytest.fixture
def tb(spn_testbed: TestbedThread) -> TestbedThread:
    service = spn_testbed.spn
    service.throttle(0)
    service.max_active = 4
    service.peak_active = 0
    service.received.clear()
    return spn_testbed


def _settings(tb: TestbedThread, tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"database_url": f"sqlite:///{tmp_path / 'p.db'}",
                                 "spn_poll_interval": 0.2, "spn_job_seconds": 30.0}
    values.update(overrides)
    return tb.settings(**values)


def _posts(tb: TestbedThread) -> list[object]:
    return [r for r in tb.spn.received if r.method == "POST"]


async def _capture(settings: Settings, *urls: str, store: bool = True,
                   clock: object = None) -> list[spn_module.CaptureResult]:
    opened = open_store(settings.database_url) if store else None
    async with Fetcher(settings) as fetcher:
        client = SavePageNow(settings, fetcher, opened,
                             **({"clock": clock} if clock else {}))  # type: ignore[arg-type]
        return list(await asyncio.gather(*(client.capture(u) for u in urls)))


# --- request building -----------------------------------------------------------------------

def test_request_building_sends_the_url_options_and_keys_only() -> None:
    settings = Settings(ia_access_key="AK", ia_secret_key="SK", spn_recent_days=30,
                        spn_url="https://web.archive.org/save")
    form = save_form("https://a.example/x?y=1", settings)
    assert form == {"url": "https://a.example/x?y=1", "skip_first_archive": "1",
                    "if_not_archived_within": "720h"}
    assert save_form("https://a.example/", settings, capture_all=True)["capture_all"] == "1"
    assert auth_headers(settings)["Authorization"] == "LOW AK:SK"
    assert auth_headers(Settings(ia_access_key="AK")) == {}  # half a key pair is none
    assert status_url(settings, "spn2-a/b") == "https://web.archive.org/save/status/spn2-a%2Fb"
    shown = settings.masked()
    assert "SK" not in str(shown) and shown["ia_secret_key"] == "********"


# --- round trip -------------------------------------------------------------------------------

def test_capture_is_recorded_by_pywb_and_found_by_memento_lookup(tb: TestbedThread,
                                                                 tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path)
    url = TARGET.format("p0")

    async def run() -> tuple[list[object], object, object]:
        async with Fetcher(settings) as fetcher:
            before = await list_mementos(url, fetcher, settings)
            [result] = await _capture(settings, url)
            memento = await fetch_memento(url, fetcher, settings=settings)
            return before, result, memento

    before, result, memento = asyncio.run(run())
    assert before == []  # never archived before
    assert result.status == "success", result.message
    assert memento is not None and memento.document is not None
    assert memento.memento_url == result.memento_url
    assert memento.datetime == result.captured_at
    assert memento.document.title == "Target page p0"
    [post] = _posts(tb)
    assert post.authorized and post.form["url"] == url
    assert any(r.path == f"/save/status/{result.job_id}" for r in tb.spn.received)
    [row] = captures_of(open_store(settings.database_url), url)
    assert (row.status, row.memento_url, row.job_id) == ("success", result.memento_url,
                                                        result.job_id)


def test_recent_captures_are_not_asked_for_again(tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path)
    url = TARGET.format("p1")
    [first] = asyncio.run(_capture(settings, url))
    [again] = asyncio.run(_capture(settings, url))
    assert first.status == "success"
    assert again.status == "skipped" and again.memento_url == first.memento_url
    assert len(_posts(tb)) == 1
    # Another store, no record of ours: the archive's own listing says it is recent.
    other = _settings(tb, tmp_path / "other")
    [listed] = asyncio.run(_capture(other, url))
    assert listed.status == "skipped" and listed.memento_url == first.memento_url
    assert len(_posts(tb)) == 1
    # ... and is remembered, so that the next time neither IA nor its index is asked.
    [row] = captures_of(open_store(other.database_url), url)
    assert (row.status, row.memento_url) == ("skipped", first.memento_url)
    assert row.requested_at == first.captured_at  # covers the URL while the capture is recent


def test_archive_capture_within_recent_days_skips_the_request(tb: TestbedThread,
                                                              tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_recent_days=30)
    in_2019 = datetime(2019, 7, 20, tzinfo=UTC)
    [result] = asyncio.run(_capture(settings, ARCHIVED, clock=lambda: in_2019))
    assert result.status == "skipped"
    assert "20190710000000" in result.memento_url
    assert _posts(tb) == []


# --- limits -----------------------------------------------------------------------------------

def test_429_waits_for_retry_after_then_captures(tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path)
    tb.spn.throttle(2, retry_after=1)
    started = time.monotonic()
    [result] = asyncio.run(_capture(settings, TARGET.format("p2")))
    assert result.status == "success", result.message
    assert len(_posts(tb)) == 3  # two answered 429, the third accepted
    assert time.monotonic() - started >= 2.0  # both Retry-After waits were honoured


def test_429_longer_than_the_budget_gives_up_without_retrying(tb: TestbedThread,
                                                              tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_job_seconds=3)
    tb.spn.throttle(1, retry_after=3600)
    [result] = asyncio.run(_capture(settings, TARGET.format("p3")))
    assert result.status == "refused" and "429" in result.message
    assert len(_posts(tb)) == 1
    [row] = captures_of(open_store(settings.database_url), TARGET.format("p3"))
    assert row.status == "refused"


def test_concurrent_captures_stay_within_the_account_limit(tb: TestbedThread,
                                                           tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_concurrency=2)
    urls = [TARGET.format(f"p{i}") for i in (4, 5, 6)]
    results = asyncio.run(_capture(settings, *urls))
    assert [r.status for r in results] == ["success"] * 3
    assert tb.spn.peak_active <= 2


def test_the_account_limit_holds_across_processes_sharing_the_store(
        tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_concurrency=1)
    store = open_store(settings.database_url)
    urls = [TARGET.format(f"q{i}") for i in range(2)]

    async def run() -> list[spn_module.CaptureResult]:
        # Two clients, as two worker processes would have: each its own slots.
        async with Fetcher(settings) as one, Fetcher(settings) as two:
            first, second = SavePageNow(settings, one, store), SavePageNow(settings, two, store)
            return list(await asyncio.gather(first.capture(urls[0]),
                                             second.capture(urls[1])))

    results = asyncio.run(run())
    assert [r.status for r in results] == ["success", "success"]
    assert tb.spn.peak_active == 1  # one capture at a time for the account


def test_server_session_limit_is_waited_out(tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_concurrency=3)
    tb.spn.max_active = 1
    urls = [TARGET.format(f"p{i}") for i in (7, 8)]
    results = asyncio.run(_capture(settings, *urls))
    assert [r.status for r in results] == ["success"] * 2
    assert tb.spn.peak_active == 1
    assert len(_posts(tb)) > 2  # at least one POST met error:user-session-limit


def test_daily_cap_counts_the_stores_requests(tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_daily_cap=1)
    [first] = asyncio.run(_capture(settings, TARGET.format("p9")))
    [second] = asyncio.run(_capture(settings, TARGET.format("p12")))
    assert first.status == "success"
    assert second.status == "refused" and "daily cap" in second.message
    assert len(_posts(tb)) == 1


def test_failed_capture_is_an_error_with_the_reason(tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path)
    [result] = asyncio.run(_capture(settings, TARGET.format("missing")))
    assert result.status == "error" and result.message.startswith("error:not-found")
    [row] = captures_of(open_store(settings.database_url), TARGET.format("missing"))
    assert row.status == "error" and row.job_id == result.job_id


def test_wrong_keys_are_an_error_and_never_shown(tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, ia_secret_key="not-the-secret")
    [result] = asyncio.run(_capture(settings, TARGET.format("p10"), store=False))
    assert result.status == "error" and "keys" in result.message
    assert "not-the-secret" not in result.message


def test_without_keys_it_says_so_once_and_carries_on(tb: TestbedThread, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spn_module, "_said_no_keys", False)
    settings = _settings(tb, tmp_path, ia_access_key=None, ia_secret_key=None)
    with caplog.at_level(logging.WARNING, logger="pagetrail.tools.archive.spn"):
        results = asyncio.run(_capture(settings, TARGET.format("p0"), TARGET.format("p1")))
    assert [r.status for r in results] == ["no_keys", "no_keys"]
    assert sum("no Internet Archive keys" in r.getMessage() for r in caplog.records) == 1
    assert tb.spn.received == []
    assert TESTBED_KEYS[1] not in caplog.text


def test_a_stopped_capture_is_not_left_pending(tb: TestbedThread, tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_job_seconds=60)
    store = open_store(settings.database_url)
    url = TARGET.format("p12")  # asked for once (daily cap test), refused there: not captured
    tb.spn.throttle(1, retry_after=30)

    async def run() -> dict[str, int]:
        async with Fetcher(settings) as fetcher:
            queue = spn_module.CaptureQueue(SavePageNow(settings, fetcher, store), limit=5)
            queue.start()
            assert queue.offer(url) and not queue.offer(url)  # once per URL
            await asyncio.sleep(1.0)  # the request met 429 and waits 30 s
            return await queue.close(timeout=0.5)

    counts = asyncio.run(run())
    assert counts == {"unfinished": 1}
    [row] = [c for c in captures_of(store, url)]
    assert row.status == "error" and "stopped" in row.message


# --- the scan hook ------------------------------------------------------------------------------

@pytest.mark.slow
def test_scan_asks_for_captures_of_new_outbound_links(tb: TestbedThread,
                                                      tmp_path: Path) -> None:
    settings = _settings(tb, tmp_path, spn_on_scan=True, spn_scan_max=1)
    store = open_store(settings.database_url)
    fresh = TARGET.format("fresh")
    options = ScanOptions(depth=0, max_pages=1)

    def posted() -> list[str]:
        return sorted(r.form["url"] for r in _posts(tb))

    first = asyncio.run(scan(SOURCE, store=store, settings=settings, options=options))
    # The live outbound links are wanted (not the dead one, not the same-site one; the
    # archived one too: its 2019 capture is older than spn_recent_days), one a scan here.
    [asked_first] = posted()
    assert asked_first in (fresh, ARCHIVED)
    assert first.captures == {"success": 1, "dropped": 1}
    # The next scan sees nothing new, but asks for the link still without a capture.
    tb.spn.received.clear()
    second = asyncio.run(scan(SOURCE, store=store, settings=settings, options=options))
    assert posted() == sorted({fresh, ARCHIVED} - {asked_first})
    assert second.captures == {"success": 1}
    tb.spn.received.clear()
    third = asyncio.run(scan(SOURCE, store=store, settings=settings, options=options))
    assert posted() == [] and third.captures == {}

    async def memento() -> object:
        async with Fetcher(settings) as fetcher:
            return await fetch_memento(fresh, fetcher, settings=settings)

    found = asyncio.run(memento())
    assert found is not None and found.document is not None
    assert found.document.title == "Target page fresh"
    assert found.datetime.year == datetime.now(UTC).year


def test_a_scan_fanned_out_over_page_jobs_asks_for_captures_too(tb: TestbedThread,
                                                                 tmp_path: Path) -> None:
    """The coordinator page job asks for the captures an in-process scan asks for (the
    working outbound links without a recent one), and the report counts them."""
    from test_scan_jobs import run_fanned_out

    from pagetrail.store.jobs import load_jobs
    from pagetrail.tools.workers.jobs import job_key

    settings = _settings(tb, tmp_path, spn_on_scan=True, spn_scan_max=5)
    store = open_store(settings.database_url)
    item = {"target": FANNED, "request": "fanned-spn", "depth": 0, "max_pages": 1,
            "same_site_only": False}
    asyncio.run(run_fanned_out(store, settings, item))
    assert sorted(r.form["url"] for r in _posts(tb)) == [TARGET.format("f0"),
                                                         TARGET.format("f1")]
    key = job_key("scan", item)
    assert load_jobs(store, "scan", [key])[key].status == "done"
    scan_row = get_scan(store, key)
    assert scan_row is not None and scan_row.summary["captures"] == {"success": 2}


# --- the faces: CLI, MCP, Slack -----------------------------------------------------------------

def test_cli_archive_prints_one_line_per_url(tb: TestbedThread, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from pagetrail.cli.main import main
    from pagetrail.tools.settings import get_settings

    for key, value in tb.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("PAGETRAIL_SPN_POLL_INTERVAL", "0.2")
    get_settings.cache_clear()
    url, dead = TARGET.format("p11"), TARGET.format("missing")
    code = main(["archive", url, dead])
    out = capsys.readouterr().out.splitlines()
    assert code == 1  # one of the two could not be captured
    assert out[0].startswith(f"success  {url}  ") and "/world/20" in out[0]
    assert out[1].startswith(f"error    {dead}") and "error:not-found" in out[1]
    assert main(["archive", "ftp://x.example/"]) == 2  # a bad URL: one line, exit 2


def test_mcp_archive_link_through_the_sdk_client(tb: TestbedThread, tmp_path: Path) -> None:
    from mcp import Client

    from pagetrail.server.app import build_server

    settings = _settings(tb, tmp_path)
    server = build_server(settings, open_store(settings.database_url))
    url = TARGET.format("p13")

    async def run() -> tuple[dict[str, object], object]:
        async with Client(server) as client:
            good = await client.call_tool("archive_link", {"urls": [url]})
            bad = await client.call_tool("archive_link", {"urls": ["http://169.254.169.254/latest"]})
            return good.structured_content, bad

    answer, refused = asyncio.run(run())
    [capture] = answer["captures"]
    assert capture["status"] == "success" and capture["memento_url"].endswith(url)
    assert refused.is_error and "refused_address" in refused.content[0].text


def test_slack_fixlink_archive(tb: TestbedThread, tmp_path: Path) -> None:
    from slack_fake import FakeSlack, ServerThread, command_body, post_signed

    from pagetrail.bot import blocks
    from pagetrail.bot.app import build_app
    from pagetrail.bot.server import asgi_app

    fake = FakeSlack().start()
    settings = _settings(tb, tmp_path, slack_api_url=fake.api_url, SLACK_BOT_TOKEN="xoxb-t",
                         SLACK_SIGNING_SECRET="s3cret")
    store = open_store(settings.database_url)
    server = ServerThread(asgi_app(build_app(settings, store))).start()
    try:
        url = TARGET.format("p14")
        body = command_body("/fixlink", f"archive <{url}>",
                            response_url=fake.response_url("arch"))
        response = post_signed(server.url, "s3cret", body)
        assert response.status_code == 200 and "capture" in response.text
        posts = fake.wait_for(lambda: fake.posts("/response/arch"), 60)
        answer = posts[0].body
    finally:
        server.stop()
        fake.stop()
    assert blocks.validate_blocks(answer["blocks"]) == []
    text = json.dumps(answer["blocks"])
    assert ":white_check_mark: archived" in text and "/world/20" in text
    assert answer["text"] == "1 of 1 archived"


def test_fixlink_archive_parsing() -> None:
    from pagetrail.bot.commands import CommandUsageError, parse_fixlink
    from pagetrail.tools.errors import RefusedAddress

    request = parse_fixlink("archive <https://a.example/x|a> https://b.example/")
    assert (request.action, request.url, request.candidates) == (
        "archive", "https://a.example/x", ("https://b.example/",))
    with pytest.raises(CommandUsageError, match="URL is missing"):
        parse_fixlink("archive")
    with pytest.raises(CommandUsageError, match="at most 5"):
        parse_fixlink("archive " + " ".join(f"https://a.example/{i}" for i in range(6)))
    with pytest.raises(RefusedAddress):
        parse_fixlink("archive http://10.0.0.1/")
