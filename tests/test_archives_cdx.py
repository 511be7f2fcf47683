"""CDX at scale, on the Internet Archive's recorded answers: a listing read in resumeKey pages,
the archive's refusal named (not an API-key problem); and a pywb server's numbered pages
(showNumPages, page=), on a handmade answer in pywb's shape."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from archive_replay import FIXTURES, ArchiveReplay, interactions, key_of, recorded

from pagetrail.tools.engines.base import EngineUnavailable
from pagetrail.tools.engines.cdx import (
    CdxEndpoint,
    CdxEngine,
    cdx_query_url,
    parse_cdx_page,
    parse_num_pages,
)
from pagetrail.tools.net.fetch import Fetcher

PAGES = "wayback_cdx_resumekey_pages"


def _resume_of(uri: str) -> str:
    return parse_qs(urlsplit(key_of(uri)).query).get("resumeKey", [""])[0]


def paged_routes(key: str):
    """Each page recorded for the key the client sends (the first page: no key)."""
    if not key.startswith("/cdx/search/cdx"):
        return None
    wanted = parse_qs(urlsplit(key).query).get("resumeKey", [""])[0]
    for item in interactions(PAGES):
        if _resume_of(item["request"]["uri"]) == wanted:
            response = item["response"]
            return response["status"], response["headers"], response["body"].encode()
    return 404, {}, b"no such page"


def test_text_page_and_its_resume_key():
    body = interactions(PAGES)[0]["response"]["body"]
    captures, resume = parse_cdx_page(body)
    assert resume == "com%2Ccnn%29%2F+2001041400593%3A"
    assert len(captures) == 25 and captures[0].timestamp == "20010410213930"
    assert captures[0].url == "http://www.cnn.com:80/" and captures[0].status == "200"
    assert parse_cdx_page(interactions(PAGES)[-1]["response"]["body"]) == ([], None)


def test_json_table_resume_key():
    # handmade: the JSON shape of showResumeKey (an empty row, then [key]) as the CDX server
    # documentation gives it; the recorded pages above are in the text format.
    table = [["original", "timestamp", "statuscode", "mimetype"],
             ["http://s.example/a", "20200101000000", "200", "text/html"], [], ["s.example/a+1"]]
    captures, resume = parse_cdx_page(json.dumps(table))
    assert resume == "s.example/a+1" and [c.url for c in captures] == ["http://s.example/a"]


def test_query_asks_the_server_to_filter_collapse_and_page():
    ia = CdxEndpoint("https://web.archive.org/cdx/search/cdx", "ia")
    query = parse_qs(urlsplit(cdx_query_url(ia, "s.example", None, 100, "k+1")).query)
    assert query["filter"] == ["statuscode:200"] and query["collapse"] == ["urlkey"]
    assert query["showResumeKey"] == ["true"] and query["resumeKey"] == ["k+1"]
    pywb = CdxEndpoint("http://127.0.0.1:1/coll/cdx", "pywb")
    assert "resumeKey" not in cdx_query_url(pywb, "s.example", None, 100, "k")


@pytest.mark.parametrize(("max_pages", "pages"), [(40, 15), (4, 4)])
async def test_large_listing_is_read_in_pages(max_pages, pages):
    expected = sum(len(parse_cdx_page(i["response"]["body"])[0])
                   for i in interactions(PAGES)[:pages])
    with ArchiveReplay(routes=paged_routes) as replay:
        async with Fetcher(replay.settings()) as fetcher:
            engine = CdxEngine(fetcher, [CdxEndpoint(f"{replay.base}/cdx/search/cdx", "ia")],
                               max_rows=25, max_pages=max_pages)
            captures = await engine.listing("cnn.com", None)
        assert engine.pages == pages and len(captures) == expected
        assert sum(replay.hits.values()) == pages and not replay.misses


async def test_blocked_site_is_named_not_an_api_key_problem():
    status, headers, body = recorded("wayback_cdx_blocked_site")
    with ArchiveReplay(routes=lambda key: (status, dict(headers), body)) as replay:
        async with Fetcher(replay.settings()) as fetcher:
            engine = CdxEngine(fetcher, [CdxEndpoint(f"{replay.base}/cdx/search/cdx", "ia")])
            with pytest.raises(EngineUnavailable) as caught:
                await engine.listing("nationalpost.com", None)
    message = str(caught.value)
    assert "archive_excluded" in message and "Blocked Site Error" in message
    assert "API key" not in message


async def test_recorded_json_table_is_one_page():
    status, headers, body = recorded("ia_cdx_json_table")
    captures, resume = parse_cdx_page(body.decode())
    assert resume is None and len(captures) == 10
    assert captures[0] == captures[0].__class__("http://www.commoncrawl.org:80/",
                                                "20080328041443", "200", "text/html")
    with ArchiveReplay(routes=lambda key: (status, headers, body)) as replay:
        async with Fetcher(replay.settings()) as fetcher:
            engine = CdxEngine(fetcher, [CdxEndpoint(f"{replay.base}/cdx/search/cdx", "ia")])
            assert len(await engine.listing("commoncrawl.org", None)) == 10
        assert engine.pages == 1 and sum(replay.hits.values()) == 1


# --- numbered pages (pywb over a zipnum index): showNumPages, then page=0… --------------------

NUMBERED = json.loads((FIXTURES / "handmade_pywb_cdx_pages.json").read_text())


def numbered_routes(count: object):  # type: ignore[no-untyped-def]
    """A pywb CDX endpoint answering showNumPages with `count` (a dict, or rows: an index
    without pages), each numbered page from the fixture, and the whole listing without a
    page; every answer cut at the request's `limit`, as the server does."""
    def route(key: str):
        if not key.startswith("/coll/cdx"):
            return None
        query = parse_qs(urlsplit(key).query)
        if query.get("showNumPages") == ["true"]:
            return 200, {"content-type": "application/json"}, json.dumps(count).encode() \
                if isinstance(count, dict) else str(count).encode()
        page = NUMBERED["pages"][int(query["page"][0])] if "page" in query \
            else "".join(NUMBERED["pages"])
        rows = page.splitlines()[: int(query["limit"][0])]
        return 200, {"content-type": "text/x-ndjson"}, "\n".join(rows).encode()
    return route


def test_page_counts_of_both_servers():
    assert parse_num_pages(json.dumps(NUMBERED["num_pages"])) == 3  # pywb
    assert parse_num_pages("12\n") == 12  # the Internet Archive: a bare number
    assert parse_num_pages('{"blocks": 0, "pages": 0, "pageSize": 10}') == 0
    assert parse_num_pages(NUMBERED["pages"][0]) is None  # rows: no pages here
    assert parse_num_pages('{"pages": true}') is None


def page_numbers(replay: ArchiveReplay) -> list[str]:
    return sorted(parse_qs(urlsplit(k).query)["page"][0] for k in replay.hits if "page=" in k)


@pytest.mark.parametrize(("max_pages", "read"), [(4, 3), (2, 2)])
async def test_a_capped_answer_is_read_again_in_numbered_pages(max_pages, read):
    with ArchiveReplay(routes=numbered_routes(NUMBERED["num_pages"])) as replay:
        async with Fetcher(replay.settings()) as fetcher:
            engine = CdxEngine(fetcher, [CdxEndpoint(f"{replay.base}/coll/cdx", "pywb")],
                               max_rows=2, max_pages=max_pages)
            captures = await engine.listing("site.example", None)
        assert page_numbers(replay) == [str(n) for n in range(read)]
        assert sum(replay.hits.values()) == 2 + read  # the capped answer, the count, the pages
    assert engine.pages == 1 + read and len(captures) == 2 * read
    assert "https://site.example/energy/solar-farms" in [c.url for c in captures]  # page 1


async def test_an_answer_that_is_not_capped_asks_nothing_more():
    with ArchiveReplay(routes=numbered_routes(NUMBERED["num_pages"])) as replay:
        async with Fetcher(replay.settings()) as fetcher:
            engine = CdxEngine(fetcher, [CdxEndpoint(f"{replay.base}/coll/cdx", "pywb")])
            captures = await engine.listing("site.example", None)
        assert sum(replay.hits.values()) == 1
    assert engine.pages == 1 and len(captures) == 6


async def test_a_server_without_pages_keeps_its_one_answer():
    rows_instead = NUMBERED["pages"][0]  # an index without pages answers its rows
    with ArchiveReplay(routes=numbered_routes(rows_instead)) as replay:
        async with Fetcher(replay.settings()) as fetcher:
            engine = CdxEngine(fetcher, [CdxEndpoint(f"{replay.base}/coll/cdx", "pywb")],
                               max_rows=2)
            captures = await engine.listing("site.example", None)
        assert page_numbers(replay) == [] and sum(replay.hits.values()) == 2
    assert engine.pages == 1 and len(captures) == 2
