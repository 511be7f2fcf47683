"""Other Memento archives and aggregators: TimeMap endpoints (link format and JSON), each
archive's failure named, one archive down never sinking the answer."""

from __future__ import annotations

import json

import pytest
from archive_replay import FIXTURES, ArchiveReplay, recorded

from pagetrail.tools.archive.memento import (
    ArchiveEndpoint,
    archived_redirects,
    fetch_memento,
    parse_timemap,
    parse_timemap_json,
)
from pagetrail.tools.engines.cdx import CdxEngine
from pagetrail.tools.errors import ArchiveUnavailable
from pagetrail.tools.net.fetch import Fetcher

BIRDS = "https://www.fws.gov/birds/"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def test_every_memgator_archive_timemap_is_recognised():
    """MemGator's list of archives (real endpoints): each TimeMap URL configured as an
    archive is a TimeMap endpoint, asked exactly as MemGator asks it."""
    archives = fixture("memgator_archives")
    assert len(archives) >= 15
    for archive in archives:
        endpoint = ArchiveEndpoint.of(archive["timemap"])
        assert endpoint.kind == "timemap", archive["id"]
        assert endpoint.timemap_url(BIRDS) == archive["timemap"].rstrip("/") + "/" + BIRDS
    # Wayback-style prefixes stay what they were.
    for prefix in ("https://web.archive.org/web", "https://arquivo.pt/wayback",
                   "https://webarchive.loc.gov/all"):
        assert ArchiveEndpoint.of(prefix).kind == "wayback"


def test_archive_today_timemap_has_no_raw_mode():
    body = fixture("handmade_archive_today_timemap")["body"]
    mementos = parse_timemap(body, "https://archive.ph/timemap", BIRDS)
    assert [m.memento_url for m in mementos] == [
        "https://archive.ph/20190101000000/https://www.fws.gov/birds/",
        "https://archive.ph/20200202020202/https://www.fws.gov/birds/"]
    assert all(m.raw_url == m.memento_url and m.original_url == BIRDS for m in mementos)


def test_json_timemap_lists_many_archives():
    body = json.dumps(fixture("handmade_memgator_timemap")["body"]).replace(
        "{ia}", "https://web.archive.org").replace("{pt}", "https://arquivo.pt").replace(
        "{agg}", "http://localhost:1208")
    mementos = parse_timemap_json(body, "http://localhost:1208/timemap/json", BIRDS)
    assert [(m.archive, m.raw_url) for m in mementos] == [
        ("https://web.archive.org/web",
         "https://web.archive.org/web/20171124151315id_/https://www.fws.gov/birds/"),
        ("https://arquivo.pt/wayback",
         "https://arquivo.pt/wayback/20190302100000id_/https://www.fws.gov/birds/")]
    assert parse_timemap_json("<html>no</html>", "http://x/timemap/json", BIRDS) is None


def test_time_travel_api_json_with_uri_lists():
    # handmade: Time Travel's api/json navigation shape (uri as a list), per its API guide
    body = json.dumps({"original_uri": BIRDS, "mementos": {
        "closest": {"datetime": "2017-11-24T15:13:15Z", "uri": [
            "https://web.archive.org/web/20171124151315/https://www.fws.gov/birds/",
            "https://wayback.archive-it.org/all/20171124151315/https://www.fws.gov/birds/"]}}})
    mementos = parse_timemap_json(body, "http://timetravel.example/timemap/json", BIRDS)
    assert {m.archive for m in mementos} == {"https://web.archive.org/web",
                                             "https://wayback.archive-it.org/all"}


def test_cdx_engine_leaves_timemap_endpoints_out():
    engine = CdxEngine.from_archives(None, ["https://web.archive.org/web",  # type: ignore[arg-type]
                                            "https://archive.today/timemap"])
    assert [e.url for e in engine.endpoints] == ["https://web.archive.org/cdx/search/cdx"]


def aggregator_routes(body: dict, ia: str, pt: str, agg: str):
    text = json.dumps(body).replace("{ia}", ia).replace("{pt}", pt).replace("{agg}", agg)

    def routes(key: str):
        if key.startswith("/timemap/json/"):
            return 200, {"content-type": "application/json"}, text.encode()
        return None
    return routes


@pytest.mark.parametrize("failing", ["down", "excluded"])
async def test_one_archive_failing_never_sinks_the_aggregate(failing):
    def pt_routes(key: str):
        if failing == "down":  # handmade: an archive answering 503 without Memento-Datetime
            return 503, {"content-type": "text/html"}, b"Service Unavailable"
        return recorded("wayback_excluded_url")

    body = fixture("handmade_memgator_timemap")["body"]
    with ArchiveReplay("wayback_capture") as ia, ArchiveReplay(routes=pt_routes) as pt, \
            ArchiveReplay() as agg:
        agg.routes = aggregator_routes(body, ia.base, pt.base, agg.base)
        settings = agg.settings(archives=[f"{agg.base}/timemap/json"])
        notes: list[str] = []
        async with Fetcher(settings) as fetcher:
            memento = await fetch_memento(BIRDS, fetcher, settings=settings, unavailable=notes)
    assert memento is not None and memento.archive == f"{ia.base}/web"
    assert memento.document is not None and memento.memento_url.startswith(ia.base)
    assert len(notes) == 1 and notes[0].startswith(f"{pt.base}/wayback: ")
    expected = "archive_unavailable" if failing == "down" else "archive_excluded"
    assert expected in notes[0]


async def test_aggregator_down_is_named_and_the_next_archive_answers():
    with ArchiveReplay("wayback_capture") as ia, \
            ArchiveReplay(routes=lambda key: (502, {}, b"Bad Gateway")) as agg:
        # the IA replay has no CDX or TimeMap recording: give it a listing
        from archive_replay import cdx_rows

        ia.routes = lambda key: (cdx_rows(("20171124151315", BIRDS, "200", "text/html"))
                                 if key.startswith("/cdx/search/cdx") else None)
        settings = agg.settings(archives=[f"{agg.base}/timemap/json", ia.prefix])
        notes: list[str] = []
        async with Fetcher(settings) as fetcher:
            memento = await fetch_memento(BIRDS, fetcher, settings=settings, unavailable=notes)
            assert memento is not None and memento.archive == ia.prefix
            assert any("archive_unavailable" in n and agg.base in n for n in notes)
            with pytest.raises(ArchiveUnavailable):  # only the aggregator, still down
                one = agg.settings(archives=[f"{agg.base}/timemap/json"])
                await archived_redirects(BIRDS, fetcher, one)
