"""Mementos: link-format/CDX parsing and capture choice (pure), then the real protocol
against (a) a small local archive on 127.0.0.1 that speaks TimeMap/TimeGate/id_ only (no
CDX), and (b) the testbed's pywb (marked `testbed`)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import ClassVar
from urllib.parse import unquote

import pytest
from loopback import Loopback, QuietHandler

from pagetrail.tools.archive.memento import (
    ArchiveEndpoint,
    CaptureListings,
    archived_redirects,
    choose_capture,
    fetch_memento,
    list_mementos,
    order_captures,
    parse_cdx,
    parse_link_format,
    parse_timemap,
    redirect_target_ok,
    resolve_location,
)
from pagetrail.tools.errors import ArchiveUnavailable
from pagetrail.tools.models import Memento
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.settings import Settings

ARCHIVE = "http://127.0.0.1:9/coll"
URL = "https://news.example/2019/06/solar-farms"


def capture(ts: str, status: int | None = 200, mime: str = "text/html") -> Memento:
    endpoint = ArchiveEndpoint.of(ARCHIVE)
    return Memento(original_url=URL, memento_url=endpoint.memento_url(ts, URL),
                   raw_url=endpoint.raw_url(ts, URL),
                   datetime=datetime.strptime(ts, "%Y%m%d%H%M%S").replace(tzinfo=UTC),
                   archive=ARCHIVE, status=status, mimetype=mime)


# --- link format ----------------------------------------------------------------------------

TIMEMAP = f"""<{URL}>; rel="original",
<{ARCHIVE}/timemap/link/{URL}>; rel="self"; type="application/link-format"; from="Sat, 01 Jun 2019 00:00:00 GMT",
<{ARCHIVE}/{URL}>; rel="timegate",
<{ARCHIVE}/20190601000000/{URL}>; rel="first memento"; datetime="Sat, 01 Jun 2019 00:00:00 GMT",
<{ARCHIVE}/20190801000000/{URL}>; rel="memento"; datetime="Thu, 01 Aug 2019 00:00:00 GMT",
<{ARCHIVE}/20200115000000/{URL}>; rel="last memento"; datetime="Wed, 15 Jan 2020 00:00:00 GMT"
"""


def test_parse_timemap_mementos_only():
    mementos = parse_timemap(TIMEMAP, ARCHIVE, URL)
    assert [m.datetime.year for m in mementos] == [2019, 2019, 2020]
    first = mementos[0]
    assert first.original_url == URL
    assert first.raw_url == f"{ARCHIVE}/20190601000000id_/{URL}"
    assert first.memento_url == f"{ARCHIVE}/20190601000000/{URL}"
    assert first.status is None


def test_link_format_quotes_and_commas():
    entries = parse_link_format('<http://a/1,2>; rel="memento"; title="x, y; z", '
                                '<http://a/3>;rel=memento;datetime="Mon, 05 Aug 2019 00:00:00 GMT"')
    assert [e.uri for e in entries] == ["http://a/1,2", "http://a/3"]
    assert entries[0].params["title"] == "x, y; z"
    assert entries[1].rels == {"memento"}


@pytest.mark.parametrize("hostile", [
    "", "garbage without links", "<", "<<<>>>", "<http://a>; rel=", ";;;,,,<>",
    '<http://a>; rel="memento"; datetime="not a date"',
    '<javascript:alert(1)>; rel="memento"; datetime="Sat, 01 Jun 2019 00:00:00 GMT"',
    "<" + "x" * 100_000 + ">",
    '<http://a/1> rel="memento" <http://a/2>; rel="memento"; datetime="Sat, 01 Jun 2019 00:00:00 GMT"',
])
def test_hostile_timemaps_do_not_crash(hostile):
    mementos = parse_timemap(hostile, ARCHIVE, URL)
    assert all(m.datetime.year == 2019 for m in mementos)
    assert all(m.memento_url.startswith("http") for m in mementos)


def test_huge_timemap_is_capped():
    line = f'<{ARCHIVE}/20190601000000/{URL}>; rel="memento"; datetime="Sat, 01 Jun 2019 00:00:00 GMT",\n'
    assert len(parse_timemap(line * 50_000, ARCHIVE, URL)) == 20_000


# --- CDX -------------------------------------------------------------------------------------

def test_parse_cdx_wayback_table():
    text = ('[["urlkey","timestamp","original","mimetype","statuscode","digest","length"],'
            f'["k","20190601000000","{URL}","text/html","200","D","1"],'
            f'["k","20200115000000","{URL}","text/html","301","E","1"],'
            f'["k","2019","{URL}","text/html","200","E","1"],'
            f'["k","20200201000000","{URL}","warc/revisit","-","E","1"]]')
    rows = parse_cdx(text, "https://web.archive.org/web", URL)
    assert [(m.status, m.mimetype) for m in rows] == [(200, "text/html"), (301, "text/html"),
                                                      (None, "warc/revisit")]
    assert rows[0].raw_url == f"https://web.archive.org/web/20190601000000id_/{URL}"


def test_parse_cdx_pywb_lines_and_junk():
    text = (f'{{"timestamp": "20190601000000", "url": "{URL}", "mime": "text/html", "status": "200"}}\n'
            f'{{"timestamp": "20190805000000", "url": "{URL}", "mime": "text/html", "status": "404"}}\n')
    assert [m.status for m in parse_cdx(text, ARCHIVE, URL)] == [200, 404]
    assert parse_cdx("", ARCHIVE, URL) == []
    assert parse_cdx("<html>Error</html>", ARCHIVE, URL) is None
    assert parse_cdx('{"a": 1}', ARCHIVE, URL) == []


def test_cdx_url_layouts():
    assert ArchiveEndpoint.of("https://web.archive.org/web/").cdx_url("http://a.example/x?y=1") == \
        "https://web.archive.org/cdx/search/cdx?url=http%3A%2F%2Fa.example%2Fx%3Fy%3D1&output=json" \
        "&fl=timestamp%2Coriginal%2Cmimetype%2Cstatuscode"
    assert ArchiveEndpoint.of("http://127.0.0.1:8080/world").cdx_url("http://a.example/") == \
        "http://127.0.0.1:8080/world/cdx?url=http%3A%2F%2Fa.example%2F&output=json"


# --- choosing -------------------------------------------------------------------------------

def test_choose_closest_before_date_skipping_bad_captures():
    captures = [capture("20180101000000"), capture("20190501000000"),
                capture("20190601000000", 301), capture("20190605000000", 404),
                capture("20190606000000", 200, "application/pdf"),
                capture("20190901000000"), capture("20200101000000", 503)]
    at = datetime(2019, 7, 1, tzinfo=UTC)
    assert choose_capture(captures, at).datetime == datetime(2019, 5, 1, tzinfo=UTC)
    ordered = [m.datetime.strftime("%Y%m") for m in order_captures(captures, at)]
    assert ordered == ["201905", "201801", "201909"]  # before (closest first), then after
    assert choose_capture(captures).datetime.year == 2019  # latest good one, no date
    assert choose_capture(captures).datetime.month == 9
    assert choose_capture([capture("20190601000000", 302)]) is None
    # Naive dates are UTC; a capture after every date is still offered last.
    assert choose_capture([capture("20210101000000")], datetime(2019, 1, 1)).datetime.year == 2021


def test_redirect_targets():
    assert redirect_target_ok(URL, "https://news.example/energy/solar-farms-double")
    assert not redirect_target_ok(URL, "https://news.example/")
    assert not redirect_target_ok(URL, "http://news.example/2019/06/solar-farms/")
    assert not redirect_target_ok(URL, "https://news.example/login?next=/2019/06/solar-farms")
    assert not redirect_target_ok(URL, "https://news.example/errors/404.html")
    assert not redirect_target_ok(URL, "javascript:alert(1)")


def test_resolve_location_rewritten_and_relative():
    endpoint = ArchiveEndpoint.of(ARCHIVE)
    assert resolve_location(endpoint, URL, f"{ARCHIVE}/20200115000000id_/https://n.example/new") \
        == ("https://n.example/new", "20200115000000")
    assert resolve_location(endpoint, URL, "/coll/20200115000000/https://n.example/new")[0] == \
        "https://n.example/new"
    assert resolve_location(endpoint, URL, "../energy/x") == ("https://news.example/2019/energy/x",
                                                             None)


# --- a small local archive: TimeMap, TimeGate and id_ captures, no CDX ---------------------

PAGE = (b"<html><head><title>Solar farms double in a year - News Example</title></head><body>"
        b"<p>Solar farms doubled their output in a single year across the midwest.</p></body></html>")
SOFT404 = b"<html><head><title>Page not found</title></head><body><p>Sorry.</p></body></html>"


class _Archive(QuietHandler):
    mode: ClassVar[dict[str, str]] = {}

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {"Content-Type": "text/html"}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        prefix = f"http://127.0.0.1:{self.server.server_port}/coll"
        path = unquote(self.path)
        if "/cdx" in path or "/timemap/" in path:
            self.mode["index_requests"] = str(int(self.mode.get("index_requests", "0")) + 1)
        if path.startswith("/coll/cdx"):
            return self._send(404, b"no cdx here")
        if path.startswith("/coll/timemap/link/"):
            if self.mode.get("timemap") == "broken":
                return self._send(503, b"overloaded")
            original = path[len("/coll/timemap/link/"):]
            body = ",\n".join(
                f'<{prefix}/{ts}/{original}>; rel="memento"; datetime="{when}"'
                for ts, when in [("20180301000000", "Thu, 01 Mar 2018 00:00:00 GMT"),
                                 ("20190501000000", "Wed, 01 May 2019 00:00:00 GMT"),
                                 ("20190801000000", "Thu, 01 Aug 2019 00:00:00 GMT")])
            return self._send(200, body.encode(), {"Content-Type": "application/link-format"})
        if path.startswith("/coll/2018"):
            return self._send(200, PAGE, {"Content-Type": "text/html; charset=utf-8",
                                          "Memento-Datetime": "Thu, 01 Mar 2018 00:00:00 GMT"})
        if path.startswith("/coll/20190501000000id_/"):  # a captured redirect, rewritten
            return self._send(301, b"", {"Location": f"{prefix}/20190501000000id_/"
                                                     "https://news.example/energy/solar"})
        if path.startswith("/coll/20190801000000id_/"):  # a captured soft 404
            return self._send(200, SOFT404, {"Content-Type": "text/html"})
        if path.startswith("/coll/https://"):  # TimeGate
            original = path[len("/coll/"):]
            return self._send(302, b"", {"Location": f"{prefix}/20180301000000/{original}",
                                         "Vary": "accept-datetime"})
        return self._send(404, b"nothing")


@pytest.fixture
def local_archive() -> Iterator[tuple[str, dict[str, str]]]:
    mode: ClassVar[dict[str, str]] = {}
    handler = type("Handler", (_Archive,), {"mode": mode})
    server = Loopback(handler)
    try:
        yield f"{server.base}/coll", mode
    finally:
        server.close()


def closed_port_archive() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/web"


def local_settings(*archives: str) -> Settings:
    return Settings(archives=list(archives), retries=0, connect_timeout=2, read_timeout=5,
                    allow_hosts=["127.0.0.1"], no_proxy=["127.0.0.1"])


async def test_timemap_archive_skips_redirect_and_soft404(local_archive):
    prefix, _ = local_archive
    settings = local_settings(prefix)
    async with Fetcher(settings) as fetcher:
        memento = await fetch_memento(URL, fetcher, settings=settings)
    assert memento is not None
    assert memento.datetime == datetime(2018, 3, 1, tzinfo=UTC)
    assert memento.raw_url == f"{prefix}/20180301000000id_/{URL}"
    assert memento.document.title == "Solar farms double in a year"
    assert memento.status == 200


async def test_timemap_archive_redirects_found_by_probing(local_archive):
    prefix, _ = local_archive
    settings = local_settings(prefix)
    async with Fetcher(settings) as fetcher:
        redirects = await archived_redirects(URL, fetcher, settings)
    assert [r.target_url for r in redirects] == ["https://news.example/energy/solar"]
    assert redirects[0].status == 301 and redirects[0].datetime.year == 2019


async def test_copy_and_redirects_share_one_listing(local_archive):
    prefix, mode = local_archive
    settings = local_settings(prefix)
    async with Fetcher(settings) as fetcher:
        separate = await asyncio.gather(fetch_memento(URL, fetcher, settings=settings),
                                        archived_redirects(URL, fetcher, settings))
        asked_separately = int(mode.pop("index_requests"))
        listings = CaptureListings()
        shared = await asyncio.gather(
            fetch_memento(URL, fetcher, settings=settings, listings=listings),
            archived_redirects(URL, fetcher, settings, listings))
        asked_shared = int(mode.pop("index_requests"))
    assert shared[0] is not None and separate[0] is not None
    assert shared[0].memento_url == separate[0].memento_url
    assert shared[1] == separate[1] and shared[1]
    # CDX (404 here) then TimeMap: two index requests per listing, one listing when shared.
    assert asked_separately == 4 and asked_shared == 2


async def test_timegate_when_timemap_fails(local_archive):
    prefix, mode = local_archive
    mode["timemap"] = "broken"
    settings = local_settings(prefix)
    async with Fetcher(settings) as fetcher:
        memento = await fetch_memento(URL, fetcher, at=datetime(2019, 1, 1), settings=settings)
    assert memento is not None and memento.datetime.year == 2018


async def test_all_archives_down_raises():
    settings = local_settings(closed_port_archive(), closed_port_archive())
    async with Fetcher(settings) as fetcher:
        with pytest.raises(ArchiveUnavailable):
            await fetch_memento(URL, fetcher, settings=settings)
        with pytest.raises(ArchiveUnavailable):
            await list_mementos(URL, fetcher, settings)


async def test_down_archive_then_next_one(local_archive):
    prefix, _ = local_archive
    settings = local_settings(closed_port_archive(), prefix)
    async with Fetcher(settings) as fetcher:
        memento = await fetch_memento(URL, fetcher, settings=settings)
    assert memento is not None and memento.archive == prefix


# --- against pywb (the testbed) ------------------------------------------------------------

@pytest.mark.testbed
async def test_pywb_memento_before_redirect(tiny_world, testbed_settings):
    async with Fetcher(testbed_settings) as fetcher:
        captures = await list_mementos(tiny_world.moved_from, fetcher, testbed_settings)
        memento = await fetch_memento(tiny_world.moved_from, fetcher, settings=testbed_settings)
        later = await fetch_memento(tiny_world.moved_from, fetcher,
                                    at=datetime(2021, 1, 1, tzinfo=UTC), settings=testbed_settings)
    assert {(c.datetime.strftime("%Y%m%d%H%M%S"), c.status) for c in captures} >= {
        (tiny_world.moved_from_capture, 200), (tiny_world.moved_from_redirect_capture, 301)}
    assert memento is not None
    assert memento.datetime.strftime("%Y%m%d%H%M%S") == tiny_world.moved_from_capture
    assert memento.document.title == tiny_world.social_title
    assert "scriptword" not in memento.document.text  # raw capture parsed, scripts dropped
    assert "id_/" in memento.raw_url and memento.archive == testbed_settings.archives[0]
    assert later is not None and later.datetime == memento.datetime  # 2020 is a redirect


@pytest.mark.testbed
async def test_pywb_archived_redirect(tiny_world, testbed_settings):
    async with Fetcher(testbed_settings) as fetcher:
        redirects = await archived_redirects(tiny_world.moved_from, fetcher, testbed_settings)
        none = await archived_redirects(tiny_world.archived_only, fetcher, testbed_settings)
    assert [r.target_url for r in redirects] == [tiny_world.moved_to]
    assert redirects[0].status == 301
    assert none == []


@pytest.mark.testbed
async def test_pywb_error_capture_and_unknown_url(tiny_world, testbed_settings):
    async with Fetcher(testbed_settings) as fetcher:
        assert await fetch_memento(tiny_world.error_capture_url, fetcher,
                                   settings=testbed_settings) is None
        assert await fetch_memento("https://never-archived.example/page", fetcher,
                                   settings=testbed_settings) is None


@pytest.mark.testbed
def test_cli_memento(tiny_world, testbed_env, capsys):
    from pagetrail.cli.main import main

    assert main(["memento", tiny_world.moved_from, "--at", "2019-07-01"]) == 0
    out = capsys.readouterr().out
    assert f"{tiny_world.moved_from_capture}id_/" in out and tiny_world.social_title in out
    assert main(["memento", tiny_world.moved_from, "--redirects", "--json"]) == 0
    assert tiny_world.moved_to in capsys.readouterr().out
    assert main(["memento", "not a url"]) == 2
