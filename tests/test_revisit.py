"""A remembered answer that told no live page is stale once the store learnt what could answer
it (tools.recovery.revisit), and batches ask such links once more at their end: the pipeline's
cache, the dispatcher's `recover` (batch, fix, digests) and the evaluation (eval_runner)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from pagetrail.tools.eval.eval_runner import EngineChoice, combined, revisits, run_evaluation
from pagetrail.tools.eval.evaluate import Answer, CaseResult
from pagetrail.tools.models import Candidate, CheckResult, Recovery, Scores
from pagetrail.tools.recovery import revisit
from pagetrail.tools.recovery.memory import (
    answer_sites,
    keep_listing,
    record_answer_elsewhere,
    record_move,
)

TEXT = ("The river ferry resumes its summer timetable with crossings every twenty minutes "
        "from the old quay, a new ramp for bicycles and tickets sold on board. ")
FESTIVAL = ("The harbour lights festival returns for its tenth year with lanterns on the "
            "water, a night market along the pier and music until midnight. ")
OTHER = "Weather, traffic and the week's events in the valley towns. "
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><main>"
            f"<h1>{title}</h1>{''.join(f'<p>{body}</p>' for _ in range(3))}</main>"
            "</body></html>")


def _world(root):
    """Two dead articles of two sites, each republished by one wire: the ferry's copy is
    only in the wire's sitemap (no page links to it, no engine indexed it), the festival's
    is indexed — recovering the festival teaches the store that the wire holds copies."""
    from pagetrail.tools.testbed.worldgen import WorldBuilder

    b = WorldBuilder(root, name="revisit", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.valleynews.example")
    b.page("https://www.valleynews.example/", _page("Valley news", OTHER))
    ferry = "https://www.valleynews.example/2019/ferry-summer-timetable"
    b.capture(ferry, "20190601000000", html=_page("Ferry summer timetable", TEXT))
    b.host("www.hillpost.example")
    b.page("https://www.hillpost.example/", _page("Hill post", OTHER))
    festival = "https://www.hillpost.example/news/harbour-lights-festival-returns"
    b.capture(festival, "20190601000000",
              html=_page("Harbour lights festival returns", FESTIVAL))
    bridge = "https://www.hillpost.example/news/old-bridge-repairs"
    b.capture(bridge, "20190601000000", html=_page("Old bridge repairs", OTHER))
    b.host("www.regionwire.example")
    b.page("https://www.regionwire.example/", _page("Region wire", OTHER))
    ferry_copy = "https://www.regionwire.example/story/ferry-summer-timetable-5521"
    festival_copy = "https://www.regionwire.example/story/harbour-lights-festival-returns-5530"
    b.page(ferry_copy, _page("Ferry summer timetable", TEXT), indexed=False)
    b.page(festival_copy, _page("Harbour lights festival returns", FESTIVAL))
    b.resource("https://www.regionwire.example/sitemap.xml", 200,
               {"Content-Type": "application/xml"}, (
                   '<?xml version="1.0"?><urlset '
                   'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                   f"<url><loc>{ferry_copy}</loc></url><url><loc>{festival_copy}</loc></url>"
                   "</urlset>").encode(), ".xml")
    return b.write(), ferry, ferry_copy, festival, festival_copy, bridge


@pytest.fixture(scope="module")
def wire_world(tmp_path_factory):
    from pagetrail.tools.testbed.runner import start_in_thread

    root, *urls = _world(tmp_path_factory.mktemp("revisit") / "w")
    bed = start_in_thread(root)
    try:
        yield bed, *urls
    finally:
        bed.stop()


def _recover(bed, url, store):
    from pagetrail.tools.recovery.pipeline import recover

    return asyncio.run(recover(url, settings=bed.settings(database_url=store.url), store=store,
                               link_date=datetime(2019, 7, 1, tzinfo=UTC)))


def _live(recovery):
    return [c for c in recovery.candidates if c.kind != "archived"]


# --- the pipeline's cache ----------------------------------------------------------------

def test_an_unanswered_link_is_answered_afresh_once_a_wire_holds_copies(wire_world, store):
    bed, ferry, ferry_copy, *_ = wire_world
    first = _recover(bed, ferry, store)
    assert first.answer in revisit.UNANSWERED
    assert all(c.url != ferry_copy for c in first.candidates)  # nothing leads to the copy
    assert first.evidence["search"]["answer_sites"] == []  # it looked: none were known
    again = _recover(bed, ferry, store)
    assert again.cached and again.requests == 0  # nothing learnt: the answer stands
    for other in ("https://a.example/1", "https://b.example/2"):
        record_answer_elsewhere(store, other, "https://www.regionwire.example/story/x",
                                kind="replacement", confidence=0.8)
    # The wire's map is evidence once a recovery kept it (the answer sites' stage does):
    # a map nobody read is none, and asking the cache reads no map.
    assert _recover(bed, ferry, store).cached
    keep_listing(store, "https://www.regionwire.example/", {ferry_copy: ""})
    afresh = _recover(bed, ferry, store)
    assert not afresh.cached and afresh.requests > 0
    assert "www.regionwire.example" in afresh.evidence["revisited"]
    assert _live(afresh)[0].url == ferry_copy and afresh.answer in ("moved", "replacement")
    # A live answer is never stale here: given again.
    assert _recover(bed, ferry, store).cached


def test_a_new_answer_site_whose_map_lists_nothing_for_the_link_changes_nothing(
        wire_world, store):
    bed, ferry, *_ = wire_world
    first = _recover(bed, ferry, store)
    assert first.answer in revisit.UNANSWERED
    origin = "https://www.otherwire.example/"
    keep_listing(store, origin, {"https://www.otherwire.example/a/valley-weather-91": ""})
    record_answer_elsewhere(store, "https://c.example/3", "https://www.otherwire.example/a/z",
                            kind="replacement", confidence=0.8)
    assert [s.site for s in answer_sites(store)] == ["otherwire.example"]
    assert _recover(bed, ferry, store).cached


# --- what counts as learnt (no testbed) ----------------------------------------------------

def _none(url: str, **search) -> Recovery:
    return Recovery(url=url, answer="none", check=CheckResult(url=url, verdict="dead"),
                    evidence={"search": search} if search else {})


def test_what_a_links_own_recovery_recorded_is_no_news_to_it(store):
    dead = "https://www.valleynews.example/2019/ferry"
    record_answer_elsewhere(store, dead, "https://www.wire.example/story/ferry-1",
                            kind="replacement", confidence=0.4)
    assert answer_sites(store, exclude_url=dead) == []
    assert [s.site for s in answer_sites(store)] == ["wire.example"]
    stale = _none(dead, answer_sites=[], listing_queries=["ferry"])
    assert revisit.learned_since(store, stale, NOW) is None


def test_only_an_unanswered_recovery_that_looked_up_answer_sites_learns_of_new_ones(store):
    record_answer_elsewhere(store, "https://a.example/1", "https://www.wire.example/story/x",
                            kind="replacement", confidence=0.8)
    dead = "https://www.valleynews.example/2019/ferry"
    looked = _none(dead, answer_sites=[], listing_queries=["ferry summer timetable"])
    assert revisit.learned_since(store, looked, NOW) is None  # nobody kept its map: no news
    keep_listing(store, "https://www.wire.example/",
                 {"https://www.wire.example/story/ferry-summer-timetable-9": ""})
    assert "www.wire.example" in revisit.learned_since(store, looked, NOW)
    assert revisit.learned_since(store, looked, NOW, methods=frozenset({"TI"})) is None
    assert revisit.learned_since(store, _none(dead), NOW) is None  # it had nothing to ask
    read = _none(dead, answer_sites=["www.wire.example"], listing_queries=["ferry"])
    assert revisit.learned_since(store, read, NOW) is None
    moved = looked.model_copy(update={"answer": "moved"})
    assert revisit.learned_since(store, moved, NOW) is None
    # A remembered answer's evidence is stored JSON: malformed notes are no news, no crash.
    for junk in ({"answer_sites": "www.wire.example", "listing_queries": ["ferry"]},
                 {"answer_sites": [], "listing_queries": "ferry summer timetable"},
                 {"answer_sites": [], "listing_queries": []}):
        assert revisit.learned_since(store, _none(dead, **junk), NOW) is None
    odd = _none(dead).model_copy(update={"evidence": {"search": "not a dict"}})
    assert revisit.learned_since(store, odd, NOW) is None


def test_moves_recorded_since_make_the_sites_rules_propose_a_new_address(store):
    for slug in ("river-walk", "old-mill", "town-hall"):
        record_move(store, f"https://www.valleynews.example/2019/{slug}",
                    f"https://www.valleynews.example/archive/2019/{slug}", source="live redirect")
    dead = "https://www.valleynews.example/2019/ferry-summer-timetable"
    before = datetime(2000, 1, 1, tzinfo=UTC)
    reason = revisit.learned_since(store, _none(dead), before)
    assert reason is not None and "archive/2019/ferry-summer-timetable" in reason
    assert revisit.learned_since(store, _none(dead), datetime(2999, 1, 1, tzinfo=UTC)) is None
    proposed = "https://www.valleynews.example/archive/2019/ferry-summer-timetable"
    considered = _none(dead).model_copy(update={"candidates": [
        Candidate(url=proposed, kind="moved", confidence=0.1, scores=Scores())]})
    assert revisit.learned_since(store, considered, before) is None


# --- the evaluation -----------------------------------------------------------------------

def _result(answer: str, requests: int, revisited: str | None = None, **kw) -> CaseResult:
    return CaseResult(id="c1", verdict="dead", answer=answer, requests=requests, seconds=1.0,
                      revisited=revisited, purposes={"page fetch": {"requests": requests,
                                                                     "seconds": 1.0}}, **kw)


def test_the_evaluation_revisits_unanswered_cases_and_counts_both_runs():
    first = _result("none", 10)
    assert revisits([first, _result("moved", 5), _result("archived", 3),
                     _result("none", 0, error="timeout: x")]) == [0, 2]
    assert combined(first, _result("none", 0)) is first  # the remembered answer again
    assert combined(first, _result("none", 4, error="timeout: x")) is first
    # nothing remembered (the first run not kept): the second did the work, and counts
    assert combined(first, _result("none", 4)).requests == 14
    after = combined(first, _result("replacement", 7, "answer sites learnt since: w",
                                    answers=[Answer("https://w.example/a", "replacement",
                                                    0.95)]))
    assert (after.answer, after.requests, after.seconds) == ("replacement", 17, 2.0)
    assert after.purposes == {"page fetch": {"requests": 17, "seconds": 2.0}}
    assert after.to_dict()["revisited"] == "answer sites learnt since: w"
    assert CaseResult.from_dict(after.to_dict()).revisited == after.revisited


def test_run_evaluation_asks_again_through_the_remembered_answer(store):
    calls: list[bool] = []

    async def engine(url: str, *, use_cache: bool = True, **_):
        calls.append(use_cache)
        check = CheckResult(url=url, verdict="dead")
        if not use_cache:
            return Recovery(url=url, answer="none", check=check, requests=9)
        return Recovery(url=url, answer="replacement", check=check, requests=6,
                        evidence={"revisited": "answer sites learnt since: w.example"},
                        candidates=[Candidate(url="https://w.example/a", kind="replacement",
                                              confidence=0.97, scores=Scores())])

    cases = [{"id": "c1", "url": "https://gone.example/a"}]
    [result] = asyncio.run(run_evaluation(cases, engine=EngineChoice(engine, "test"),
                                          store_for=lambda _m: store))
    assert calls == [False, True]
    assert (result.answer, result.requests) == ("replacement", 15)
    assert result.revisited == "answer sites learnt since: w.example"
    calls.clear()
    asyncio.run(run_evaluation(cases, engine=EngineChoice(engine, "test")))
    assert calls == [False]  # no store: nothing is learnt, nothing revisited


# --- batches: the dispatcher -------------------------------------------------------------

def test_a_batch_asks_its_unanswered_links_again_after_the_rest(wire_world, store,
                                                                 monkeypatch):
    """The ferry comes first and finds nothing; the festival's recovery then finds its copy
    on the wire by search, which makes the wire an answer site, and the bridge's reads (and
    keeps) the wire's map; the batch's second pass answers the ferry from that map. Rerun,
    the batch recovers nothing again."""
    from pagetrail.tools.workers import dispatch

    bed, ferry, ferry_copy, festival, festival_copy, bridge = wire_world
    monkeypatch.setitem(dispatch.IN_PROCESS_CONCURRENCY, "recover", 1)  # in input order
    settings = bed.settings(database_url=store.url)
    items = [{"url": url, "date": "2019-07-01"} for url in (ferry, festival, bridge)]
    records = asyncio.run(dispatch.InProcessDispatcher(settings, store).recover(items))
    assert [r.status for r in records] == ["done"] * 3
    assert [r.input for r in records] == items
    ferry_answer, festival_answer, _bridge = (r.result for r in records)
    assert _bridge["evidence"]["search"]["answer_sites"] == ["www.regionwire.example"]
    assert festival_answer["candidates"][0]["url"] == festival_copy
    assert "www.regionwire.example" in ferry_answer["evidence"]["revisited"]
    assert ferry_answer["candidates"][0]["url"] == ferry_copy
    first_run = asyncio.run(dispatch.InProcessDispatcher(settings, store).run(
        "recover", items[:1])).pop().result
    assert ferry_answer["requests"] > first_run["requests"] > 0  # both runs counted
    again = asyncio.run(dispatch.InProcessDispatcher(settings, store).recover(items))
    assert [r.result for r in again] == [r.result for r in records]


def test_the_report_says_how_many_cases_were_asked_again():
    from pagetrail.tools.eval.evaluate import build_report

    cases = [{"id": f"c{i}", "url": f"https://gone.example/{i}", "category": "gone",
              "expect": {"kind": "none", "urls": []}} for i in (1, 2)]
    plain = [replace(_result("none", 3), id=c["id"]) for c in cases]
    assert "revisited" not in build_report("w", cases, plain)  # FORMAT.md's shape, unchanged
    asked = [plain[0], replace(plain[1], revisited="answer sites learnt since: w")]
    report = build_report("w", cases, asked)
    assert report["revisited"] == 1
    assert set(report["cost"]) == {"requests_median", "requests_p90", "seconds_median",
                                   "seconds_p90"}
