"""Testbed format 2 (FORMAT.md, "Version 2") served by the running runner: coverage, result
caps, popularity order, the shared rate limit; format 1 unchanged; unknown formats refused."""

from __future__ import annotations

import json
import math
import ssl
import time

import httpx
import pytest

from pagetrail.tools.errors import WorldError
from pagetrail.tools.testbed.runner import start_in_thread
from pagetrail.tools.testbed.search import TokenBucket, retry_after_header
from pagetrail.tools.testbed.world import load_world
from pagetrail.tools.testbed.worldgen import WorldBuilder

HOST = "https://www.port.example"
FILLER = ("The town council met on Tuesday to discuss parking, the budget for schools and "
          "the new bus timetable; residents asked about street lights and bins. ")


def _html(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{body}</p></body></html>")


def _port_world(root, *, version: int, search: dict | None = None):
    b = WorldBuilder(root, name=f"port{version}", format=version, search=search)
    b.host("www.port.example")
    b.page(f"{HOST}/", _html("Port", "Welcome to the port town."))
    # The page a searcher wants: all about the harbour lighthouse, nobody links to it.
    b.page(f"{HOST}/lighthouse", _html("Harbour lighthouse restored",
                                       "The harbour lighthouse was restored. " * 8),
           popularity=0)
    # A popular page that mentions the lighthouse once among other news.
    b.page(f"{HOST}/news", _html("Town news", FILLER * 6 + " The harbour lighthouse opens."),
           popularity=50000)
    # The best match of all, but the engine has not indexed it.
    b.page(f"{HOST}/keeper", _html("Harbour lighthouse keeper harbour lighthouse",
                                   "harbour lighthouse keeper " * 12), indexed=False)
    for i in range(6):
        b.page(f"{HOST}/harbour-{i}", _html(f"Harbour notice {i}", f"Harbour notice {i}. {FILLER}"))
    return b.write()


def _search(bed, query: str, pageno: int = 1) -> httpx.Response:
    return httpx.get(f"{bed.search_url}/search",
                     params={"q": query, "format": "json", "pageno": pageno}, timeout=10)


def _urls(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["url"] for r in response.json()["results"]]


V2_SEARCH = {"results_per_page": 2, "max_pages": 3, "popularity_weight": 2.0}


@pytest.fixture(scope="module")
def bed_v2(tmp_path_factory):
    handle = start_in_thread(_port_world(tmp_path_factory.mktemp("v2") / "w", version=2,
                                         search=V2_SEARCH))
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def bed_v1(tmp_path_factory):
    # The same pages in a version-1 world: `indexed`/`popularity` are not part of format 1.
    handle = start_in_thread(_port_world(tmp_path_factory.mktemp("v1") / "w", version=1))
    try:
        yield handle
    finally:
        handle.stop()


def test_unindexed_page_is_never_a_result_but_still_served(bed_v2):
    for query in ("harbour lighthouse keeper", "keeper", "harbour", "site:www.port.example"):
        for page in (1, 2, 3):
            assert f"{HOST}/keeper" not in _urls(_search(bed_v2, query, page))
    proxied = httpx.get(f"{HOST}/keeper", proxy=bed_v2.proxy_url, verify=ssl.create_default_context(cafile=bed_v2.ca_bundle),
                        timeout=10)
    assert proxied.status_code == 200 and "keeper" in proxied.text


def test_result_pages_are_capped(bed_v2):
    pages = [_search(bed_v2, "harbour", n) for n in (1, 2, 3, 4)]
    urls = [_urls(p) for p in pages]
    assert [len(u) for u in urls] == [2, 2, 2, 0]  # 2 a page, 3 pages, then nothing
    assert len({u for page in urls for u in page}) == 6  # no page repeats another's results
    # number_of_results stays the full count: 8 indexed pages hold "harbour".
    assert all(p.json()["number_of_results"] == 8 for p in pages)


def test_popularity_lifts_a_popular_page_above_a_better_match(bed_v2, bed_v1):
    v2 = _urls(_search(bed_v2, "harbour lighthouse"))
    assert v2[:2] == [f"{HOST}/news", f"{HOST}/lighthouse"]
    v1 = _urls(_search(bed_v1, "harbour lighthouse"))
    assert v1.index(f"{HOST}/lighthouse") < v1.index(f"{HOST}/news")


def test_format_1_is_unchanged(bed_v1):
    """Version 1: every live page indexed (`indexed: false` means nothing), 10 results a
    page, no page cap, no rate limit."""
    assert f"{HOST}/keeper" in _urls(_search(bed_v1, "keeper"))
    first = _search(bed_v1, "harbour")
    assert len(_urls(first)) == 9 and first.json()["number_of_results"] == 9
    assert _urls(_search(bed_v1, "harbour", 2)) == []
    assert all(_search(bed_v1, "harbour").status_code == 200 for _ in range(30))


def test_rate_limit_answers_429_with_retry_after(tmp_path):
    root = _port_world(tmp_path / "w", version=2,
                       search={"rate_limit": {"per_second": 1, "burst": 3}})
    bed = start_in_thread(root)
    try:
        statuses = [_search(bed, "harbour") for _ in range(5)]
        assert [r.status_code for r in statuses[:3]] == [200, 200, 200]  # the burst
        limited = [r for r in statuses[3:] if r.status_code == 429]
        assert limited, [r.status_code for r in statuses]
        for response in limited:
            assert response.content == b""
            assert response.headers["Retry-After"].isdigit()
            assert int(response.headers["Retry-After"]) >= 1
        time.sleep(int(limited[-1].headers["Retry-After"]))
        assert _search(bed, "harbour").status_code == 200  # told when, and it was true
    finally:
        bed.stop()


def test_token_bucket_refills_at_its_rate():
    now = [0.0]
    bucket = TokenBucket(2.0, 2, clock=lambda: now[0])
    assert bucket.take() == 0 and bucket.take() == 0
    wait = bucket.take()
    assert wait == pytest.approx(0.5)
    assert retry_after_header(wait) == "1" and retry_after_header(1.2) == "2"
    now[0] += 0.5
    assert bucket.take() == 0


def test_unknown_format_is_refused(tmp_path):
    root = _port_world(tmp_path / "w", version=2)
    meta = json.loads((root / "world.json").read_text())
    meta["format"] = 3
    (root / "world.json").write_text(json.dumps(meta))
    with pytest.raises(WorldError, match="unknown format 3: this runner serves format 1 or 2"):
        load_world(root)
    with pytest.raises(WorldError, match="unknown format 3"):
        start_in_thread(root)


def test_popularity_formula_orders_within_the_index(tmp_path):
    """relevance × (1 + w × ln(1 + N)): a popular page wins exactly when its boost makes up
    for its lower BM25 relevance."""
    from pagetrail.tools.testbed.search import SearchIndex

    world = load_world(_port_world(tmp_path / "w", version=2, search=V2_SEARCH))
    index = SearchIndex.build(world, cache=False)
    rows = index._db.execute(
        "SELECT url, bm25(pages, 0, 0, 4.0, 1.0, 2.0) FROM pages WHERE pages MATCH ?",
        ['"harbour" AND "lighthouse"']).fetchall()
    weight = world.search.popularity_weight
    expected = sorted(rows, key=lambda r: -r[1] * (1 + weight * math.log1p(
        world.lookup(r[0]).popularity)), reverse=True)
    got = [r["url"] for r in index.search("harbour lighthouse")["results"]]
    assert got == [url for url, _score in expected][: len(got)]
