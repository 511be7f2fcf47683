"""The dead-site and moved-host stages, with a fake context (tests/stage_fakes.py)."""

from __future__ import annotations

import asyncio

from stage_fakes import Listing, ListingEngine, Response, TableEngine, TableFetcher, make_context

from pagetrail.tools.models import Hit
from pagetrail.tools.recovery.context import Ask
from pagetrail.tools.recovery.homes import Guesses
from pagetrail.tools.recovery.stages import dead_site, moved_host

DEAD = "https://old.example/news/solar-farms-double.html"


def _engines():
    return [ListingEngine("mapper"), TableEngine("captures", scope="archive"),
            TableEngine("websearch"), TableEngine("mine", scope="index")]


def test_the_dead_site_is_asked_by_scope_not_by_name():
    """A site-scope engine of any name counts its queries as SITE, an archive-scope one as
    CDX; the web and the index are asked the title within the old site; the URL itself is a
    `then` (pages-only) query of the site-local engines."""
    ctx, found = make_context(DEAD, engines=_engines())
    asks = asyncio.run(dead_site.DeadSite().plan(ctx, found))
    assert Ask("SITE", "Solar farms double", ["mapper"]) in asks.now
    assert Ask("SITE", "solar farms double", ["mapper"]) in asks.now
    assert Ask("CDX", "Solar farms double", ["captures"]) in asks.now
    assert Ask("SITE", "Solar farms double", ["websearch", "mine"], "old.example") in asks.now
    assert asks.then == [Ask("SITE", DEAD, ["mapper"]), Ask("CDX", DEAD, ["captures"])]


def test_a_silent_host_is_not_asked_of_the_site_engine():
    ctx, found = make_context(DEAD, engines=_engines(), host_silent=True)
    asks = asyncio.run(dead_site.DeadSite().plan(ctx, found))
    assert all(ask.engines != ["mapper"] for ask in asks.now + asks.then)
    assert any(ask.engines == ["captures"] for ask in asks.now)


def test_methods_not_allowed_are_not_asked():
    ctx, found = make_context(DEAD, engines=_engines(), methods=frozenset({"CDX"}))
    asks = asyncio.run(dead_site.DeadSite().plan(ctx, found))
    assert {ask.method for ask in asks.now + asks.then} == {"CDX"}


def test_a_root_redirecting_elsewhere_makes_that_site_the_home():
    mapper = ListingEngine("mapper", maps={"https://old.example/": Listing(
        "https://old.example/", sites={"old.example", "new.example"})})
    ctx, found = make_context(DEAD, engines=[mapper])
    assert asyncio.run(dead_site.DeadSite().settle(ctx, found)) == 0
    assert found.listed_sites == {"new.example"}
    gone, found_gone = make_context(DEAD, engines=[mapper], site_gone=True)
    asyncio.run(dead_site.DeadSite().settle(gone, found_gone))
    assert found_gone.listed_sites == set()


def test_the_moved_host_is_only_looked_for_when_the_site_is_gone():
    fetcher = TableFetcher({"https://www.old.example/": Response()})
    ctx, found = make_context(DEAD, engines=_engines(), fetcher=fetcher)
    assert asyncio.run(moved_host.MovedHost(Guesses()).plan(ctx, found)).now == []
    assert fetcher.requests == 0


def test_an_answering_variant_host_is_listed_by_every_listing_engine():
    fetcher = TableFetcher({"https://www.old.example/": Response()})
    ctx, found = make_context(DEAD, engines=_engines(), fetcher=fetcher, site_gone=True)
    asks = asyncio.run(moved_host.MovedHost(Guesses()).plan(ctx, found))
    hosts = {ask.site for ask in asks.now + asks.then}
    assert hosts == {"www.old.example"}
    assert {tuple(ask.engines) for ask in asks.now} == {("mapper",), ("captures",)}
    assert {ask.method for ask in asks.now} == {"LINKS"}
    assert asks.context is not None and asks.context.dead_url is None  # not the variant's URL
    assert found.notes.figures["site_moved_to"] == ["www.old.example"]


def test_the_moved_host_step_reads_the_dead_path_where_its_folder_now_is():
    """A page of another subdomain in the dead URL's folder, found within the site: the
    dead path there is read with this step's ranking, before the neighbourhood."""
    dead = "https://www.holidays.example/houses/lierfeld/40222/house-feinen.php"
    ctx, found = make_context(dead, site_gone=True)
    found.add_hit("SITE", Hit(url="https://magazin.holidays.example/houses/lierfeld/40222/"
                                  "other-house.php", rank=1, engine="web"))
    stage = moved_host.MovedHost(Guesses())
    assert asyncio.run(stage.settle(ctx, found)) == 1
    assert "https://magazin.holidays.example/houses/lierfeld/40222/house-feinen.php" in {
        e.url for e in found.candidates.values()}
    assert asyncio.run(stage.settle(ctx, found)) == 0  # once a recovery
