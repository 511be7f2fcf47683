"""The archive's own answers vs archived content, on answers recorded from the Wayback Machine
(tests/fixtures/archives/, sources in SOURCES.md), replayed through the real fetch layer."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from archive_replay import ArchiveReplay, cdx_rows, interactions, recorded, recorded_capture

from pagetrail.tools.archive.answers import captured_wall, classify
from pagetrail.tools.archive.memento import archived_redirects, fetch_memento, list_mementos
from pagetrail.tools.errors import ArchiveExcluded, ArchiveUnavailable
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.politeness import LocalBreaker, RedisBreaker

# --- classification (pure) ------------------------------------------------------------------

def test_excluded_page_served_with_200_is_the_archive_speaking():
    status, headers, body = recorded("wayback_excluded_url")
    answer = classify(status, headers, body)
    assert status == 200 and answer.kind == "excluded" and answer.refused
    assert "This URL has been excluded from the Wayback Machine" in answer.words


def test_blocked_site_on_cdx_is_named_with_the_archives_words():
    status, headers, body = recorded("wayback_cdx_blocked_site")
    answer = classify(status, headers, body)
    assert (status, answer.kind) == (403, "blocked")
    assert "Blocked Site Error" in answer.words


def test_captured_429_is_a_capture_not_throttling():
    status, headers, body = recorded("wayback_captured_429")
    answer = classify(status, headers, body)
    assert status == 429 and answer.kind == "capture" and not answer.unavailable


def test_not_archived_and_normal_capture():
    assert classify(*recorded("wayback_not_archived")).kind == "not_found"
    assert classify(*recorded("wayback_capture")).kind == "capture"
    # A captured redirect carries Memento-Datetime; the archive's own hop to the nearest
    # timestamp does not.
    assert classify(*recorded("wayback_archived_redirects", 1)).kind == "capture"
    assert classify(*recorded("wayback_archived_redirects", 0)).kind == "listing"


@pytest.mark.parametrize(("status", "headers", "kind", "wait"), [
    # handmade: no recording of the archive itself throttling with these headers was found
    (429, {"Retry-After": "120"}, "throttled", 120.0),
    (503, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, "throttled", 0.0),
    (503, {}, "down", None),
    (520, {}, "down", None),
    (523, {}, "down", None),
])
def test_throttling_and_outages(status, headers, kind, wait):
    answer = classify(status, httpx.Headers(headers), b"")
    assert answer.kind == kind and answer.unavailable
    assert answer.retry_after == wait


def test_captured_walls():
    assert captured_wall("Just a moment...", "Checking your browser before accessing x.")
    assert captured_wall("Too Many Requests", "")
    assert captured_wall("example.com is for sale", "")
    assert not captured_wall("Solar farms double in a year", "Solar farms doubled. " * 50)


# --- the fetch layer: an archived 429 is never retried -----------------------------------

async def test_fetch_layer_never_retries_an_archived_429():
    uri = interactions("wayback_captured_429")[0]["request"]["uri"]
    with ArchiveReplay("wayback_captured_429") as replay:
        async with Fetcher(replay.settings(retries=2)) as fetcher:
            response = await fetcher.get(replay.local(uri), endpoint=True)
        assert response.status == 429
        assert sum(replay.hits.values()) == 1  # one request: the capture is the answer


async def test_fetch_layer_retries_the_archive_throttling():
    # handmade: the archive's own 429 (no Memento-Datetime), Retry-After 0
    def routes(key: str):
        return 429, {"Retry-After": "0", "Content-Type": "text/html"}, b"slow down"

    with ArchiveReplay(routes=routes) as replay:
        async with Fetcher(replay.settings(retries=2)) as fetcher:
            response = await fetcher.get(f"{replay.prefix}/2015id_/http://x.example/",
                                         endpoint=True)
        assert response.status == 429 and sum(replay.hits.values()) == 3


# --- memento: exclusions and blocks are named, never a copy -----------------------------

async def test_excluded_url_is_archive_excluded_not_a_copy():
    uri = interactions("wayback_excluded_url")[0]["request"]["uri"]
    stamp, original = recorded_capture(uri)

    def listing(key: str):
        if key.startswith("/cdx/search/cdx"):
            return cdx_rows((stamp, original, "200", "text/html"))
        return None

    with ArchiveReplay("wayback_excluded_url", routes=listing) as replay:
        settings = replay.settings()
        async with Fetcher(settings) as fetcher:
            with pytest.raises(ArchiveExcluded) as caught:
                await fetch_memento(original, fetcher, settings=settings)
        assert caught.value.code == "archive_excluded"
        assert "This URL has been excluded from the Wayback Machine" in str(caught.value)


async def test_blocked_site_on_cdx_is_archive_excluded_everywhere():
    def blocked(key: str):  # every CDX query of the site gets the recorded answer
        if key.startswith("/cdx/search/cdx"):
            return recorded("wayback_cdx_blocked_site")
        return None

    with ArchiveReplay(routes=blocked) as replay:
        settings = replay.settings()
        async with Fetcher(settings) as fetcher:
            for lookup in (list_mementos("https://nationalpost.com/health", fetcher, settings),
                           fetch_memento("https://nationalpost.com/health", fetcher,
                                         settings=settings),
                           archived_redirects("https://nationalpost.com/health", fetcher,
                                              settings)):
                with pytest.raises(ArchiveExcluded, match="Blocked Site Error"):
                    await lookup
        assert not any(k.startswith("/web/timemap") for k in replay.hits)  # no second try


async def test_one_archive_refusing_does_not_sink_the_others(tmp_path):
    uri = interactions("wayback_excluded_url")[0]["request"]["uri"]
    stamp, original = recorded_capture(uri)

    def listing(key: str):
        if key.startswith("/cdx/search/cdx"):
            return cdx_rows((stamp, original, "200", "text/html"))
        return None

    with ArchiveReplay("wayback_excluded_url", routes=listing) as refusing, \
            ArchiveReplay(routes=lambda key: (404, {}, b"none")) as empty:
        settings = refusing.settings(archives=[refusing.prefix, empty.prefix])
        notes: list[str] = []
        async with Fetcher(settings) as fetcher:
            assert await fetch_memento(original, fetcher, settings=settings,
                                       unavailable=notes) is None
        assert len(notes) == 1 and "archive_excluded" in notes[0]
        assert "excluded from the Wayback Machine" in notes[0]


# --- captures of errors are skipped, not retried, and never call the archive down ---------

async def test_captured_429_is_skipped_as_a_copy_and_not_retried():
    uri = interactions("wayback_captured_429")[0]["request"]["uri"]
    stamp, original = recorded_capture(uri)

    def listing(key: str):
        if key.startswith("/cdx/search/cdx"):
            return cdx_rows((stamp, original, "-", "text/html"))
        return None

    with ArchiveReplay("wayback_captured_429", routes=listing) as replay:
        settings = replay.settings(retries=2)
        async with Fetcher(settings) as fetcher:
            for _ in range(4):  # four lookups: still no breaker, no ArchiveUnavailable
                assert await fetch_memento(original, fetcher, settings=settings) is None
        captured = [k for k in replay.hits if "id_/" in k]
        assert captured and all(replay.hits[k] == 4 for k in captured)


async def test_archived_redirects_followed_within_the_archive():
    first = interactions("wayback_archived_redirects")[0]["request"]["uri"]
    stamp, original = recorded_capture(first)

    def listing(key: str):
        if key.startswith("/cdx/search/cdx"):
            return cdx_rows((stamp, original, "302", "text/html"))
        return None

    with ArchiveReplay("wayback_archived_redirects", routes=listing) as replay:
        settings = replay.settings()
        async with Fetcher(settings) as fetcher:
            found = await archived_redirects(original, fetcher, settings)
        assert [r.target_url for r in found] == [
            "https://www.epa.gov/sites/production/files/signpost/cc.html"]


async def test_captured_redirect_to_a_login_is_not_a_move():
    first = interactions("wayback_redirect_to_login")[0]["request"]["uri"]
    stamp, original = recorded_capture(first)

    def listing(key: str):
        if key.startswith("/cdx/search/cdx"):
            return cdx_rows((stamp, original, "303", "text/html"))
        return None

    with ArchiveReplay("wayback_redirect_to_login", routes=listing) as replay:
        settings = replay.settings()
        async with Fetcher(settings) as fetcher:
            assert await archived_redirects(original, fetcher, settings) == []
        assert replay.hits  # the capture was read: its target was judged, not unseen


# --- real throttling: named, backed off, circuit opened -----------------------------------

async def test_throttling_archive_opens_its_circuit():
    # handmade: the archive's own 429 with Retry-After in seconds (no recording found)
    def routes(key: str):
        return 429, {"Retry-After": "120", "Content-Type": "text/html"}, b"Too Many Requests"

    with ArchiveReplay(routes=routes) as replay:
        settings = replay.settings()
        async with Fetcher(settings) as fetcher:
            with pytest.raises(ArchiveUnavailable, match="archive_unavailable"):
                await fetch_memento("https://news.example/a", fetcher, settings=settings)
            asked = sum(replay.hits.values())
            with pytest.raises(ArchiveUnavailable):
                await fetch_memento("https://news.example/b", fetcher, settings=settings)
        assert asked >= 1 and sum(replay.hits.values()) == asked  # not asked again


async def test_local_breaker_counts_and_opens():
    breaker = LocalBreaker(failures=3, cooldown=30)
    assert await breaker.failure("a") == 0 and await breaker.failure("a") == 0
    await breaker.success("a")  # a good answer: the count starts again
    assert await breaker.failure("a") == 0 and await breaker.failure("a") == 0
    assert await breaker.failure("a") == 30 and await breaker.open_for("a") > 29
    assert await breaker.failure("b", retry_after=300) == 300  # Retry-After: open at once
    assert await breaker.open_for("c") == 0


async def test_redis_breaker_is_shared_between_clients(redis_url):
    from pagetrail.tools.net.politeness import redis_client

    one = RedisBreaker(redis_client(redis_url), failures=2, cooldown=30)
    two = RedisBreaker(redis_client(redis_url), failures=2, cooldown=30)
    assert await one.failure("archive.test") == 0
    assert await two.open_for("archive.test") == 0
    assert await two.failure("archive.test") == pytest.approx(30, abs=1)
    assert await one.open_for("archive.test") > 25  # opened by the other process
    await asyncio.gather(one.client.aclose(), two.client.aclose())


def test_openwayback_runtime_error_header_names_the_refusal():
    status, headers, body = recorded("wayback_runtime_error_headers", 0)
    answer = classify(status, headers, body)
    assert (answer.kind, status) == ("excluded", 403)
    assert "Blocked By Robots" in answer.words
    status, headers, body = recorded("wayback_runtime_error_headers", 1)
    assert classify(status, headers, body).kind == "not_found"


def test_throttling_seen_by_one_worker_stops_the_others(redis_url):
    """Two workers (two event loops, two Redis clients): the one that met the archive's
    Retry-After opens the circuit for both; the other does not ask the archive at all."""
    import threading

    # handmade: the archive's own 429 with Retry-After in seconds
    def routes(key: str):
        return 429, {"Retry-After": "120", "Content-Type": "text/html"}, b"Too Many Requests"

    with ArchiveReplay(routes=routes) as replay:
        settings = replay.settings(redis_url=redis_url)

        async def lookup(path: str) -> str:
            async with Fetcher(settings) as fetcher:
                try:
                    await fetch_memento(f"https://news.example/{path}", fetcher,
                                        settings=settings)
                except ArchiveUnavailable as exc:
                    return str(exc)
            return "answered"

        first = asyncio.run(lookup("a"))
        asked = sum(replay.hits.values())
        second: list[str] = []
        worker = threading.Thread(target=lambda: second.append(asyncio.run(lookup("b"))))
        worker.start()
        worker.join(30)
    assert "archive_unavailable" in first and asked >= 1
    assert second and "archive_unavailable" in second[0]
    assert sum(replay.hits.values()) == asked  # the second worker never asked
