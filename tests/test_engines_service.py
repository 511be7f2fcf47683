"""SearchService: cache with expiry, retries honouring Retry-After, failure isolation, pacing;
the registry; the `pagetrail search` command."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr
from test_engines_support import Answer, Seen, local_server, loopback_settings, make_fetcher

from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.engines.brave import BraveEngine
from pagetrail.tools.engines.registry import build_engine_set, engine_names
from pagetrail.tools.engines.searxng import SearxngEngine
from pagetrail.tools.engines.service import SearchService
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.models import Hit


def searxng_answer(seen: Seen) -> Answer:
    query = seen.query["q"][0]
    return Answer(200, json.dumps({"query": query, "results": [
        {"url": f"https://r.example/{word}", "title": word, "content": ""}
        for word in query.split()]}))


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_cache_hit_makes_no_request_and_expires(store) -> None:
    settings = loopback_settings(search_cache_ttl=3600)
    clock = Clock()
    with local_server() as server:
        server.routes["/search"] = searxng_answer
        async with make_fetcher(settings) as fetcher:
            service = SearchService([SearxngEngine(fetcher, server.base)], store=store,
                                    settings=settings, clock=clock)
            first = await service.search("solar farms")
            second = await service.search("  Solar   FARMS ")  # same query, other spelling
            assert len(server.requests_to("/search")) == 1
            assert second.hits == first.hits and second.cached == {"searxng"}
            assert first.cached == set()
            # A different site is a different question.
            await service.search("solar farms", site="r.example")
            assert len(server.requests_to("/search")) == 2
            clock.now += timedelta(seconds=3601)
            third = await service.search("solar farms")
            assert len(server.requests_to("/search")) == 3 and third.cached == set()
        assert [h.url for h in first.hits["searxng"]] == [
            "https://r.example/solar", "https://r.example/farms"]
        assert all(isinstance(h, Hit) for h in second.hits["searxng"])


async def test_context_is_part_of_the_key_for_context_engines(store) -> None:
    from pagetrail.tools.engines.cdx import CdxEngine

    settings = loopback_settings()
    with local_server() as server:
        server.routes["/a/cdx"] = lambda seen: Answer(200, json.dumps(
            {"url": f"https://{seen.query['url'][0][:-2]}/solar-new", "timestamp": "20210101000000",
             "status": "200", "mime": "text/html"}))
        async with make_fetcher(settings) as fetcher:
            service = SearchService([CdxEngine.from_archives(fetcher, [f"{server.base}/a"])],
                                    store=store, settings=settings)
            one = await service.search("solar", context=SearchContext("https://a.example/x"))
            two = await service.search("solar", context=SearchContext("https://b.example/x"))
        assert one.hits["cdx"][0].url == "https://a.example/solar-new"
        assert two.hits["cdx"][0].url == "https://b.example/solar-new"
        assert two.cached == set()


async def test_429_with_retry_after_is_retried_then_succeeds(store) -> None:
    settings = loopback_settings(retries=2)
    with local_server() as server:
        calls: list[float] = []

        def limited_once(seen: Seen) -> Answer:
            calls.append(seen.at)
            if len(calls) == 1:
                return Answer(429, '{"error": "slow down"}', {"Retry-After": "1"})
            return searxng_answer(seen)

        server.routes["/search"] = limited_once
        async with make_fetcher(settings) as fetcher:
            service = SearchService([SearxngEngine(fetcher, server.base)], store=store,
                                    settings=settings)
            outcome = await service.search("wind power")
        assert outcome.failures == []
        assert next(h.url for h in outcome.hits["searxng"]) == "https://r.example/wind"
        assert len(calls) == 2 and calls[1] - calls[0] >= 0.95  # waited as told


async def test_retry_after_too_long_fails_at_once_and_is_not_cached(store) -> None:
    settings = loopback_settings(retries=3)
    with local_server() as server:
        server.routes["/search"] = Answer(429, "{}", {"Retry-After": "3600"})
        async with make_fetcher(settings) as fetcher:
            service = SearchService([SearxngEngine(fetcher, server.base)], store=store,
                                    settings=settings)
            started = time.monotonic()
            outcome = await service.search("q")
            assert time.monotonic() - started < 2
            assert [f.engine for f in outcome.failures] == ["searxng"]
            assert "rate_limited" in outcome.failures[0].error
            server.routes["/search"] = searxng_answer
            recovered = await service.search("q")
        assert recovered.hits["searxng"] and recovered.cached == set()


async def test_engine_down_fails_alone(store) -> None:
    settings = loopback_settings(retries=1)
    key = "brave-secret-123456"
    with local_server() as good, local_server() as bad:
        good.routes["/search"] = searxng_answer
        bad.routes["/res/v1/web/search"] = Answer(503, "down", {"Content-Type": "text/plain"})
        async with make_fetcher(settings) as fetcher:
            engines = [SearxngEngine(fetcher, good.base),
                       BraveEngine(fetcher, SecretStr(key), base_url=bad.base)]
            service = SearchService(engines, store=store, settings=settings, secrets=[key])
            outcome = await service.search("solar")
        assert [h.url for h in outcome.all_hits()] == ["https://r.example/solar"]
        assert [f.engine for f in outcome.failures] == ["brave"]
        assert "503" in outcome.failures[0].error and key not in outcome.failures[0].error
        assert len(bad.requests_to("/res/v1/web/search")) == 2  # first try + one retry
        assert service.calls == {"searxng": 1, "brave": 2}


class ExplodingEngine:
    name = "exploding"
    rate_limited = False
    uses_context = False

    async def search(self, query, *, site=None, limit=10, context=None):
        raise ValueError("a bug in an engine")


async def test_engine_bug_is_a_failure_not_a_crash() -> None:
    settings = loopback_settings()
    with local_server() as server:
        server.routes["/search"] = searxng_answer
        async with make_fetcher(settings) as fetcher:
            service = SearchService([ExplodingEngine(), SearxngEngine(fetcher, server.base)],
                                    settings=settings)
            outcome = await service.search("solar")
        assert outcome.failures[0].engine == "exploding"
        assert outcome.failures[0].error == "internal: ValueError"
        assert list(outcome.hits) == ["searxng"]


async def test_rate_limit_spaces_calls_to_one_engine() -> None:
    settings = loopback_settings(search_rps=5.0)  # one call every 0.2 s
    with local_server() as server:
        server.routes["/search"] = searxng_answer
        async with make_fetcher(settings) as fetcher:
            service = SearchService([SearxngEngine(fetcher, server.base)], settings=settings)
            import asyncio

            started = time.monotonic()
            await asyncio.gather(*(service.search(f"query {i}") for i in range(4)))
        arrivals = sorted(s.at for s in server.requests_to("/search"))
        # Slots start at +0, +0.2, +0.4, +0.6 s: the last call cannot arrive earlier (arrival
        # gaps themselves jitter with client-side delays, the slot schedule does not).
        assert len(arrivals) == 4 and arrivals[-1] - started >= 0.57, arrivals


# --- registry -----------------------------------------------------------------------------

async def test_registry_builds_known_engines_and_skips_keyless(store, monkeypatch) -> None:
    from pagetrail.tools.settings import Settings

    for name in ("PAGETRAIL_BRAVE_API_KEY", "PAGETRAIL_GOOGLE_CX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PAGETRAIL_GOOGLE_API_KEY", "g-key")  # the engine's own settings
    settings = Settings(search_engines=["searxng", "brave", "google", "site", "cdx", "local",
                                        "ddgs"],
                        searxng_url="http://127.0.0.1:1")
    async with make_fetcher(settings) as fetcher:
        built = build_engine_set(settings, fetcher, store)
        assert [e.name for e in built.engines] == ["searxng", "site", "cdx", "local", "ddgs"]
        assert any(n.startswith("brave skipped") for n in built.notes)
        assert any("GOOGLE_CX" in n for n in built.notes)  # key without cx is not enough
        assert all("g-key" not in n for n in built.notes)
        only = build_engine_set(settings, fetcher, None, ["local", "site"])
        assert [e.name for e in only.engines] == ["site"]
        with pytest.raises(ConfigError):
            build_engine_set(settings, fetcher, store, ["bing"])
        monkeypatch.setenv("PAGETRAIL_BRAVE_API_KEY", "b-key")
        keyed = build_engine_set(Settings(), fetcher, store, ["brave"])
        assert [e.name for e in keyed.engines] == ["brave"] and keyed.secrets == ["b-key"]
    assert set(engine_names()) >= {"searxng", "brave", "google", "ddgs", "site", "cdx", "local"}


# --- CLI --------------------------------------------------------------------------------------

def test_search_command_json(monkeypatch, tmp_path, capsys) -> None:
    from pagetrail.cli.main import main

    with local_server() as server:
        server.routes["/search"] = searxng_answer
        monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
        monkeypatch.setenv("PAGETRAIL_SEARXNG_URL", server.base)
        monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
        monkeypatch.setenv("PAGETRAIL_NO_PROXY", "127.0.0.1")
        code = main(["search", "solar farms", "--engine", "searxng", "--engine", "brave",
                     "--limit", "1", "--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        payload = json.loads(captured.out)
        assert [h["url"] for h in payload["hits"]["searxng"]] == ["https://r.example/solar"]
        assert payload["failures"] == [] and "brave skipped" in captured.err
        assert main(["search", "x", "--engine", "nope"]) == 2
        assert "config_error" in capsys.readouterr().err


async def test_hanging_engine_times_out_alone_and_blank_query_asks_nothing() -> None:
    settings = loopback_settings(retries=0)
    with local_server() as slow, local_server() as fast:
        def hang(seen: Seen) -> Answer:
            time.sleep(2.0)
            return searxng_answer(seen)

        slow.routes["/search"] = hang
        fast.routes["/search"] = searxng_answer
        async with make_fetcher(settings) as fetcher:
            service = SearchService(
                [SearxngEngine(fetcher, slow.base, name="slow"),
                 SearxngEngine(fetcher, fast.base)],
                settings=settings, attempt_timeout=0.5)
            started = time.monotonic()
            outcome = await service.search("solar")
            assert time.monotonic() - started < 1.5
            blank = await service.search("   ")
        assert [f.engine for f in outcome.failures] == ["slow"]
        assert "no answer within" in outcome.failures[0].error
        assert list(outcome.hits) == ["searxng"]
        assert blank.hits == {} and blank.failures == []
        assert len(fast.requests_to("/search")) == 1
