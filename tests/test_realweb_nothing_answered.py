"""A recovery in which every search engine (or every archive) failed is no evidence that the
page is lost: its answer says what failed — "no answer: every search engine failed (google:
quota, brave: quota)" —, never the plain "no archived copy and no live page fits", and every
face shows it (the CLI, MCP, Slack). A small loopback world: the dead page answers 404, the
archive refuses the site (the recorded "Blocked Site Error"), Google's daily quota is spent
(recorded), Brave's monthly quota is spent (handmade: tests/fixtures/realweb/SOURCES.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from archive_replay import ArchiveReplay, recorded
from mcp import Client

from pagetrail.tools.models import EngineFailure, Query
from pagetrail.tools.recovery.answer import none_reason, what_failed
from pagetrail.tools.settings import get_settings

REALWEB = Path(__file__).parent / "fixtures" / "realweb"


def realweb_answer(name: str, key: str | None = None) -> tuple[int, dict[str, str], bytes]:
    entry = json.loads((REALWEB / name).read_text())
    if key is not None:
        entry = entry[key]
    headers = entry.get("headers") or {"Content-Type": "application/json"}
    return int(entry["status"]), dict(headers), json.dumps(entry["body"]).encode()


def world(monkeypatch, archives_refuse: bool) -> Iterator[tuple[ArchiveReplay, str]]:
    def routes(key: str):
        if key == "/gone/solar-farms-2019":
            return 404, {"content-type": "text/html"}, b"<title>Not Found</title>"
        if key.startswith("/customsearch/v1"):
            return realweb_answer("issue_google_403_daily_limit.json")
        if key.startswith("/res/v1/web/search"):
            return realweb_answer("handmade_engines.json", "brave_monthly_quota")
        if archives_refuse and key.startswith(("/cdx/", "/web/")):
            return recorded("wayback_cdx_blocked_site")  # 403 "Blocked Site Error"
        if key.startswith("/cdx/"):  # the archive answers: it has no capture
            return 200, {"content-type": "application/json"}, b"[]"
        return None

    with ArchiveReplay(routes=routes) as replay:
        for name, value in {
            "ARCHIVES": replay.prefix, "ALLOW_HOSTS": "127.0.0.1", "NO_PROXY": "127.0.0.1",
            "RETRIES": "0", "SEARCH_ENGINES": "google,brave", "SEARCH_RPS": "200",
            "MAX_QUERIES": "4", "GOOGLE_API_KEY": "k-realweb-1", "GOOGLE_CX": "cx1",
            "GOOGLE_BASE_URL": replay.base, "BRAVE_API_KEY": "k-realweb-2",
            "BRAVE_BASE_URL": replay.base,
        }.items():
            monkeypatch.setenv(f"PAGETRAIL_{name}", value)
        get_settings.cache_clear()
        yield replay, f"{replay.base}/gone/solar-farms-2019"
    get_settings.cache_clear()


@pytest.fixture
def nothing_answers(monkeypatch) -> Iterator[tuple[ArchiveReplay, str]]:
    yield from world(monkeypatch, archives_refuse=True)


@pytest.fixture
def engines_fail(monkeypatch) -> Iterator[tuple[ArchiveReplay, str]]:
    yield from world(monkeypatch, archives_refuse=False)


async def test_every_engine_and_archive_failed_is_the_answer_s_reason(nothing_answers, store):
    from pagetrail import recover_link

    replay, dead = nothing_answers
    recovery = await recover_link(dead, settings=get_settings(), store=store, fresh=True)
    assert recovery.answer == "none"
    assert recovery.all_failed == ["search", "archives"]
    assert recovery.reason.startswith("no answer: every search engine failed (")
    assert "google: quota" in recovery.reason and "brave: quota" in recovery.reason
    assert "every archive failed (archive_excluded" in recovery.reason
    assert "no archived copy and no live page fits" not in recovery.reason
    assert replay.hits and any(k.startswith("/customsearch/v1") for k in replay.hits)


async def test_engines_failing_while_the_archive_answers_names_the_engines(engines_fail, store):
    from pagetrail import recover_link

    _replay, dead = engines_fail
    recovery = await recover_link(dead, settings=get_settings(), store=store, fresh=True)
    assert recovery.answer == "none" and recovery.all_failed == ["search"]
    assert recovery.reason == ("no answer: every search engine failed (google: quota, "
                               "brave: quota); no archived copy")


def test_cli_recover_prints_what_failed(nothing_answers, store, capsys, monkeypatch):
    from pagetrail.cli.main import main

    monkeypatch.setenv("COLUMNS", "400")  # one line a note: rich wraps at the terminal's width
    _replay, dead = nothing_answers
    assert main(["recover", dead, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "answer: none — no answer: every search engine failed (google: quota" in out


async def test_mcp_and_slack_show_what_failed(nothing_answers, store):
    from pagetrail import recover_link
    from pagetrail.bot.blocks import recovery_blocks
    from pagetrail.server.app import build_server

    _replay, dead = nothing_answers
    async with Client(build_server(get_settings(), store)) as client:
        result = await client.call_tool("recover_link", {"url": dead, "fresh": True})
    assert not result.is_error
    answer = result.structured_content or json.loads(result.content[0].text)
    assert answer["all_failed"] == ["search", "archives"]
    assert answer["reason"].startswith("no answer: every search engine failed")

    recovery = await recover_link(dead, settings=get_settings(), store=store, fresh=True)
    slack = json.dumps(recovery_blocks(recovery)["blocks"])
    assert "every search engine failed (google: quota, brave: quota)" in slack


def test_an_engine_that_answered_any_query_did_not_fail_them_all() -> None:
    failures = [EngineFailure(engine="google", error="engine_quota: …", kind="quota"),
                EngineFailure(engine="searxng:bing", error="timeout", kind="partial"),
                EngineFailure(engine="archive", error="https://a.example/web: "
                                                      "archive_unavailable: 503")]
    answered = [Query(text="solar", method="TITLE", engine="searxng")]
    failed = what_failed(failures, answered)
    assert failed.engines == {"google": "quota"} and not failed.engines_all
    assert failed.archives is None  # one archive's note among others that answered
    assert none_reason(failed, weak_anchor=False) == (
        "no archived copy and no live page fits (failed: google: quota)")
    alone = what_failed(failures, [])
    assert alone.engines_all and alone.all_failed() == ["search"]
