"""Requests a recovery spends (issue #27): the moved host's probes are ordered, capped and
stop at the first answer; candidates are read in two waves, the second skipped when the
first holds the lost page by content; a refused CONNECT can be left unexplained."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from stage_fakes import Response, TableEngine, TableFetcher, make_context

from pagetrail.tools import policy
from pagetrail.tools.content.document import parse_document
from pagetrail.tools.models import Hit
from pagetrail.tools.net.fetch import Fetcher, unexplained_proxy_refusals
from pagetrail.tools.net.urls import host_variants
from pagetrail.tools.ranking.rank import CandidateEvidence, Reference
from pagetrail.tools.recovery.candidates import content_confirms, fetch_candidates, verify_top
from pagetrail.tools.recovery.chain import moved_for_sure
from pagetrail.tools.recovery.stages import moved_host
from pagetrail.tools.recovery.stages.moved_host import probe_order

DEAD = "https://gardenguide.example/news/solar-farms-double.html"

ARTICLE = (
    "Solar farms in the northern valley doubled their output this summer after the county "
    "approved new panels on the old quarry grounds, engineers said on Tuesday. The new "
    "arrays feed the regional grid and cover the demand of twelve thousand homes, while "
    "farmers keep grazing sheep between the rows of panels. Critics worry about the roads."
)
OTHER = (
    "The town council met on Monday to discuss the library budget, the parking rules near "
    "the station and a new bicycle lane along the river; no decision was taken and the "
    "members agreed to meet again next month after hearing from the shop owners there."
)


def _page(title: str, text: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>" \
           f"<p>{text}</p></article></body></html>".encode()


# ------------------------------------------------------------------ the moved host


def test_probe_order_puts_named_kin_first_and_caps():
    named = ["gardenguidehq.example", "unrelated.org", "www.gardenguide.example"]
    order = probe_order("gardenguide.example", named)
    assert order[:2] == ["gardenguidehq.example", "www.gardenguide.example"]
    assert "unrelated.org" not in order  # not a variant, not carrying the name
    assert len(order) == policy.MOVED_HOST_PROBES
    assert len(host_variants("gardenguide.example")) > policy.MOVED_HOST_PROBES


def test_the_name_is_the_label_before_a_public_suffix_of_several_labels():
    """`gardenguide.co.uk` is named `gardenguide`, not `co`: its renamed host is kin, and a
    host that only shares the suffix is not."""
    order = probe_order("www.gardenguide.co.uk", ["gardenguidehq.co.uk", "www.other.co.uk"])
    assert order[0] == "gardenguidehq.co.uk"
    assert "www.other.co.uk" not in order


def test_a_short_name_is_not_matched_inside_other_hosts():
    assert "oldtimer.example" not in probe_order("old.example", ["oldtimer.example"])


def test_probing_stops_after_the_first_wave_with_an_answer():
    """www. and new. both answer: one wave is probed, the likeliest host is kept."""
    fetcher = TableFetcher({"https://www.gardenguide.example/": Response(),
                            "https://new.gardenguide.example/": Response()})
    ctx, found = make_context(DEAD, fetcher=fetcher, site_gone=True)
    hosts = asyncio.run(moved_host.moved_site_hosts(ctx, found))
    assert hosts == ["www.gardenguide.example"]
    assert fetcher.requests == policy.MOVED_HOST_WAVE


def test_a_host_the_evidence_names_is_probed_first():
    fetcher = TableFetcher({"https://gardenguidehq.example/": Response()})
    ctx, found = make_context(DEAD, fetcher=fetcher, site_gone=True)
    found.add_hit("REDIRECT", Hit(url="https://gardenguidehq.example/n/solar", rank=1,
                                  engine="archive"))
    assert asyncio.run(moved_host.moved_site_hosts(ctx, found)) == ["gardenguidehq.example"]
    assert fetcher.requests == policy.MOVED_HOST_WAVE


def test_no_answer_costs_at_most_the_cap():
    fetcher = TableFetcher({})
    ctx, found = make_context(DEAD, fetcher=fetcher, site_gone=True,
                              engines=[TableEngine("websearch")])
    assert asyncio.run(moved_host.moved_site_hosts(ctx, found)) == []
    assert fetcher.requests == policy.MOVED_HOST_PROBES


def test_unexplained_proxy_refusals_is_scoped():
    from pagetrail.tools.net import fetch

    assert fetch._EXPLAIN_PROXY_REFUSAL.get() is True
    with unexplained_proxy_refusals():
        assert fetch._EXPLAIN_PROXY_REFUSAL.get() is False
    assert fetch._EXPLAIN_PROXY_REFUSAL.get() is True


@pytest.mark.testbed
async def test_a_refused_connect_costs_one_request_when_unexplained(testbed_settings, tiny_world):
    async with Fetcher(testbed_settings) as f:
        with unexplained_proxy_refusals():
            before = f.requests
            with pytest.raises(Exception):  # noqa: B017 - any fetch failure will do
                await f.get(tiny_world.nxdomain_url)
            assert f.requests - before == 1
        before = f.requests
        explained = await f.get(tiny_world.nxdomain_url)
        assert explained.squid_error and f.requests - before == 2


# ------------------------------------------------------------------ reading candidates


def _with_memento(ctx):
    memento = parse_document(_page("Solar farms double", ARTICLE), DEAD)
    return dataclasses.replace(ctx, reference=Reference(dead_url=ctx.url, memento=memento,
                                                        lang="en"))


def _candidates(found, urls):
    for i, url in enumerate(urls):  # each the first hit of its own engine: one pre-rank tie
        found.add_hit("TI", Hit(url=url, title="x", rank=1, engine=f"engine{i}"))


URLS = [f"https://gardenguide.example/n/{i}" for i in range(7)]


def test_the_second_wave_is_skipped_when_the_first_holds_the_page():
    pages = {u: Response(content=_page(f"Council {i}", OTHER)) for i, u in enumerate(URLS)}
    pages[URLS[1]] = Response(content=_page("Solar farms double", ARTICLE))
    fetcher = TableFetcher(pages)
    ctx, found = make_context(DEAD, fetcher=fetcher)
    ctx = _with_memento(ctx)
    _candidates(found, URLS)
    asyncio.run(fetch_candidates(ctx, found, moved_for_sure))
    assert fetcher.requests == policy.FIRST_FETCH_WAVE
    assert len(found.pages.fetched) == policy.FIRST_FETCH_WAVE  # the others stay for a later rank


def test_without_a_confirmed_page_every_candidate_is_read():
    pages = {u: Response(content=_page(f"Council {i}", OTHER)) for i, u in enumerate(URLS)}
    pages[URLS[5]] = Response(content=_page("Solar farms double", ARTICLE))  # second wave
    fetcher = TableFetcher(pages)
    ctx, found = make_context(DEAD, fetcher=fetcher)
    ctx = _with_memento(ctx)
    _candidates(found, URLS)
    asyncio.run(fetch_candidates(ctx, found, moved_for_sure))
    assert fetcher.requests == len(URLS)
    assert found.candidates[next(k for k in found.candidates if k.endswith("/n/5"))].document


def test_a_listing_quoting_the_article_confirms_nothing():
    """A page weighed as a list of links (listing degree > 0) never stops the reading, even
    with the article's very text; the same page as an article does."""
    ctx, _found = make_context(DEAD)
    ctx = _with_memento(ctx)
    page = CandidateEvidence(url=URLS[0], document=parse_document(
        _page("Solar farms double", ARTICLE), URLS[0]))
    assert content_confirms(ctx.reference, page, moved_for_sure)
    page.listing = 0.5
    assert not content_confirms(ctx.reference, page, moved_for_sure)
    other = CandidateEvidence(url=URLS[1], document=parse_document(
        _page("Council", OTHER), URLS[1]))
    assert not content_confirms(ctx.reference, other, moved_for_sure)


def _ranked_unread(pages):
    """Two candidates ranked on their URLs alone (nothing fetched): the look-alike first."""
    from pagetrail.tools.ranking.rank import rank_candidates

    fetcher = TableFetcher(pages)
    ctx, found = make_context(DEAD, fetcher=fetcher)
    lookalike = "https://gardenguide.example/news/solar-farms-double.htm"
    other = "https://gardenguide.example/energy/solar-power-news"
    found.add_hit("URL", Hit(url=lookalike, title="", rank=1, engine="site"))
    found.add_hit("URL", Hit(url=other, title="", rank=2, engine="site"))
    found.ranked = rank_candidates(ctx.reference, list(found.candidates.values()))
    assert found.ranked[0].url == lookalike
    return ctx, found, fetcher, lookalike, other


def test_an_unread_top_candidate_is_read_before_it_is_the_answer():
    lookalike = "https://gardenguide.example/news/solar-farms-double.htm"
    pages = {lookalike: Response(status=404)}
    pages["https://gardenguide.example/energy/solar-power-news"] = Response(
        content=_page("Solar farms double", ARTICLE))
    ctx, found, fetcher, lookalike, other = _ranked_unread(pages)
    ranked = asyncio.run(verify_top(ctx, found))
    assert [c.url for c in ranked] == [other]  # the 404 is gone, the next one was read too
    assert fetcher.requests == 2
    assert found.candidates[next(iter(found.candidates))].document is not None


def test_a_read_top_candidate_costs_nothing_more():
    lookalike = "https://gardenguide.example/news/solar-farms-double.htm"
    ctx, found, fetcher, lookalike, _other = _ranked_unread(
        {lookalike: Response(content=_page("Solar farms double", ARTICLE))})
    asyncio.run(verify_top(ctx, found))
    assert found.ranked[0].url == lookalike and fetcher.requests == 1
    asyncio.run(verify_top(ctx, found))  # read already: nothing to do
    assert fetcher.requests == 1


def test_without_web_search_every_variant_is_probed():
    fetcher = TableFetcher({})
    ctx, found = make_context(DEAD, fetcher=fetcher, site_gone=True)  # no web engine
    assert not ctx.engines.web
    asyncio.run(moved_host.moved_site_hosts(ctx, found))
    assert fetcher.requests == len(host_variants("gardenguide.example"))


def test_pages_of_a_gone_host_are_not_read_and_are_no_answer():
    """The check found the dead URL's host gone (silent, unreachable, parked): its other
    pages cost a request each (a silent one, its whole timeout) and can't be a live answer.
    Pages of other hosts are read as ever."""
    elsewhere = "https://mirror.example/n/solar-farms-double"
    pages = {u: Response(content=_page("Solar farms double", ARTICLE))
             for u in (*URLS[:2], elsewhere)}
    for gone, read in ((True, 1), (False, 3)):
        fetcher = TableFetcher(pages)
        ctx, found = make_context(DEAD, fetcher=fetcher, site_gone=gone)
        _candidates(found, [*URLS[:2], elsewhere])
        asyncio.run(fetch_candidates(ctx, found, moved_for_sure))
        assert fetcher.requests == read
        kept = {e.url for e in found.candidates.values()}
        assert kept == ({elsewhere} if gone else {*URLS[:2], elsewhere})


# ------------------------------------------------------------------ how deep a list is read


def test_a_deep_topic_hit_is_read_only_on_a_site_whose_links_are_followed():
    """An anchor query's third hit is read on the dead site (a tag page there may link the
    moved page), not elsewhere; a title query's is read anywhere."""
    from pagetrail.tools.recovery.candidates import fetch_order
    from pagetrail.tools.recovery.context import Budget, DeadURL, Findings

    found = Findings.start(DeadURL(DEAD), Budget())
    deep = policy.TOPIC_FETCH_PER_QUERY + 1
    found.add_hit("ANC", Hit(url="https://gardenguide.example/tag/solar/", rank=deep,
                             engine="searxng"))
    found.add_hit("ANC", Hit(url="https://elsewhere.example/solar", rank=deep,
                             engine="searxng"))
    found.add_hit("TI", Hit(url="https://other.example/c", rank=deep, engine="searxng"))
    assert sorted(e.url for e in fetch_order(found, DEAD, depth=4)) == [
        "https://gardenguide.example/tag/solar/", "https://other.example/c"]
    found.listed_sites.add("elsewhere.example")  # a site the page may have moved to
    assert "https://elsewhere.example/solar" in [e.url for e in fetch_order(found, DEAD, depth=4)]


# ------------------------------------------------------------------ the link graph


def test_only_links_that_are_a_lead_are_followed():
    """A link carrying the query's words, or with an address like the dead one, is followed;
    one that only shares the folder or a common word (a section, the next article) is not."""
    from pagetrail.tools.recovery.stages.links import worth_following

    recall = {"https://s.example/news/solar-farms-doubled": 0.9,
              "https://s.example/news/": 0.2,
              "https://s.example/tag/solar/": policy.LINK_MIN_RECALL - 0.1}
    likeness = {"https://s.example/news/solar-farms-doubled": 0.8,
                "https://s.example/news/council-meets": 0.3,
                "https://s.example/archive/news/solar-farms-double.html":
                    policy.LINK_MIN_LIKENESS}
    assert worth_following(recall, likeness) == {
        "https://s.example/news/solar-farms-doubled",
        "https://s.example/archive/news/solar-farms-double.html"}


def test_follow_links_adds_no_unrelated_link_of_the_folder():
    from pagetrail.tools.models import Link
    from pagetrail.tools.recovery.context import Budget, DeadURL, Findings
    from pagetrail.tools.recovery.stages.links import follow_links

    site = "https://gardenguide.example"
    moved = f"{site}/news/2020/solar-farms-double-their-output"
    links = [Link(url=moved, anchor="Solar farms double their output"),
             Link(url=f"{site}/news/2020/library-budget", anchor="Library budget debated"),
             Link(url=f"{site}/news/", anchor="News")]
    found = Findings.start(DeadURL(DEAD), Budget())
    found.pages.outlinks[f"{site}/news/2020/"] = links
    assert follow_links(found, DEAD, set(), "Solar farms double their output",
                        {"gardenguide.example"}) == 1
    assert [e.url for e in found.candidates.values()] == [moved]


def test_a_topic_query_is_read_less_deep_than_a_query_naming_the_page():
    """The anchor's words, tags or a lexical signature name the page's topic: their lists
    are read to policy.TOPIC_FETCH_PER_QUERY; the title's or the address's to the budget."""
    from pagetrail.tools.recovery.candidates import query_depth, within_depth

    depth = policy.TOPIC_FETCH_PER_QUERY + 2
    for method in ("ANC", "ANC+", "TA", "LS5", "LS7", "LNLS"):
        assert query_depth(method, depth) == policy.TOPIC_FETCH_PER_QUERY
        assert query_depth(method, depth, followed=True) == depth
    for method in ("TI", "URL", "SITE", "LINKS"):
        assert query_depth(method, depth) == depth
    assert query_depth("ANC", 1) == 1  # a shallower budget bounds it
    assert not within_depth([("ANC", "searxng", policy.TOPIC_FETCH_PER_QUERY + 1)], depth)
    assert within_depth([("ANC", "searxng", policy.TOPIC_FETCH_PER_QUERY + 1),
                         ("TI", "searxng", policy.TOPIC_FETCH_PER_QUERY + 1)], depth)



def test_without_web_search_a_query_list_is_read_deeper():
    """The site's map and the archive's lists are all a recovery without a web engine has:
    a hit at rank FETCH_PER_QUERY_NO_WEB is read then, not with a web engine."""
    deep = "https://gardenguide.example/energy/solar-farms-double"
    pages = {deep: Response(content=_page("Solar farms double", ARTICLE))}
    assert policy.FETCH_PER_QUERY < policy.FETCH_PER_QUERY_NO_WEB
    for engines, read in (([], 1), ([TableEngine("websearch")], 0)):
        fetcher = TableFetcher(pages)
        ctx, found = make_context(DEAD, fetcher=fetcher, engines=engines)
        found.add_hit("SITE", Hit(url=deep, title="x", rank=policy.FETCH_PER_QUERY_NO_WEB,
                                  engine="site"))
        asyncio.run(fetch_candidates(ctx, found, moved_for_sure))
        assert fetcher.requests == read
