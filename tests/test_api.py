"""tools/api.py (the primitives' facade) and tools/scan/page.py, against the testbed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pagetrail.tools import api
from pagetrail.tools.errors import InvalidURL, NoMemento, RefusedAddress
from pagetrail.tools.models import Candidate, Document, Link, Memento, Recovery
from pagetrail.tools.scan.page import outgoing_links
from pagetrail.tools.settings import Settings

# ------------------------------------------------------------------ pure parts


def _candidate(url: str, kind: str = "replacement") -> Candidate:
    return Candidate(url=url, kind=kind, confidence=0.5)


def test_slim_recovery_keeps_top_candidates_and_the_archived_copy() -> None:
    document = Document(url="https://a.example/x", text="word " * 5000,
                        links=[Link(url="https://b.example/")])
    memento = Memento(original_url="https://a.example/x", memento_url="m", raw_url="r",
                      datetime=datetime(2019, 1, 1, tzinfo=UTC), archive="a",
                      document=document)
    recovery = Recovery(url="https://a.example/x", answer="replacement", memento=memento,
                        candidates=[_candidate(f"https://c.example/{i}") for i in range(8)]
                        + [_candidate("m", "archived")])
    slim = api.slim_recovery(recovery, 3)
    assert [c.url for c in slim.candidates] == ["https://c.example/0", "https://c.example/1",
                                                "https://c.example/2", "m"]
    assert slim.memento is not None and slim.memento.document is not None
    assert len(slim.memento.document.text) <= api.MAX_TEXT_CHARS
    assert slim.memento.document.links == []
    assert len(recovery.candidates) == 9  # the original is not modified


def test_outgoing_links_are_distinct_and_exclude_the_page() -> None:
    page = "https://a.example/page"
    links = [Link(url="https://a.example/page#top"), Link(url="https://b.example/x"),
             Link(url="https://b.example/x#again"), Link(url="mailto:me@a.example"),
             Link(url="https://c.example/")]
    assert [link.url for link in outgoing_links(links, page)] == [
        "https://b.example/x", "https://c.example/"]


def test_split_memento_url_knows_the_configured_archives() -> None:
    settings = Settings(archives=["http://127.0.0.1:9/world"])
    original, moment = api.split_memento_url(
        "http://127.0.0.1:9/world/20190601000000/https://a.example/x", settings)
    assert original == "https://a.example/x" and moment.year == 2019 and moment.month == 6
    assert api.split_memento_url("https://a.example/x", settings) is None


async def test_ensure_fetchable_refuses_private_targets() -> None:
    settings = Settings(proxy=None)
    with pytest.raises(RefusedAddress):
        await api.ensure_fetchable("http://192.168.0.10/router", settings)
    with pytest.raises(RefusedAddress):
        await api.ensure_fetchable("http://localhost:8080/", settings)
    with pytest.raises(InvalidURL):
        await api.ensure_fetchable("javascript:alert(1)", settings)


async def test_input_errors_are_named() -> None:
    with pytest.raises(api.InvalidArgument):
        await api.search_web("   ", settings=Settings())
    with pytest.raises(api.InvalidArgument):
        await api.rank_candidates(["https://a.example/"], settings=Settings())
    with pytest.raises(api.InvalidArgument):
        await api.rank_candidates([], reference_text="x", settings=Settings())


# ------------------------------------------------------------------ against the testbed


@pytest.mark.testbed
async def test_recover_link_trims_and_stores(testbed_settings, store, tiny_world) -> None:
    recovery = await api.recover_link(tiny_world.moved_from, max_candidates=1,
                                      settings=testbed_settings, store=store)
    assert recovery.answer == "moved"
    assert [c.kind for c in recovery.candidates] == ["moved", "archived"]
    assert recovery.queries == []
    again = await api.recover_link(tiny_world.moved_from, max_candidates=1,
                                   include_queries=True, settings=testbed_settings,
                                   store=store)
    assert again.cached and again.candidates[0].url == tiny_world.moved_to


@pytest.mark.testbed
async def test_fetch_memento_none_is_a_named_error(testbed_settings, tiny_world) -> None:
    with pytest.raises(NoMemento):
        await api.fetch_memento(tiny_world.nxdomain_url, settings=testbed_settings)
    memento = await api.fetch_memento(tiny_world.moved_from, at=datetime(2019, 12, 31),
                                      settings=testbed_settings)
    assert memento.datetime.strftime("%Y%m%d%H%M%S") == tiny_world.moved_from_capture


@pytest.mark.testbed
async def test_rank_with_text_lists_unreachable_apart(testbed_settings, tiny_world) -> None:
    result = await api.rank_candidates(
        [tiny_world.wind_page, tiny_world.moved_to, tiny_world.nxdomain_url],
        reference_text="Solar farms doubled their output in a single year across the "
                       "midwest, as photovoltaic prices kept falling.",
        reference_title="Solar farms double in a year", settings=testbed_settings)
    assert result.reference == "text"
    assert result.candidates[0].url == tiny_world.moved_to
    assert [u.url for u in result.unreachable] == [tiny_world.nxdomain_url]


@pytest.mark.testbed
async def test_record_pick_is_read_back(testbed_settings, store, tiny_world) -> None:
    from pagetrail.tools.recovery.memory import picks_for

    pick = await api.record_pick(tiny_world.archived_only, tiny_world.wind_page,
                                 note="closest page", via="test", where="C42", store=store)
    assert pick.chosen_url == tiny_world.wind_page
    stored = picks_for(store, tiny_world.archived_only)
    assert [(p.chosen_url, p.via, p.where, p.note) for p in stored] == [
        (tiny_world.wind_page, "test", "C42", "closest page")]
    with pytest.raises(InvalidURL):
        await api.record_pick("nope", tiny_world.wind_page, store=store)


@pytest.mark.testbed
async def test_scan_page_checks_links_and_respects_the_limit(testbed_settings, store,
                                                            tiny_world) -> None:
    stages: list[str] = []

    def progress(stage: str, done: int, total: int | None, message: str) -> None:
        stages.append(stage)

    scan = await api.scan_page(tiny_world.blog_page, limit=0, settings=testbed_settings,
                               store=store, progress=progress)
    assert scan.dead == 1 and scan.recoveries == []
    assert scan.not_recovered == [tiny_world.moved_from]
    assert scan.links_checked == scan.links_found == len(scan.links)
    assert stages[0] == "page" and stages.count("checking") == scan.links_checked
    limited = await api.scan_page(tiny_world.blog_page, max_links=1, settings=testbed_settings,
                                  store=store)
    assert limited.links_checked == 1 and limited.truncated
