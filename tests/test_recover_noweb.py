"""Moves found without web search (#18): the dead site's own pages and the link graph, when
the slug is made of stop words, when the page hangs off a hub page of the site, and when the
site's root now redirects to another host."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from pagetrail.tools.engines.overlap import is_url_query, rank_by_url, rank_listing
from pagetrail.tools.recovery.pipeline import recover
from pagetrail.tools.testbed.runner import start_in_thread
from pagetrail.tools.testbed.worldgen import WorldBuilder

EVENTS = ("Our picks for horse lovers this month: the autumn dressage show at the county "
          "ground, a trail ride through the beech woods, the young riders' clinic with two "
          "Olympic coaches, and the harvest fair where the pony club sells its cakes. ")
OTHER = ("The city council met on Tuesday to discuss parking permits, a new library wing, "
         "school bus routes and the budget for street lighting in the old town. ")


def _page(title: str, body: str, links: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><main>"
            f"<h1>{title}</h1>{''.join(f'<p>{body}</p>' for _ in range(3))}{links}</main>"
            "</body></html>")


# --- pure: ranking a listing by URL likeness -------------------------------------------------

def test_a_query_that_is_a_url_is_told_apart_from_words():
    assert is_url_query("https://www.example.org/news/4-things-to-do-in-october")
    assert is_url_query("  http://example.org/x  ")
    assert not is_url_query("4 things to do in october")
    assert not is_url_query("site:example.org things")
    assert not is_url_query("https://example.org/a b")  # words after a URL: a text query


def test_url_likeness_keeps_the_stop_words_that_term_overlap_drops():
    dead = "https://mag.example/news/4-things-to-do-in-october"
    listing = [
        ("https://mag.example/news/the-guardian-view-on-hong-kong", "The Guardian view"),
        ("https://mag.example/category/october/", "Category: October"),
        ("https://mag.example/about", "About us"),
    ]
    ranked = rank_by_url(dead, listing)
    # The hub page named by one word of the slug first; a page that shares only the
    # folder after it; one that shares nothing is no hit.
    assert [url for url, _text, _score in ranked] == [listing[1][0], listing[0][0]]
    assert ranked[0][1] == "Category: October" and 0 < ranked[1][2] < ranked[0][2] <= 1
    # Term overlap cannot see it: every word of the slug but "things" is a stop word.
    overlap_urls = [url for url, _t, _s in rank_listing("things news", listing)]
    assert listing[1][0] not in overlap_urls
    assert [url for url, _t, _s in rank_listing(dead, listing)] == [u for u, _t, _s in ranked]


def test_url_likeness_prefers_the_renamed_page_to_its_folder_neighbours():
    dead = "https://ext.example/items-we-never-knew-we-wanted/1/"
    moved = "https://ext.example/items-we-never-knew-we-wanted/2017/09/items-we-never-knew-we-wanted/"
    neighbour = "https://ext.example/items-we-never-knew-we-wanted/2017/09/malaga-old-town/"
    ranked = rank_by_url(dead, [(neighbour, ""), (moved, ""), ("https://ext.example/", "")])
    assert [url for url, _t, _s in ranked] == [moved, neighbour]


def test_a_tag_page_named_by_one_slug_word_ranks_below_the_renamed_page():
    """A one-word slug overlaps any slug that has the word completely; sharing one word is
    still weaker evidence than sharing several."""
    dead = "https://www.maker.example/article/3dprinting.gets.a.turbo.boost.from.um.technology"
    renamed = "https://www.maker.example/article/3d-printing-gets-a-turbo"
    tag = "https://www.maker.example/tag/technology/"
    assert [url for url, _t, _s in rank_by_url(dead, [(tag, ""), (renamed, "")])] == [
        renamed, tag]


# --- the pipeline, without web search ---------------------------------------------------------

def _no_web(bed):
    return bed.settings(search_engines=["site", "cdx"])


def test_a_stop_word_slug_is_found_through_the_hub_page_named_by_it(tmp_path):
    """The page was renamed (/4-things-to-do-in-october → /4-things-to-do), is in no sitemap
    and not on the root page; the root links a category page named by one word of the old
    slug ("october", a stop word to term overlap), which links to the page."""
    site = "https://www.horsemag.example"
    dead, moved = f"{site}/news/4-things-to-do-in-october", f"{site}/news/4-things-to-do"
    b = WorldBuilder(tmp_path / "w", name="hub", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.horsemag.example")
    b.page(f"{site}/", _page("Horse magazine", "News for riders.",
                             f'<a href="{site}/news/council-parking">Parking</a> '
                             f'<a href="{site}/news/library-wing">Library</a> '
                             f'<a href="{site}/category/october/">Category: October</a>'))
    for slug in ("council-parking", "library-wing"):
        b.page(f"{site}/news/{slug}", _page("Council news", OTHER))
    b.page(f"{site}/category/october/", _page(
        "Category: October", "Everything filed under October.",
        f'<a href="{moved}">Our picks for horse lovers</a> '
        f'<a href="{site}/news/library-wing">Library</a>'))
    b.page(moved, _page("Our picks for horse lovers", EVENTS), indexed=False)
    b.capture(dead, "20200101000000", html=_page("Our picks for horse lovers", EVENTS))
    bed = start_in_thread(b.write())
    try:
        recovery = asyncio.run(recover(dead, settings=_no_web(bed), use_cache=False,
                                       link_date=datetime(2020, 2, 1, tzinfo=UTC)))
    finally:
        bed.stop()
    top = recovery.candidates[0]
    assert (top.url, top.kind) == (moved, "moved"), [(c.url, c.confidence)
                                                     for c in recovery.candidates]
    assert "LINKS" in top.methods
    assert any(q.text == dead and q.engine == "site" for q in recovery.queries)
    # The URL query only adds pages: a news page the word query ("things news") listed too
    # keeps that one vote (the same listing ranked another way is no new evidence).
    votes = {c.url: c.scores.query_votes for c in recovery.candidates}
    assert votes[f"{site}/news/council-parking"] == 1, votes


def test_a_site_whose_root_redirects_to_a_new_host_is_followed_there(tmp_path):
    """The old host still answers (404 for the page) but its root redirects to the site's new
    host, where the page lives under a new folder, linked only from a tag page: the new
    host's pages are the site's own, so their links are followed."""
    old, new = "https://www.council.example", "https://www.council-online.example"
    dead = f"{old}/SharedDocs/texte/22/20220127-harbour-bridge-reopening.html"
    moved = f"{new}/inhalte/texte/22/20220127-harbour-bridge-reopening.html"
    bridge = ("The harbour bridge reopened on Monday after eight months of repairs to its steel "
              "deck and cables. Engineers replaced corroded hangers, resurfaced both lanes and "
              "fitted new expansion joints, finishing three weeks ahead of plan. ")
    b = WorldBuilder(tmp_path / "w", name="rehomed", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.council.example")
    b.host("www.council-online.example")
    b.redirect(f"{old}/", f"{new}/")
    b.page(f"{new}/", _page("Council", "The council's news.",
                            f'<a href="{new}/schlagwort/repairs/">Tag: repairs</a> '
                            f'<a href="{new}/inhalte/texte/22/library-wing">Library</a>'))
    b.page(f"{new}/inhalte/texte/22/library-wing", _page("Library wing", OTHER))
    # The tag page is like the article in nothing but one word of its title (not of its
    # URL): only the site's own link graph leads from it to the page.
    b.page(f"{new}/schlagwort/repairs/", _page(
        "Keyword index", OTHER,
        f'<a href="{moved}">Harbour bridge reopens</a>'))
    b.page(moved, _page("Harbour bridge reopens after repairs", bridge), indexed=False)
    b.capture(dead, "20200101000000", html=_page("Harbour bridge reopens after repairs",
                                                 bridge))
    bed = start_in_thread(b.write())
    try:
        recovery = asyncio.run(recover(dead, settings=_no_web(bed), use_cache=False,
                                       link_date=datetime(2020, 2, 1, tzinfo=UTC)))
    finally:
        bed.stop()
    top = recovery.candidates[0]
    assert (top.url, top.kind) == (moved, "moved"), [(c.url, c.confidence)
                                                     for c in recovery.candidates]
    assert "LINKS" in top.methods


def test_link_following_fuses_term_overlap_and_url_likeness():
    """A hub page lists many comparisons whose anchors match the archived title as well as
    the moved page's does ("X vs. Coinbase: How Do They Compare?"), with shorter URLs; the
    moved page's URL is the most like the dead one, so it is among the links fetched."""
    from pagetrail.tools.models import Link
    from pagetrail.tools.policy import LINK_CANDIDATES
    from pagetrail.tools.recovery.context import Budget, DeadURL, Findings
    from pagetrail.tools.recovery.stages.links import follow_links

    site = "https://www.money.example"
    dead = f"{site}/coinbase-vs-coinbase-pro-5116733"
    moved = f"{site}/coinbase-vs-coinbase-pro-how-do-they-compare-today"
    links = [Link(url=f"{site}/{name}-vs-coinbase-51{i:05d}",
                  anchor=f"{name.title()} vs. Coinbase: How Do They Compare?")
             for i, name in enumerate(("exodus", "gemini", "kraken", "binance", "robinhood",
                                       "bitmart", "okex"))]
    links.append(Link(url=moved, anchor="Coinbase vs. Coinbase Pro: How Do They Compare?"))
    found = Findings.start(DeadURL(dead), Budget())
    found.pages.outlinks[f"{site}/topics/coinbase"] = links
    added = follow_links(found, dead, set(), "Coinbase vs. Coinbase Pro: How do they compare?",
                         {"money.example"})
    assert added == LINK_CANDIDATES
    hits = {e.url: e.hits for e in found.candidates.values()}
    assert len(hits[moved]) == 1 and hits[moved][0][:2] == ("LINKS", "links")


def test_links_to_another_host_of_the_site_are_followed():
    """The dead site moved a section to its own subdomain (www.…/health/x → health.…/x);
    a tag page of the old host links the page there. A link to another registered domain
    (a look-alike site) is not the site's, however like the dead URL, and a link whose
    query carries an address (a login page's `?redirect=`, a tracker) is no page of its own.
    A malformed link is skipped."""
    from urllib.parse import quote

    from pagetrail.tools.models import Link
    from pagetrail.tools.recovery.context import Budget, DeadURL, Findings
    from pagetrail.tools.recovery.stages.links import follow_links

    dead = "https://www.paper.example/health/tired-all-the-time-these-illnesses-id4598"
    moved = "https://health.paper.example/tired-all-the-time-these-illnesses-id4598"
    elsewhere = "https://www.paper-copy.example/health/tired-all-the-time-these-illnesses"
    found = Findings.start(DeadURL(dead), Budget())
    found.pages.outlinks["http://paper.example/tag/tired"] = [
        Link(url=moved, anchor="Tired all the time: these illnesses may be why"),
        Link(url=elsewhere, anchor="Tired all the time: these illnesses may be why"),
        Link(url=f"https://login.paper.example/?redirect={quote(dead, safe='')}",
             anchor="Tired all the time: these illnesses may be why"),
        # a page's links are untrusted: one that does not parse is skipped, not raised
        Link(url="http://[paper.example/health/tired-all-the-time", anchor="Tired all the time")]
    added = follow_links(found, dead, set(), "Tired all the time: these illnesses",
                         {"paper.example"})
    assert added == 1
    assert [e.url for e in found.candidates.values()] == [moved]


def test_a_section_moved_to_its_own_host_is_found_in_that_hosts_map(tmp_path):
    """URL only (no archived copy, no linking page): the site moved its documents from
    www.…/dev/docs/ to their own host, under date folders (/2018/05/dev-docs/…) that differ
    from page to page. The old host's root links two of them; the moved page is linked
    from nowhere and indexed nowhere, only the new host's map lists it. A candidate on
    that host makes its map searched for URLs like the dead one (`stages.links`): the dead
    slug is found under the new layout."""
    old, new = "https://www.pylang.org", "https://docs.pylang.org"
    dead = f"{old}/dev/docs/doc-0592/"
    moved = f"{new}/2021/05/dev-docs/doc-0592/"
    # siblings that any words of the dead URL ("dev docs doc") match as well as the page
    others = [f"{new}/{2009 + i % 11}/{1 + i % 12:02d}/dev-docs/doc-{200 + 17 * i:04d}/"
              for i in range(14)]
    filler = [f"{new}/{2010 + i % 12}/{1 + i % 12:02d}/doc-{1000 + i}/" for i in range(40)]
    b = WorldBuilder(tmp_path / "w", name="subdomain", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.pylang.org")
    b.host("docs.pylang.org")
    b.page(f"{old}/", _page("The language", "Downloads, documentation and news.",
                            "".join(f'<a href="{u}">A document</a> ' for u in others[:2])))
    b.page(f"{new}/", _page("Documents", "The language's design documents."))
    for number, url in enumerate([*others, *filler]):
        b.page(url, _page(f"Document {number}", OTHER), indexed=False)
    b.page(moved, _page("Doc 592 – Adding yank support to the simple repository", EVENTS),
           indexed=False)
    urls = [*filler[:20], moved, *others, *filler[20:]]
    sitemap = ('<?xml version="1.0" encoding="UTF-8"?><urlset '
               'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
               + "".join(f"<url><loc>{u}</loc></url>" for u in urls) + "</urlset>")
    b.resource(f"{new}/sitemap.xml", 200, {"Content-Type": "application/xml"},
               sitemap.encode(), ".xml")
    bed = start_in_thread(b.write())
    try:
        recovery = asyncio.run(recover(dead, settings=_no_web(bed), use_cache=False,
                                       link_date=datetime(2020, 2, 1, tzinfo=UTC)))
    finally:
        bed.stop()
    found = [c.url for c in recovery.candidates]
    assert moved in found, found
    assert any(q.text == dead and q.engine == "site" and q.site == "docs.pylang.org"
               for q in recovery.queries), [(q.text, q.engine, q.site) for q in recovery.queries]
    assert recovery.candidates[0].url == moved, [(c.url, c.confidence)
                                                 for c in recovery.candidates]
