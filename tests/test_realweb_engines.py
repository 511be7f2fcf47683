"""Search engines' real failures, named per engine (#26 item 7): Google's spent daily quota,
Brave's 429 with X-RateLimit-* (per second vs per month), SearXNG with its backends down
(unresponsive_engines), DuckDuckGo's rate limit and bot challenge. Replayed on loopback
through the real fetch layer (and, for DuckDuckGo, through ddgs' own HTTP client); a partial
answer keeps the other engines' hits. Fixtures: tests/fixtures/realweb/SOURCES.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loopback import QuietHandler
from pydantic import SecretStr
from test_engines_support import Answer, local_server, loopback_settings, make_fetcher

from pagetrail.tools.engines.brave import BraveEngine, brave_failure
from pagetrail.tools.engines.ddgs_engine import DdgsEngine
from pagetrail.tools.engines.failures import QuotaExhausted
from pagetrail.tools.engines.google import GoogleEngine, google_failure
from pagetrail.tools.engines.searxng import SearxngEngine
from pagetrail.tools.engines.service import SearchService
from pagetrail.tools.errors import RateLimited
from pagetrail.tools.net.politeness import LocalHostLimiter

FIXTURES = Path(__file__).parent / "fixtures" / "realweb"
KEY = "sk-realweb-77c1"
SEARX_OK = {"query": "q", "results": [{"url": "https://news.example.org/2019/06/solar-farms",
                                       "title": "Solar farms double", "content": "solar"}],
            "unresponsive_engines": []}


def fixture(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((FIXTURES / name).read_text())


def answer(entry: dict) -> Answer:  # type: ignore[type-arg]
    return Answer(entry["status"], json.dumps(entry["body"]),
                  entry.get("headers") or {"Content-Type": "application/json"})


def handmade(key: str) -> Answer:
    return answer(fixture("handmade_engines.json")[key])


def service(engines, settings) -> SearchService:  # type: ignore[no-untyped-def]
    return SearchService(engines, settings=settings, limiter=LocalHostLimiter(rps=1000.0, concurrency=8),
                         max_retry_wait=5.0)


@pytest.mark.parametrize("name", ["issue_google_cse_429_site_restricted_queries.json",
                                  "issue_google_403_daily_limit.json"])
async def test_google_spent_quota_is_named_not_retried_and_the_others_answer(name) -> None:
    with local_server() as server:
        server.routes["/customsearch/v1"] = answer(fixture(name))
        server.routes["/search"] = Answer(200, json.dumps(SEARX_OK),
                                          {"Content-Type": "application/json"})
        settings = loopback_settings(retries=2)
        async with make_fetcher(settings) as fetcher:
            google = GoogleEngine(fetcher, SecretStr(KEY), "cx", base_url=server.base)
            outcome = await service([google, SearxngEngine(fetcher, server.base)],
                                    settings).search("solar farms")
        assert len(server.requests_to("/customsearch/v1")) == 1  # a spent quota is not retried
    [failure] = outcome.failures
    assert (failure.engine, failure.kind) == ("google", "quota")
    assert failure.error.startswith("engine_quota: google: daily quota spent")
    assert "per day" in failure.error or "Daily Limit" in failure.error
    assert KEY not in failure.error
    assert [h.url for h in outcome.hits["searxng"]] == [SEARX_OK["results"][0]["url"]]


def test_google_rate_and_refusal_are_told_apart() -> None:
    per_minute = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message":
                            "Quota exceeded for quota metric 'Queries' and limit 'Queries per "
                            "minute' of service 'customsearch.googleapis.com'",
                            "errors": [{"reason": "rateLimitExceeded"}]}}
    closed = {"error": {"code": 403, "status": "PERMISSION_DENIED", "message":
                        "This project does not have the access to Custom Search JSON API.",
                        "errors": [{"reason": "forbidden"}]}}
    assert isinstance(google_failure(429, {}, per_minute), RateLimited)
    refused = google_failure(403, {}, closed)
    assert refused is not None and refused.code == "engine_refused"
    assert google_failure(500, {}, "<html>") is None  # not Google's JSON: base decides


async def test_brave_per_second_limit_waits_its_reset_then_is_named() -> None:
    recorded = fixture("issue_brave_429_rate_limited.json")
    named = brave_failure(429, recorded["headers"], recorded["body"])
    assert isinstance(named, RateLimited) and named.retry_after == 1.0
    with local_server() as server:
        server.routes["/res/v1/web/search"] = answer(recorded)
        settings = loopback_settings(retries=1)
        async with make_fetcher(settings) as fetcher:
            brave = BraveEngine(fetcher, SecretStr(KEY), base_url=server.base)
            outcome = await service([brave], settings).search("solar farms")
        assert len(server.requests_to("/res/v1/web/search")) == 2  # retried once after 1 s
    [failure] = outcome.failures
    assert (failure.engine, failure.kind) == ("brave", "rate_limited")
    assert "RATE_LIMITED" in failure.error and "x-ratelimit-limit: 1, 2000" in failure.error


async def test_brave_spent_monthly_quota_is_a_quota_not_a_wait() -> None:
    with local_server() as server:
        server.routes["/res/v1/web/search"] = handmade("brave_monthly_quota")
        settings = loopback_settings(retries=2)
        async with make_fetcher(settings) as fetcher:
            brave = BraveEngine(fetcher, SecretStr(KEY), base_url=server.base)
            with pytest.raises(QuotaExhausted) as spent:
                await brave.search("solar")
            outcome = await service([brave], settings).search("solar farms")
        assert len(server.requests_to("/res/v1/web/search")) == 2  # once each: no retry
    assert spent.value.resets_in == 1209600.0 and "plan Free" in str(spent.value)
    assert outcome.failures[0].kind == "quota"


async def test_searxng_backends_down_are_named_and_the_rest_kept() -> None:
    with local_server() as server:
        server.routes["/search"] = handmade("searxng_partial")
        settings = loopback_settings(retries=0)
        async with make_fetcher(settings) as fetcher:
            outcome = await service([SearxngEngine(fetcher, server.base)], settings).search(
                "solar farms double")
    assert [h.url for h in outcome.hits["searxng"]] == [
        "https://news.example.org/2019/06/solar-farms"]
    assert {(f.engine, f.kind, f.error) for f in outcome.failures} == {
        ("searxng:google", "partial", "timeout"),
        ("searxng:duckduckgo", "partial", "Suspended: access denied"),
        ("searxng:brave", "partial", "Suspended: too many requests")}


async def test_searxng_with_every_backend_down_is_a_failure_not_no_results() -> None:
    with local_server() as server:
        settings = loopback_settings(retries=0)
        async with make_fetcher(settings) as fetcher:
            engine = SearxngEngine(fetcher, server.base)
            server.routes["/search"] = handmade("searxng_all_down")
            down = await service([engine], settings).search("solar farms double")
            server.routes["/search"] = handmade("searxng_no_results")
            empty = await service([engine], settings).search("zzqx nothing")
            server.routes["/search"] = Answer(403, "Forbidden", {"Content-Type": "text/plain"})
            refused = await service([engine], settings).search("solar")
    [failure] = down.failures
    assert failure.kind == "unavailable" and "google (CAPTCHA)" in failure.error
    assert empty.failures == [] and empty.hits["searxng"] == []  # truly nothing: no failure
    assert refused.failures[0].kind == "refused"
    assert "search.formats" in refused.failures[0].error


class DuckServer:
    """html.duckduckgo.com on loopback: answers each POST with the next queued answer."""

    def __init__(self, answers: list[tuple[int, bytes]]) -> None:
        from loopback import Loopback

        self.answers = answers
        self.posts = 0
        duck = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, body = duck.answers[min(duck.posts, len(duck.answers) - 1)]
                duck.posts += 1
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=UTF-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = Loopback(Handler)
        self.url = self.server.base + "/html/"


@pytest.mark.parametrize(("status", "page", "kind"), [
    (200, "handmade_ddg_anomaly.html", "challenge"),
    (202, "handmade_ddg_anomaly.html", "challenge"),
    (202, None, "rate_limited"),
    (403, None, "challenge"),
])
async def test_duckduckgo_limits_and_challenges_are_named(status, page, kind) -> None:
    body = (FIXTURES / page).read_bytes() if page else b""
    duck = DuckServer([(status, body)])
    try:
        engine = DdgsEngine(timeout=5, search_url=duck.url)
        outcome = await service([engine], loopback_settings(retries=0)).search("solar farms")
    finally:
        duck.server.close()
    [failure] = outcome.failures
    assert (failure.engine, failure.kind) == ("ddgs", kind)
    assert outcome.hits == {}


async def test_duckduckgo_results_and_a_true_empty_page() -> None:
    results = (FIXTURES / "handmade_ddg_results.html").read_bytes()
    duck = DuckServer([(200, results), (200, b"<html><body><div class='no-results'>No results."
                                             b"</div></body></html>")])
    try:
        engine = DdgsEngine(timeout=5, search_url=duck.url)
        hits = await engine.search("solar farms", limit=5)
        nothing = await engine.search("zzqx nothing", limit=5)
    finally:
        duck.server.close()
    assert [h.url for h in hits] == ["https://news.example.org/2019/06/solar-farms",
                                     "https://energy.example.com/solar"]
    assert nothing == []
