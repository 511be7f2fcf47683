"""Answers found on another site: remembered from recoveries and picks (store.elsewhere,
on SQLite and PostgreSQL), and read by later recoveries (the pipeline's ELSEWHERE step)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from pagetrail.tools.errors import InvalidURL
from pagetrail.tools.models import Candidate, Recovery, Scores
from pagetrail.tools.recovery.memory import answer_sites, record_answer_elsewhere, record_pick
from pagetrail.tools.recovery.pipeline import answers_elsewhere


def test_a_site_that_answered_for_two_dead_sites_is_an_answer_site(store):
    assert record_answer_elsewhere(store, "https://a.example/x", "https://www.wire.example/1",
                                   kind="replacement", confidence=0.8)
    # By default (policy.ANSWER_SITE_MIN_COPY_SITES) one copy makes a republisher …
    assert [s.site for s in answer_sites(store)] == ["wire.example"]
    # … while any answers need two dead sites to make a pattern
    assert answer_sites(store, min_copy_sites=None) == []
    # The same dead site again does not count twice; the same answer is not stored twice.
    assert record_answer_elsewhere(store, "https://www.a.example/y", "https://wire.example/2",
                                   kind="replacement", confidence=0.7)
    assert not record_answer_elsewhere(store, "https://a.example/x", "https://www.wire.example/1",
                                       kind="replacement", confidence=0.8)
    assert answer_sites(store, min_copy_sites=None) == []
    assert record_answer_elsewhere(store, "https://b.example/z", "https://www.wire.example/3",
                                   kind="moved", confidence=0.9)
    [found] = answer_sites(store, min_copy_sites=None)
    assert (found.site, found.dead_sites, found.answers) == ("wire.example", 2, 3)
    assert found.example_url.startswith(("https://www.wire.example/", "https://wire.example/"))


def test_answer_sites_are_ordered_by_dead_sites_and_exclude_the_dead_link_site(store):
    for dead in ("a", "b", "c"):
        record_answer_elsewhere(store, f"https://{dead}.example/p", f"https://big.example/{dead}",
                                kind="replacement", confidence=0.8)
    for dead in ("a", "b"):
        record_answer_elsewhere(store, f"https://{dead}.example/q", f"https://small.example/{dead}",
                                kind="replacement", confidence=0.8)
    assert [s.site for s in answer_sites(store)] == ["big.example", "small.example"]
    assert [s.site for s in answer_sites(store, limit=1)] == ["big.example"]
    assert [s.site for s in answer_sites(store, exclude_url="https://www.big.example/new")] \
        == ["small.example"]
    assert answer_sites(store, min_dead_sites=3)[0].dead_sites == 3


def test_an_answer_on_the_dead_site_teaches_nothing_and_bad_urls_are_refused(store):
    assert not record_answer_elsewhere(store, "https://a.example/x", "https://www.a.example/y",
                                       kind="moved", confidence=0.9)
    with pytest.raises(InvalidURL):
        record_answer_elsewhere(store, "not a url", "https://b.example/", kind="moved",
                                confidence=0.9)


def test_a_pick_on_another_site_counts(store):
    record_pick(store, "https://a.example/x", "https://mirror.example/x", by="u")
    record_pick(store, "https://b.example/y", "https://mirror.example/y", by="u")
    record_pick(store, "https://c.example/z", "https://mirror.example/z", by="u", rejected=True)
    [found] = answer_sites(store)
    assert (found.site, found.dead_sites) == ("mirror.example", 2)


def _recovery(answer: str, url: str, confidence: float, **scores: float) -> Recovery:
    return Recovery(url="https://dead.example/a", answer=answer, candidates=[
        Candidate(url=url, kind="replacement", confidence=confidence, scores=Scores(**scores))])


def test_a_likely_answer_or_a_copy_on_another_site_is_learnt():
    def learnt(*args: object, **scores: float) -> list[str]:
        return [c.url for c in answers_elsewhere(_recovery(*args, **scores))]

    assert learnt("replacement", "https://wire.example/a", 0.8) == ["https://wire.example/a"]
    # Below the answer threshold but likely: a replacement rarely scores high.
    assert learnt("archived", "https://wire.example/a", 0.35) == ["https://wire.example/a"]
    assert learnt("none", "https://wire.example/a", 0.1) == []
    assert learnt("replacement", "https://www.dead.example/b", 0.9) == []  # the same site
    assert learnt("unverified", "https://wire.example/a", 0.8) == []  # not dead
    # Lower in the list, a page bearing the lost page's title is a copy: learnt too.
    recovery = _recovery("replacement", "https://www.dead.example/b", 0.9)
    recovery.candidates += [
        Candidate(url="https://wire.example/copy", kind="replacement", confidence=0.05,
                  scores=Scores(title_similarity=0.9)),
        Candidate(url="https://news.example/other", kind="replacement", confidence=0.2,
                  scores=Scores(title_similarity=0.3)),
        Candidate(url="https://anchor.example/x", kind="replacement", confidence=0.05,
                  scores=Scores(anchor_dice=0.85)),
        Candidate(url="https://slug.example/a-2", kind="replacement", confidence=0.05,
                  scores=Scores(url_similarity=0.75)),
        Candidate(url="https://slug.example/other", kind="replacement", confidence=0.05,
                  scores=Scores(url_similarity=0.3))]
    assert [c.url for c in answers_elsewhere(recovery)] == [
        "https://wire.example/copy", "https://anchor.example/x", "https://slug.example/a-2"]


# ------------------------------------------------------------------ the pipeline step

TEXT = ("The river ferry resumes its summer timetable with crossings every twenty minutes "
        "from the old quay, a new ramp for bicycles and tickets sold on board. ")
OTHER = "Weather, traffic and the week's events in the valley towns. "


def _page(title: str, body: str, links: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><main>"
            f"<h1>{title}</h1>{''.join(f'<p>{body}</p>' for _ in range(3))}{links}</main>"
            "</body></html>")


def _world(root):
    from pagetrail.tools.testbed.worldgen import WorldBuilder

    b = WorldBuilder(root, name="elsewhere", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.valleynews.example")
    b.page("https://www.valleynews.example/", _page("Valley news", OTHER))
    dead = "https://www.valleynews.example/2019/ferry-summer-timetable"
    b.capture(dead, "20190601000000", html=_page("Ferry summer timetable", TEXT))
    # A republisher: its sitemap lists the copy; no page links to it and the web engine
    # has not indexed it.
    b.host("www.regionwire.example")
    b.page("https://www.regionwire.example/", _page("Region wire", OTHER))
    copy = "https://www.regionwire.example/story/ferry-summer-timetable-5521"
    b.page(copy, _page("Ferry summer timetable", TEXT), indexed=False)
    b.page("https://www.regionwire.example/story/valley-weather-5520",
           _page("Valley weather", OTHER), indexed=False)
    b.resource("https://www.regionwire.example/sitemap.xml", 200,
               {"Content-Type": "application/xml"}, (
                   '<?xml version="1.0"?><urlset '
                   'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                   f"<url><loc>{copy}</loc></url>"
                   "<url><loc>https://www.regionwire.example/story/valley-weather-5520</loc>"
                   "</url></urlset>").encode(), ".xml")
    return b.write(), dead, copy


@pytest.fixture(scope="module")
def elsewhere_world(tmp_path_factory):
    """Served once for the module: the world is read-only (each test brings its own store,
    and the recoveries use no cache)."""
    from pagetrail.tools.testbed.runner import start_in_thread

    root, dead, copy = _world(tmp_path_factory.mktemp("elsewhere") / "w")
    bed = start_in_thread(root)
    try:
        yield bed, dead, copy
    finally:
        bed.stop()


def _recover(bed, dead, store):
    from pagetrail.tools.recovery.pipeline import recover

    return asyncio.run(recover(dead, settings=bed.settings(database_url=store.url),
                               store=store, use_cache=False,
                               link_date=datetime(2019, 7, 1, tzinfo=UTC)))


def test_a_copy_on_a_site_that_held_other_answers_is_found(elsewhere_world, store):
    bed, dead, copy = elsewhere_world
    before = _recover(bed, dead, store)
    assert all(c.url != copy for c in before.candidates)  # nothing leads to the copy
    for other in ("https://a.example/1", "https://b.example/2"):
        record_answer_elsewhere(store, other, "https://www.regionwire.example/story/x",
                                kind="replacement", confidence=0.8)
    after = _recover(bed, dead, store)
    top = after.candidates[0]
    assert top.url == copy and "ELSEWHERE" in top.methods, [
        (c.url, c.confidence) for c in after.candidates]
    assert after.evidence["search"]["answer_sites"] == ["www.regionwire.example"]
    # That answer is on another site, confident: it is remembered in its turn.
    assert after.answer in ("moved", "replacement")
    assert answer_sites(store)[0].answers == 3


def test_an_answer_site_that_cannot_be_read_is_a_named_failure(elsewhere_world, store):
    bed, dead, _copy = elsewhere_world
    for other in ("https://a.example/1", "https://b.example/2"):
        record_answer_elsewhere(store, other, "https://www.nowhere-wire.example/x",
                                kind="replacement", confidence=0.8)
    recovery = _recover(bed, dead, store)
    failure = next(f for f in recovery.failures if f.engine == "elsewhere")
    assert "nowhere-wire.example" in failure.error


def test_an_answer_site_map_is_read_once_a_day_across_recoveries(elsewhere_world, store):
    """Every recovery reads the same few answer sites: the map read by one is kept in the
    store and the next takes it from there, without a request."""
    from pagetrail.tools.engines.site import SiteEngine
    from pagetrail.tools.net.fetch import Fetcher
    from pagetrail.tools.recovery.context import Budget, DeadURL, Findings
    from pagetrail.tools.recovery.stages.answer_sites import site_pages

    bed, _dead, copy = elsewhere_world
    settings = bed.settings(database_url=store.url)
    origin = "https://www.regionwire.example/"

    async def read() -> tuple[dict[str, str], int]:
        async with Fetcher(settings) as fetcher:
            found = Findings.start(DeadURL("https://www.valleynews.example/x"), Budget())
            pages, _error = await site_pages(store, found, SiteEngine(fetcher), origin)
            assert not found.failures
            return pages, fetcher.requests

    first, first_requests = asyncio.run(read())
    again, again_requests = asyncio.run(read())
    assert copy in first and first_requests >= 2  # root page, robots.txt, sitemap
    assert again == first and again_requests == 0


def test_an_answer_site_page_is_taken_for_the_query_words_it_carries_or_is_made_of():
    """A republisher's page is taken when it carries half the link's words, or when its
    address is made of them though it carries few (a truncated slug of a long title); a page
    sharing a word or two is not."""
    from pagetrail.tools.recovery.stages.answer_sites import best_listed

    listed = {
        "https://copies.example/a/explained-our-bi-research-shows-a-mix-of-26660": "",
        "https://copies.example/a/research-budget-cuts-announced-41122": "",
        "https://copies.example/a/weather-report-for-the-weekend-10301": "",
    }
    title = ("Our BI Research Shows a Mix of Native Ad Units Generate the Highest Engagement "
             "Metrics for Marketers and the Greatest Revenue for Publishers")
    assert best_listed(listed, [title]) == [
        "https://copies.example/a/explained-our-bi-research-shows-a-mix-of-26660"]
    short = "weekend weather report"
    assert best_listed(listed, [short]) == [
        "https://copies.example/a/weather-report-for-the-weekend-10301"]
    assert best_listed(listed, ["budget debate in parliament"]) == []


def test_precision_counts_the_page_words_that_are_the_query_terms():
    from pagetrail.tools.engines.overlap import precision, query_terms

    terms = query_terms("solar farms double in a year across the midwest")
    share, matched = precision(terms, "https://x.example/read/solar-farms-double-93", "")
    assert (share, matched) == (1.0, 3)
    share, matched = precision(terms, "https://x.example/read/solar-eclipse-tonight", "")
    assert matched == 1 and share < 0.5
    assert precision([], "https://x.example/a/b", "") == (0.0, 0)


def test_a_site_one_dead_site_moved_to_is_no_answer_site_for_the_others(store):
    """A host one site moved to holds that site's pages, not other sites': it takes two dead
    sites to count; a site holding one copy of another site's page is a republisher."""
    assert record_answer_elsewhere(store, "https://old.example/a", "https://new-old.example/a",
                                   kind="moved", confidence=0.9)
    assert record_answer_elsewhere(store, "https://old.example/b", "https://new-old.example/b",
                                   kind="moved", confidence=0.9)
    assert answer_sites(store) == []
    assert record_answer_elsewhere(store, "https://blog.example/p", "https://copies.example/p",
                                   kind="replacement", confidence=0.4)
    assert [s.site for s in answer_sites(store)] == ["copies.example"]
    assert record_answer_elsewhere(store, "https://other.example/c", "https://new-old.example/c",
                                   kind="moved", confidence=0.9)
    assert [s.site for s in answer_sites(store)] == ["new-old.example", "copies.example"]
