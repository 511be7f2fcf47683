"""The testbed's search engine: query parsing (pure), ranking, and the SearXNG JSON API."""

from __future__ import annotations

import httpx
import pytest

from pagetrail.tools.testbed.search import SearchIndex, extract_page, on_site, parse_query
from pagetrail.tools.testbed.world import load_world
from pagetrail.tools.testbed.worldgen import WorldBuilder


def test_parse_query_splits_terms_phrases_and_sites():
    query = parse_query('solar "wind turbines" site:news.example -coal site:https://b.example/x')
    assert query.phrases == ("solar", "wind turbines")
    assert query.sites == ("news.example", "b.example")


def test_site_covers_subdomains_only():
    assert on_site("www.news.example", "news.example")
    assert on_site("news.example", "news.example")
    assert not on_site("othernews.example", "news.example")


def test_extract_page_drops_scripts_and_reads_title():
    page = extract_page("https://x.example/a",
                        b"<html><head><title> T  one </title><script>var s=1</script></head>"
                        b"<body><p>Hello <b>world</b></p><script>hidden()</script></body></html>")
    assert page.title == "T one"
    assert "Hello world" in page.body and "hidden" not in page.body
    assert page.host == "x.example"


def test_extract_page_uses_declared_charset():
    page = extract_page("https://x.example/", "<p>Grüße</p>".encode("cp1252"), "windows-1252")
    assert "Grüße" in page.body


@pytest.fixture(scope="module")
def index(tiny_world):
    return SearchIndex.build(load_world(tiny_world.path), cache=False)


def test_index_holds_live_html_pages_only(index, tiny_world):
    every = index.search(f"site:{tiny_world.hosts[0]}")
    urls = {r["url"] for r in every["results"]}
    assert tiny_world.moved_to in urls
    assert tiny_world.news_robots not in urls  # text/plain
    assert tiny_world.news_http_root not in urls  # a redirect


def test_all_terms_rank_first(index, tiny_world):
    results = index.search("solar farms doubled midwest")["results"]
    assert results[0]["url"] == tiny_world.moved_to
    assert "midwest" in results[0]["content"].lower()


def test_some_terms_still_match(index, tiny_world):
    results = index.search("offshore zeppelin")["results"]
    assert [r["url"] for r in results] == [tiny_world.wind_page]


@pytest.mark.parametrize("text", ['"', "AND OR NOT", "NEAR(a b", "*", "title:x", "^a", "-",
                                  "a' OR 1=1 --", "", "   ", "(((", "ünïcödé"])
def test_no_query_crashes(index, text):
    payload = index.search(text)
    assert isinstance(payload["results"], list)
    assert payload["number_of_results"] >= len(payload["results"])


def test_script_text_is_not_indexed(index):
    assert index.search("scriptword")["results"] == []


@pytest.mark.testbed
def test_searxng_api_over_http(testbed, tiny_world):
    with httpx.Client(trust_env=False, timeout=10) as client:
        hit = client.get(f"{testbed.search_url}/search",
                         params={"q": "offshore wind turbines", "format": "json"}).json()
        assert hit["query"] == "offshore wind turbines"
        assert hit["results"][0]["url"] == tiny_world.wind_page
        assert hit["results"][0]["title"] == "Offshore wind turbines get bigger"
        assert set(hit["results"][0]) >= {"url", "title", "content"}

        filtered = client.get(f"{testbed.search_url}/search",
                              params={"q": "energy site:blog.example.org", "format": "json"})
        urls = [r["url"] for r in filtered.json()["results"]]
        assert urls and all(u.startswith("http://blog.example.org/") for u in urls)

        page2 = client.get(f"{testbed.search_url}/search",
                           params={"q": "energy", "format": "json", "pageno": 2}).json()
        assert page2["results"] == []  # fewer than 10 pages mention it
        assert page2["number_of_results"] >= 1


def test_index_cache_is_reused_and_keyed_by_content(tmp_path, monkeypatch, tiny_world):
    monkeypatch.setenv("PAGETRAIL_TESTBED_INDEX_CACHE", str(tmp_path / "cache"))
    world = load_world(tiny_world.path)
    first = SearchIndex.build(world)
    files = list((tmp_path / "cache").glob("*.sqlite"))
    assert len(files) == 1
    again = SearchIndex.build(world)
    assert again.size == first.size > 0
    assert again.search("offshore wind") == first.search("offshore wind")
    other = WorldBuilder(tmp_path / "other")
    other.host("z.example").page("https://z.example/", "<title>Zebra</title><p>zebra</p>")
    assert SearchIndex.build(load_world(other.write())).search("zebra")["results"]
    assert len(list((tmp_path / "cache").glob("*.sqlite"))) == 2
