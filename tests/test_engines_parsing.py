"""Pure parsing and ranking functions of the search engines (no I/O)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import pytest

from pagetrail.store.pages import fts_match_expression, like_pattern
from pagetrail.tools.engines.base import (
    EngineTransient,
    make_hits,
    parse_retry_after,
    raise_for_status,
    redact,
)
from pagetrail.tools.engines.brave import brave_rows
from pagetrail.tools.engines.cdx import (
    Capture,
    cdx_endpoint,
    cdx_query_url,
    new_urls,
    parse_cdx_json,
)
from pagetrail.tools.engines.google import google_rows
from pagetrail.tools.engines.overlap import query_terms, rank_by_overlap, url_tokens
from pagetrail.tools.engines.searxng import searxng_rows
from pagetrail.tools.engines.site import page_links, parse_sitemap, robots_sitemaps
from pagetrail.tools.errors import EngineUnavailable, RateLimited


def test_searxng_rows_to_hits_ranked_deduplicated_and_site_filtered() -> None:
    payload = {"query": "q", "number_of_results": 4, "results": [
        {"url": "https://a.example/x", "title": "<b>X</b> &amp; co", "content": "about x"},
        {"url": "https://other.example/y", "title": "Y", "content": ""},
        {"url": "https://a.example/x", "title": "dup", "content": ""},
        {"url": "javascript:alert(1)", "title": "bad", "content": ""},
        {"url": "https://blog.a.example/z", "title": "Z", "content": None},
    ]}
    hits = make_hits(searxng_rows(payload), engine="searxng", limit=10, site="www.a.example")
    assert [h.url for h in hits] == ["https://a.example/x", "https://blog.a.example/z"]
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].title == "X & co" and hits[0].engine == "searxng"
    assert make_hits(searxng_rows(payload), engine="s", limit=1)[0].url == "https://a.example/x"


def test_malformed_answers_are_named_errors() -> None:
    with pytest.raises(EngineUnavailable):
        searxng_rows({"error": "nope"})
    with pytest.raises(EngineUnavailable):
        google_rows({"items": "x"})
    assert google_rows({"kind": "customsearch#search"}) == []  # nothing matched
    assert brave_rows({"query": {"original": "q"}}) == []


def test_brave_and_google_shapes() -> None:
    brave = {"web": {"results": [{"url": "https://b.example/1", "title": "One",
                                  "description": "the <strong>first</strong> one"}]}}
    google = {"items": [{"link": "https://g.example/1", "title": "G", "snippet": "s"}]}
    assert brave_rows(brave) == [("https://b.example/1", "One", "the <strong>first</strong> one")]
    assert make_hits(brave_rows(brave), engine="brave", limit=5)[0].snippet == "the first one"
    assert google_rows(google) == [("https://g.example/1", "G", "s")]


def test_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == pytest.approx(30.0)
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0


class _Resp:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.headers = headers or {}
        self.content = b""


def test_status_mapping() -> None:
    with pytest.raises(RateLimited) as limited:
        raise_for_status("e", _Resp(429, {"retry-after": "3"}))
    assert limited.value.retry_after == 3.0
    with pytest.raises(EngineTransient):
        raise_for_status("e", _Resp(502))
    with pytest.raises(EngineUnavailable) as denied:
        raise_for_status("e", _Resp(403))
    assert not isinstance(denied.value, EngineTransient)
    raise_for_status("e", _Resp(200))
    assert redact("key=abc123 and abc123", ["abc123", None]) == "key=*** and ***"


def test_robots_sitemap_lines() -> None:
    robots = ("User-agent: *\nDisallow: /private\nSitemap: /maps/index.xml\n"
              "sitemap: https://s.example/other.xml # comment\nSitemap: ftp://x/y\n")
    assert robots_sitemaps(robots, "https://s.example/") == [
        "https://s.example/maps/index.xml", "https://s.example/other.xml"]


def test_sitemap_urlset_index_gzip_and_news_titles() -> None:
    urlset = b"""<?xml version="1.0"?>
    <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
            xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
      <url><loc> https://s.example/a </loc></url>
      <url><loc>https://s.example/b</loc>
        <news:news><news:title>Solar farms double</news:title></news:news></url>
    </urlset>"""
    entries = parse_sitemap(gzip.compress(urlset))
    assert entries.pages == [("https://s.example/a", ""), ("https://s.example/b",
                                                          "Solar farms double")]
    index = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>https://s.example/s1.xml</loc></sitemap></sitemapindex>"""
    assert parse_sitemap(index).sitemaps == ["https://s.example/s1.xml"]
    assert parse_sitemap(b"https://s.example/t1\nnot a url\n").pages == [
        ("https://s.example/t1", "")]
    assert parse_sitemap(b"<urlset><url><loc>").pages == []  # truncated: no crash


def test_sitemap_does_not_expand_entities() -> None:
    evil = b"""<?xml version="1.0"?>
    <!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>
    <urlset><url><loc>https://s.example/&x;</loc></url></urlset>"""
    pages = parse_sitemap(evil).pages
    assert all("root:" not in url for url, _ in pages)


def test_page_links_absolute_with_text() -> None:
    html = ('<a href="/energy/solar-farms">Solar <b>farms</b></a><a href="#top">top</a>'
            '<a href="mailto:a@b">m</a><a href="https://x.example/p#frag" title="T">X</a>')
    assert page_links(html, "https://s.example/") == [
        ("https://s.example/energy/solar-farms", "Solar farms"),
        ("https://x.example/p", "X T"),
    ]


def test_url_tokens_and_overlap_ranking() -> None:
    assert url_tokens("https://s.example/energy/solarFarms-double.html?id=7") == [
        "energy", "solar", "farms", "double", "7"]
    assert "farmsdouble" not in query_terms("site:x.example solar farms")
    ranked = rank_by_overlap("solar farm boom", [
        ("https://s.example/about", "About us"),
        ("https://s.example/energy/solar-farms-boom-in-midwest-2019", ""),
        ("https://s.example/energy/solar-farms-boom", ""),
        ("https://s.example/solar", ""),
    ])
    assert [url for url, _, _ in ranked] == [
        "https://s.example/energy/solar-farms-boom",
        "https://s.example/energy/solar-farms-boom-in-midwest-2019",
        "https://s.example/solar",
    ]
    assert ranked[0][2] == 1.0


def test_cdx_both_dialects() -> None:
    ia = json.dumps([["original", "timestamp", "statuscode", "mimetype"],
                     ["https://s.example/new", "20200101000000", "200", "text/html"]])
    pywb = "\n".join(json.dumps(r) for r in [
        {"urlkey": "example,s)/new", "timestamp": "20200101000000", "url": "https://s.example/new",
         "mime": "text/html", "status": "200"},
        {"urlkey": "x", "timestamp": "2020", "url": "https://s.example/a.css",
         "mime": "text/css", "status": "200"},
    ])
    assert parse_cdx_json(ia) == [Capture("https://s.example/new", "20200101000000", "200",
                                          "text/html")]
    assert len(parse_cdx_json(pywb)) == 2
    assert parse_cdx_json("") == []


def test_cdx_new_urls_after_date_pages_only_without_dead_url() -> None:
    captures = [
        Capture("https://s.example/old", "20210101000000", "200", "text/html"),
        Capture("https://s.example/before", "20180101000000", "200", "text/html"),
        Capture("https://s.example/new", "20210301000000", "200", "text/html"),
        Capture("https://s.example/new", "20200301000000", "200", "text/html"),
        Capture("https://s.example/gone", "20210101000000", "404", "text/html"),
        Capture("https://s.example/logo.png", "20210101000000", "200", "image/png"),
        Capture("https://s.example/feed", "20210101000000", "200", "application/pdf"),
    ]
    fresh = new_urls(captures, dead_url="http://s.example/old/",
                     after=datetime(2019, 6, 1, tzinfo=UTC))
    assert [(c.url, c.timestamp) for c in fresh] == [("https://s.example/new", "20200301000000")]


def test_cdx_endpoints_and_query() -> None:
    ia = cdx_endpoint("https://web.archive.org/web")
    assert ia.url == "https://web.archive.org/cdx/search/cdx" and ia.dialect == "ia"
    pywb = cdx_endpoint("http://127.0.0.1:8080/world/")
    assert pywb.url == "http://127.0.0.1:8080/world/cdx" and pywb.dialect == "pywb"
    url = cdx_query_url(ia, "s.example", datetime(2019, 6, 1, tzinfo=UTC))
    assert "url=s.example%2F%2A" in url and "from=20190601000000" in url
    assert "filter=statuscode%3A200" in url
    assert "filter" not in cdx_query_url(pywb, "s.example", None)


def test_local_query_building_escapes_operators() -> None:
    assert fts_match_expression(['a"b', "NEAR"]) == '"a""b" OR "NEAR"'
    assert like_pattern("50%_off") == "%50\\%\\_off%"


def test_numbers_in_a_query_match_zero_padded_url_ids():
    from pagetrail.tools.engines.overlap import query_terms, rank_by_overlap

    assert "565" in query_terms("PEP 565 -- Show DeprecationWarning in __main__")
    ranked = rank_by_overlap("PEP 565 -- Show DeprecationWarning",
                             [("https://peps.python.org/pep-3000/", "PEP 3000"),
                              ("https://peps.python.org/pep-0565/", "")])
    assert ranked[0][0] == "https://peps.python.org/pep-0565/"
