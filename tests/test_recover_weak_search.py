"""Recovery when web search is weak (a format-2 world): the right page is not in the web
index, a popular page outranks it there, and the engine rate-limits."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from pagetrail.tools.recovery.pipeline import Budget, recover
from pagetrail.tools.testbed.runner import start_in_thread
from pagetrail.tools.testbed.worldgen import WorldBuilder

HOST = "https://www.shop.example"
DEAD = f"{HOST}/old/solar-guide"
MOVED = f"{HOST}/guides/solar-panel-buying-guide"
GUIDE = ("Buying solar panels starts with the roof: its angle, its shade and the load it can "
         "carry. Monocrystalline modules give the most power per square metre, polycrystalline "
         "ones cost less. An inverter sized to the array, a meter that counts export and a "
         "installer who registers the system with the grid operator complete the purchase. ")


def _page(title: str, body: str, links: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><main>"
            f"<h1>{title}</h1>{''.join(f'<p>{body}</p>' for _ in range(3))}{links}</main>"
            "</body></html>")


def _world(root, search: dict, *, linked: bool = True):
    b = WorldBuilder(root, name="weak", format=2, search=search,
                     then="2020-01-01T00:00:00Z")
    b.host("www.shop.example")
    b.page(f"{HOST}/", _page("Shop", "Garden tools, solar lights and more."))
    b.capture(DEAD, "20200101000000", html=_page("Solar panel buying guide", GUIDE))
    # Moved, but the web engine has not indexed the new address; nothing but a tag page
    # links to it (no sitemap, not on the root page).
    b.page(MOVED, _page("Solar panel buying guide", GUIDE), indexed=False)
    b.page(f"{HOST}/tags/solar", _page(
        "Solar", "Everything on solar panels: our buying guide and solar lights.",
        (f'<a href="{MOVED}">Solar panel buying guide</a>' if linked else "")
        + f' <a href="{HOST}/deals">Deals</a>'))
    # Popular, and about solar panels too, but not the guide.
    b.page(f"{HOST}/deals", _page("Solar panel deals", "Solar panel deals of the week, buying "
                                  "guide prices: panels, panel kits, solar lights. " * 3),
           popularity=100000)
    return b.write()


def _recover(bed, budget: Budget | None = None):
    return asyncio.run(recover(DEAD, settings=bed.settings(), use_cache=False, budget=budget,
                               link_date=datetime(2020, 2, 1, tzinfo=UTC)))


@pytest.fixture(scope="module")
def weak_bed(tmp_path_factory):
    handle = start_in_thread(_world(tmp_path_factory.mktemp("weak") / "w", {
        "results_per_page": 10, "max_pages": 1, "popularity_weight": 1.0,
        "rate_limit": {"per_second": 2, "burst": 2}}))
    try:
        yield handle
    finally:
        handle.stop()


def test_unindexed_move_is_found_through_the_link_graph(weak_bed):
    recovery = _recover(weak_bed)
    top = recovery.candidates[0]
    assert top.url == MOVED and top.kind == "moved", [(c.url, c.confidence) for c in
                                                      recovery.candidates]
    assert "LINKS" in top.methods
    web_hits = {h.url for q in recovery.queries if q.engine == "searxng" for h in q.hits}
    assert MOVED not in web_hits  # the web engine never returned it
    # The popular page that web search put first is not above the page whose text matches.
    assert all(c.url != f"{HOST}/deals" for c in recovery.candidates[:1])


def _recover_unlinked(tmp_path, rate_limit: dict[str, float], budget: Budget):
    """Recover the moved page in a world where nothing links to it and the web search
    answers at `rate_limit`."""
    bed = start_in_thread(_world(tmp_path / "w", {"rate_limit": rate_limit}, linked=False))
    try:
        return _recover(bed, budget)
    finally:
        bed.stop()


def test_429s_are_waited_out_and_counted(tmp_path):
    # One query a second, none in reserve: a stage's queries, sent together, meet 429s
    # asking for a 1 s wait, which fits in the budget; nothing links to the page, so the
    # recovery goes through every stage.
    recovery = _recover_unlinked(tmp_path, {"per_second": 1, "burst": 1},
                                 Budget(seconds=60, max_queries=6))
    search = recovery.evidence["search"]
    assert search["rate_limited"] >= 1
    assert search["queries"] > search["rate_limited"]
    assert "unasked" not in search
    assert all(f.engine != "search" for f in recovery.failures)


def test_queries_that_cannot_wait_are_reported(tmp_path):
    # One query every 50 s: after the burst, every 429 asks for a wait beyond the budget;
    # nothing links to the moved page, so the recovery goes on asking the web.
    recovery = _recover_unlinked(tmp_path, {"per_second": 0.02, "burst": 1},
                                 Budget(seconds=8, max_queries=6))
    search = recovery.evidence["search"]
    assert search["rate_limited"] >= 1 and search["unasked"]
    failure = next(f for f in recovery.failures if f.engine == "search")
    assert "could not be asked" in failure.error
    assert search["queries"] == search["rate_limited"] + 1  # only the burst was answered


def test_host_variants_are_the_usual_new_addresses():
    from pagetrail.tools.net.urls import host_variants

    variants = host_variants("www.example-shop.de")
    assert variants[0] == "example-shop.de"  # the www. twin first
    assert {"new.example-shop.de", "blog.example-shop.de", "example-shop.com",
            "www.example-shop.org"} <= set(variants)
    assert "www.example-shop.de" not in variants and len(variants) <= 16
    assert host_variants("example.pl")[0] == "www.example.pl"
    # A host deeper than name.tld: only its www. twin (its parent is another site).
    assert host_variants("docs.example.com") == ["www.docs.example.com"]


def test_a_site_gone_from_its_address_is_found_at_a_variant(tmp_path):
    """The old host no longer resolves; the site lives on at its .org twin, which the web
    engine has not indexed: its own map answers, with no web search at all."""
    b = WorldBuilder(tmp_path / "w", name="gone", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.garden-guide.net", state="nxdomain")
    b.host("www.garden-guide.org")
    b.page("https://www.garden-guide.org/", _page("Garden guide", "Guides for gardeners.",
                                                  '<a href="/guides/solar-buying">Solar</a>'))
    b.page("https://www.garden-guide.org/guides/solar-buying",
           _page("Solar panel buying guide", GUIDE), indexed=False)
    b.capture("https://www.garden-guide.net/solar", "20200101000000",
              html=_page("Solar panel buying guide", GUIDE))
    bed = start_in_thread(b.write())
    try:
        settings = bed.settings(search_engines=["site", "cdx"])
        recovery = asyncio.run(recover("https://www.garden-guide.net/solar", settings=settings,
                                       use_cache=False))
    finally:
        bed.stop()
    assert recovery.candidates[0].url == "https://www.garden-guide.org/guides/solar-buying"
    assert recovery.candidates[0].kind == "moved"
    assert recovery.evidence["search"]["site_moved_to"] == ["www.garden-guide.org"]


BRIDGE = ("The harbour bridge reopened on Monday after eight months of repairs to its steel "
          "deck and cables. Engineers replaced corroded hangers, resurfaced both lanes and "
          "fitted new expansion joints, finishing three weeks ahead of the council's plan. ")
OTHER_NEWS = ("Council meeting notes: parking permits, a new library wing, school bus routes "
              "and the budget for street lighting were discussed on Tuesday evening. ")


def test_an_unindexed_copy_is_found_on_a_site_whose_other_pages_rank_low(tmp_path):
    """The dead article lives on only as a copy on another site (a republisher) that the web
    engine has not indexed. Web search returns three other sites' reports first and one
    other article of the republisher lower down: reading that site's own map (root page
    links) finds the copy, though three related sites rank above it."""
    dead = "https://www.citynews.example/2020/harbour-bridge-repairs"
    copy = "https://www.wire.example/story/harbour-bridge-reopens-after-repairs-4411"
    b = WorldBuilder(tmp_path / "w", name="republished", format=2,
                     then="2020-01-01T00:00:00Z")
    b.host("www.citynews.example")
    b.page("https://www.citynews.example/", _page("City news", OTHER_NEWS))
    b.capture(dead, "20200101000000",
              html=_page("Harbour bridge reopens after repairs", BRIDGE))
    for i, site in enumerate(("www.tribune.example", "www.herald.example", "www.post.example")):
        b.host(site)
        half = BRIDGE.split(". ")[i]  # one sentence of the article, the rest about the city
        b.page(f"https://{site}/", _page("News", OTHER_NEWS))
        b.page(f"https://{site}/harbour-bridge-reopens", _page(
            f"Harbour bridge reopens after repairs, {site.split('.')[1]} reports",
            f"{half}. {OTHER_NEWS}"), popularity=50)
    b.host("www.wire.example")
    b.page("https://www.wire.example/", _page(
        "Wire", "Stories from around the region.",
        f'<a href="{copy}">Harbour bridge reopens after repairs</a> '
        '<a href="/story/harbour-bridge-tolls-4410">Harbour bridge tolls</a>'))
    b.page(copy, _page("Harbour bridge reopens after repairs", BRIDGE), indexed=False)
    b.page("https://www.wire.example/story/harbour-bridge-tolls-4410", _page(
        "Harbour bridge tolls to rise", "Tolls on the harbour bridge rise next year. "
        + OTHER_NEWS))
    bed = start_in_thread(b.write())
    try:
        recovery = asyncio.run(recover(dead, settings=bed.settings(), use_cache=False,
                                       link_date=datetime(2020, 2, 1, tzinfo=UTC)))
    finally:
        bed.stop()
    ranked = [(c.url, round(c.confidence, 3)) for c in recovery.candidates]
    web_hits = {h.url for q in recovery.queries if q.engine == "searxng" for h in q.hits}
    assert copy not in web_hits
    assert recovery.candidates[0].url == copy, ranked
    assert "LINKS" in recovery.candidates[0].methods


def test_a_slug_moved_into_a_new_folder_is_found_without_any_search(tmp_path):
    """The site moved its pages into /read/ and lists none of the moved one anywhere (no
    sitemap entry, no link, not indexed): the dead slug under the folder its listed
    siblings use now finds it, with the site's own pages only."""
    host = "https://www.stargazer.example"
    b = WorldBuilder(tmp_path / "w", name="folders", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.stargazer.example")
    b.page(f"{host}/", _page("Stargazer", "Astronomy for everyone.",
                             f'<a href="{host}/read/comet-watch.html">Comets</a> '
                             f'<a href="{host}/read/moon-phases.html">Moon</a>'))
    b.page(f"{host}/read/comet-watch.html", _page("Comet watch", "Comets this winter."))
    b.page(f"{host}/read/moon-phases.html", _page("Moon phases", "Why the moon waxes."))
    b.capture(f"{host}/solar-panel-guide.html", "20200101000000",
              html=_page("Solar panel buying guide", GUIDE))
    b.page(f"{host}/read/solar-panel-guide.html", _page("Solar panel buying guide", GUIDE),
           indexed=False)
    bed = start_in_thread(b.write())
    try:
        recovery = asyncio.run(recover(f"{host}/solar-panel-guide.html", use_cache=False,
                                       settings=bed.settings(search_engines=["site", "cdx"])))
    finally:
        bed.stop()
    top = recovery.candidates[0]
    assert (top.url, top.kind) == (f"{host}/read/solar-panel-guide.html", "moved"), \
        [(c.url, c.confidence) for c in recovery.candidates]


def test_a_site_that_moved_to_a_new_domain_is_found_at_the_dead_path_there(tmp_path):
    """The paper moved its articles to a new domain, paths kept; the old host still answers
    (its home page) but the article is gone there. The link is a bare URL (no linking page,
    no archived copy), the moved article is not in the web index, the new host has no
    sitemap and no variant rule guesses its name: only another article of the dead URL's
    folder, found by web search on the new host, shows where the folder went."""
    old, new = "https://www.harbourtimes.example", "https://www.harbourtimes-online.example"
    folder = "/news/city/harbour/"
    dead = f"{old}{folder}bridge-reopens-after-repairs.html"
    b = WorldBuilder(tmp_path / "w", name="newdomain", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.harbourtimes.example")
    b.page(f"{old}/", _page("Harbour Times", OTHER_NEWS))
    b.host("www.harbourtimes-online.example")
    b.page(f"{new}/", _page("Harbour Times", OTHER_NEWS))
    b.page(f"{new}{folder}bridge-reopens-after-repairs.html",
           _page("Harbour bridge reopens after repairs", BRIDGE), indexed=False)
    b.page(f"{new}{folder}bridge-tolls-to-rise.html", _page(
        "Harbour bridge tolls to rise after repairs",
        "Tolls on the harbour bridge rise next year, after the repairs. " + OTHER_NEWS))
    bed = start_in_thread(b.write())
    try:
        recovery = asyncio.run(recover(dead, settings=bed.settings(), use_cache=False))
    finally:
        bed.stop()
    ranked = [(c.url, round(c.confidence, 3)) for c in recovery.candidates]
    web_hits = {h.url for q in recovery.queries if q.engine == "searxng" for h in q.hits}
    assert f"{new}{folder}bridge-reopens-after-repairs.html" not in web_hits
    assert f"{new}{folder}bridge-tolls-to-rise.html" in web_hits
    assert recovery.candidates[0].url == f"{new}{folder}bridge-reopens-after-repairs.html", \
        ranked
