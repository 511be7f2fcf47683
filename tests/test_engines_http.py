"""Each engine against a real local server imitating its backend (127.0.0.1 only)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr
from test_engines_support import Answer, Seen, local_server, loopback_settings, make_fetcher

from pagetrail.tools.engines.base import EngineTransient, SearchContext
from pagetrail.tools.engines.brave import BraveEngine
from pagetrail.tools.engines.cdx import CdxEndpoint, CdxEngine
from pagetrail.tools.engines.ddgs_engine import DdgsEngine
from pagetrail.tools.engines.google import GoogleEngine
from pagetrail.tools.engines.searxng import SearxngEngine
from pagetrail.tools.engines.site import SiteEngine
from pagetrail.tools.errors import EngineUnavailable, PagetrailError, RateLimited

KEY = "sk-test-4f9a1c2e7b"


def searxng_page(seen: Seen) -> Answer:
    """Ten results a page, two pages; half of them on another host."""
    page = int(seen.query.get("pageno", ["1"])[0])
    if page > 2:
        return Answer(200, json.dumps({"query": "", "results": []}))
    results = []
    for i in range(10):
        host = "news.example" if i % 2 == 0 else "elsewhere.example"
        results.append({"url": f"https://{host}/p{page}-{i}", "title": f"T{page}-{i}",
                        "content": "c"})
    return Answer(200, json.dumps({"query": seen.query["q"][0], "number_of_results": 20,
                                   "results": results}))


async def test_searxng_pages_until_enough_site_hits() -> None:
    with local_server() as server:
        server.routes["/search"] = searxng_page
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = SearxngEngine(fetcher, server.base + "/")
            hits = await engine.search("solar farms", site="news.example", limit=8)
        assert len(hits) == 8
        assert all(h.url.startswith("https://news.example/") for h in hits)
        assert [h.rank for h in hits] == list(range(1, 9))
        sent = server.requests_to("/search")
        assert [s.query["pageno"][0] for s in sent] == ["1", "2"]
        assert sent[0].query["q"] == ["solar farms site:news.example"]
        assert sent[0].query["format"] == ["json"]


async def test_searxng_error_status_is_named() -> None:
    with local_server() as server:
        server.routes["/search"] = Answer(502, "bad gateway", {"Content-Type": "text/plain"})
        async with make_fetcher(loopback_settings()) as fetcher:
            with pytest.raises(EngineTransient):
                await SearxngEngine(fetcher, server.base).search("q")
        server.routes["/search"] = Answer(200, "<html>not json</html>")
        async with make_fetcher(loopback_settings()) as fetcher:
            with pytest.raises(EngineUnavailable):
                await SearxngEngine(fetcher, server.base).search("q")


def brave_api(seen: Seen) -> Answer:
    if seen.headers.get("x-subscription-token") != KEY:
        return Answer(401, json.dumps({"type": "ErrorResponse", "error": {"code": "AUTH"}}))
    query = seen.query["q"][0]
    return Answer(200, json.dumps({"type": "search", "query": {"original": query}, "web": {
        "type": "search", "results": [
            {"url": "https://b.example/solar", "title": "Solar <strong>farms</strong>",
             "description": "Farms <strong>double</strong>"},
            {"url": "https://b.example/wind", "title": "Wind", "description": ""},
        ]}}))


async def test_brave_shape_and_key_in_header_only() -> None:
    with local_server() as server:
        server.routes["/res/v1/web/search"] = brave_api
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = BraveEngine(fetcher, SecretStr(KEY), base_url=server.base)
            hits = await engine.search("solar farms", limit=5)
            assert [(h.url, h.title, h.snippet) for h in hits] == [
                ("https://b.example/solar", "Solar farms", "Farms double"),
                ("https://b.example/wind", "Wind", ""),
            ]
            seen = server.requests_to("/res/v1/web/search")[0]
            assert KEY not in seen.raw_target and seen.query["count"] == ["5"]
            wrong = BraveEngine(fetcher, SecretStr("wrong-key-xyz"), base_url=server.base)
            with pytest.raises(EngineUnavailable) as denied:
                await wrong.search("q")
        assert "wrong-key-xyz" not in str(denied.value)
        assert "wrong-key-xyz" not in repr(wrong) and "401" in str(denied.value)


async def test_api_keys_do_not_follow_a_cross_origin_redirect() -> None:
    """fetch_checked follows redirects: the key stays with the API's origin."""
    with local_server() as api, local_server() as elsewhere:
        elsewhere.routes["/res/v1/web/search"] = brave_api
        api.routes["/res/v1/web/search"] = lambda seen: Answer(
            302, "", {"Location": f"{elsewhere.base}{seen.raw_target}"})
        api.routes["/moved/res/v1/web/search"] = brave_api
        api.routes["/old/res/v1/web/search"] = lambda seen: Answer(
            301, "", {"Location": seen.raw_target.replace("/old/", "/moved/", 1)})
        async with make_fetcher(loopback_settings()) as fetcher:
            with pytest.raises(EngineUnavailable, match="401"):  # sent without the key
                await BraveEngine(fetcher, SecretStr(KEY), base_url=api.base).search("q")
            same = BraveEngine(fetcher, SecretStr(KEY), base_url=api.base + "/old")
            assert len(await same.search("q")) == 2  # a same-origin hop keeps it
        assert api.seen[0].headers.get("x-subscription-token") == KEY
        assert [s.headers.get("x-subscription-token") for s in elsewhere.seen] == [None]


def google_api(seen: Seen) -> Answer:
    if seen.headers.get("x-goog-api-key") != KEY:
        return Answer(400, json.dumps({"error": {"code": 400, "message": "API key not valid"}}))
    start = int(seen.query["start"][0])
    num = int(seen.query["num"][0])
    total = 13  # fewer results than asked for: the engine must stop paging
    items = [{"link": f"https://g.example/{i}", "title": f"G{i}", "snippet": "s"}
             for i in range(start, min(start + num, total + 1))]
    payload: dict[str, object] = {"kind": "customsearch#search"}
    if items:
        payload["items"] = items
    return Answer(200, json.dumps(payload))


async def test_google_shape_paging_and_site_restriction() -> None:
    with local_server() as server:
        server.routes["/customsearch/v1"] = google_api
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = GoogleEngine(fetcher, SecretStr(KEY), "cx-1", base_url=server.base)
            hits = await engine.search("solar", site="g.example", limit=20)
        assert [h.url for h in hits] == [f"https://g.example/{i}" for i in range(1, 14)]
        sent = server.requests_to("/customsearch/v1")
        assert [s.query["start"][0] for s in sent] == ["1", "11"]
        assert sent[0].query["siteSearch"] == ["g.example"] and sent[0].query["cx"] == ["cx-1"]
        assert all(KEY not in s.raw_target for s in sent)


async def test_keyed_engine_errors_never_show_the_key() -> None:
    # The server echoes the key back in its error body; the message must still be clean.
    with local_server() as server:
        server.routes["/customsearch/v1"] = lambda seen: Answer(
            500, json.dumps({"error": {"message": f"bad {seen.headers.get('x-goog-api-key')}"}}))
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = GoogleEngine(fetcher, SecretStr(KEY), "cx", base_url=server.base)
            with pytest.raises(EngineTransient) as failed:
                await engine.search("q")
        assert KEY not in str(failed.value) and KEY not in repr(failed.value.to_dict())


# --- site engine ------------------------------------------------------------------------------

def build_site(server) -> None:
    base = server.base
    server.routes["/"] = Answer(200, f"""<html><body>
        <a href="/about">About us</a>
        <a href="/energy/">Energy</a>
        <a href="{base}/contact">Contact</a>
        <a href="https://elsewhere.example/solar-farms">Solar farms elsewhere</a>
        </body></html>""", {"Content-Type": "text/html"})
    server.routes["/robots.txt"] = Answer(
        200, f"User-agent: *\nSitemap: {base}/maps/index.xml\n", {"Content-Type": "text/plain"})
    server.routes["/maps/index.xml"] = Answer(200, f"""<?xml version="1.0"?>
        <sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
          <sitemap><loc>{base}/maps/pages.xml</loc></sitemap>
          <sitemap><loc>{base}/maps/news.xml.gz</loc></sitemap>
        </sitemapindex>""", {"Content-Type": "application/xml"})
    server.routes["/maps/pages.xml"] = Answer(200, f"""<urlset
        xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
          <url><loc>{base}/2019/06/solar-farms</loc></url>
          <url><loc>{base}/energy/wind-turbines-offshore</loc></url>
          <url><loc>{base}/style.css</loc></url>
        </urlset>""", {"Content-Type": "application/xml"})
    server.routes["/maps/news.xml.gz"] = Answer(200, gzip.compress(f"""<urlset
        xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
          <url><loc>{base}/energy/a1234</loc>
            <news:news><news:title>Solar farms double in a year</news:title></news:news></url>
        </urlset>""".encode()), {"Content-Type": "application/gzip"})


async def test_site_engine_ranks_sitemap_and_root_links() -> None:
    with local_server() as server:
        build_site(server)
        dead = f"{server.base}/2019/06/solar-farms"
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = SiteEngine(fetcher)
            context = SearchContext(dead_url=dead)
            hits = await engine.search("Solar farms double", context=context)
            again = await engine.search("wind turbines", context=context)
        urls = [h.url for h in hits]
        assert urls[0] == f"{server.base}/energy/a1234"  # found through the news title
        assert hits[0].title == "Solar farms double in a year"
        assert dead not in urls  # the dead URL is not its own replacement
        assert not any("elsewhere.example" in u for u in urls)  # other sites are not the site's
        assert not any(u.endswith(".css") for u in urls)
        assert [h.url for h in again] == [f"{server.base}/energy/wind-turbines-offshore"]
        # The site was listed once for both queries.
        assert len(server.requests_to("/maps/pages.xml")) == 1
        assert len(server.requests_to("/")) == 1


async def test_site_engine_falls_back_to_sitemap_xml_and_needs_a_site() -> None:
    with local_server() as server:
        server.routes["/sitemap.xml"] = Answer(200, f"""<urlset>
            <url><loc>{server.base}/guides/solar-panels</loc></url></urlset>""")
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = SiteEngine(fetcher)
            hits = await engine.search("solar panel guide", site=server.base)
            assert await engine.search("solar") == []  # no site, no dead URL: nothing to list
        assert [h.url for h in hits] == [f"{server.base}/guides/solar-panels"]


async def test_site_engine_unreachable_site_is_a_named_error() -> None:
    with local_server() as server:
        port = server.port
    # The server is stopped: its port now refuses connections.
    async with make_fetcher(loopback_settings(retries=0)) as fetcher:
        with pytest.raises(EngineUnavailable):
            await SiteEngine(fetcher).search(
                "q", context=SearchContext(dead_url=f"http://127.0.0.1:{port}/x"))


# --- CDX engine -------------------------------------------------------------------------------

def pywb_cdx(server, rows: list[dict[str, str]]):
    def answer(seen: Seen) -> Answer:
        since = seen.query.get("from", [""])[0]
        lines = [json.dumps({"urlkey": "k", "digest": "D", "length": "1", "offset": "0",
                             "filename": "a.warc.gz", **row})
                 for row in rows if row["timestamp"] >= since]
        return Answer(200, "\n".join(lines) + "\n", {"Content-Type": "text/x-ndjson"})
    return answer


async def test_cdx_engine_against_pywb_shape() -> None:
    with local_server() as server:
        host = "news.example"
        rows = [
            {"url": f"https://{host}/2019/06/solar-farms", "timestamp": "20190501000000",
             "mime": "text/html", "status": "200"},
            {"url": f"https://{host}/2019/06/solar-farms", "timestamp": "20200501000000",
             "mime": "text/html", "status": "404"},
            {"url": f"https://{host}/energy/solar-farms-double", "timestamp": "20200102000000",
             "mime": "text/html", "status": "200"},
            {"url": f"https://{host}/energy/wind", "timestamp": "20200102000000",
             "mime": "text/html", "status": "200"},
            {"url": f"https://{host}/2018/solar-old", "timestamp": "20180102000000",
             "mime": "text/html", "status": "200"},
        ]
        server.routes["/world/cdx"] = pywb_cdx(server, rows)
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = CdxEngine.from_archives(fetcher, [f"{server.base}/world"])
            context = SearchContext(dead_url=f"https://{host}/2019/06/solar-farms",
                                    after=datetime(2019, 6, 1, tzinfo=UTC))
            hits = await engine.search("solar farms", context=context)
            await engine.search("wind", context=context)
        assert [h.url for h in hits] == [f"https://{host}/energy/solar-farms-double"]
        assert hits[0].engine == "cdx" and "2020" in hits[0].snippet
        sent = server.requests_to("/world/cdx")
        assert len(sent) == 1  # one listing per host and date, reused by the second query
        assert sent[0].query["url"] == [f"{host}/*"]
        assert sent[0].query["from"] == ["20190601000000"]


async def test_cdx_engine_ia_dialect_and_partial_failure() -> None:
    with local_server() as server:
        table = [["original", "timestamp", "statuscode", "mimetype"],
                 ["https://s.example/guides/solar", "20210101000000", "200", "text/html"]]
        server.routes["/ia/cdx"] = Answer(200, json.dumps(table))
        server.routes["/down/cdx"] = Answer(503, "down", {"Content-Type": "text/plain"})
        async with make_fetcher(loopback_settings()) as fetcher:
            engine = CdxEngine(fetcher, [CdxEndpoint(f"{server.base}/ia/cdx", "ia"),
                                         CdxEndpoint(f"{server.base}/down/cdx", "pywb")])
            hits = await engine.search("solar guides", site="s.example")
            only_down = CdxEngine(fetcher, [CdxEndpoint(f"{server.base}/down/cdx", "pywb")])
            with pytest.raises(EngineTransient):
                await only_down.search("solar", site="s.example")
        assert [h.url for h in hits] == ["https://s.example/guides/solar"]
        assert server.requests_to("/ia/cdx")[0].query["collapse"] == ["urlkey"]


# --- ddgs ------------------------------------------------------------------------------------

async def test_ddgs_engine_constructs_and_fails_with_a_named_error() -> None:
    engine = DdgsEngine(proxy="http://127.0.0.1:9", timeout=2)  # port 9: nothing listens
    assert engine.name == "ddgs" and engine.rate_limited
    assert await engine.search("   ") == []
    with pytest.raises(PagetrailError) as failed:
        await engine.search("solar farms")
    assert isinstance(failed.value, EngineUnavailable | RateLimited)
