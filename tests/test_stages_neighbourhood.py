"""The neighbourhood's stages (siblings, answer sites, links) and the web rounds, with a
fake context (tests/stage_fakes.py)."""

from __future__ import annotations

import asyncio

from stage_fakes import Listing, ListingEngine, TableEngine, make_context

from pagetrail.tools import policy
from pagetrail.tools.models import Candidate, Hit, Link, Scores
from pagetrail.tools.net.urls import host_of
from pagetrail.tools.recovery.context import Ask
from pagetrail.tools.recovery.homes import Guesses
from pagetrail.tools.recovery.stages import answer_sites, links, siblings, web

DEAD = "https://old.example/news/solar-farms-double.html"


def test_siblings_try_the_slug_under_the_candidates_folders():
    ctx, found = make_context(DEAD, engines=[ListingEngine("mapper")])
    found.add_hit("SITE", Hit(url="https://old.example/read/wind-parks-grow.html", rank=1,
                              engine="mapper"))
    stage = siblings.Siblings(Guesses())
    asks = asyncio.run(stage.plan(ctx, found))
    assert asks.added == 1 and not asks.now
    assert "https://old.example/read/solar-farms-double.html" in {
        e.url for e in found.candidates.values()}
    again = asyncio.run(stage.plan(ctx, found))
    assert again.added == 0  # each transplant once a recovery


def test_no_siblings_for_a_gone_site():
    ctx, found = make_context(DEAD, site_gone=True)
    found.add_hit("SITE", Hit(url="https://old.example/read/wind-parks-grow.html", rank=1,
                              engine="x"))
    assert asyncio.run(siblings.Siblings(Guesses()).plan(ctx, found)).added == 0


def test_siblings_try_the_dead_path_where_the_candidates_show_its_folder_even_for_a_gone_site():
    dead = "https://www.harbourpaper.example/news/solar-farms-double.html"
    ctx, found = make_context(dead, site_gone=True)
    hosts = ("new.example", "harbourpaper-news.example", "third.example", "harbourpaper.org",
             "harbourpaper.net")
    for i, host in enumerate(hosts):
        found.add_hit("TI", Hit(url=f"https://{host}/news/wind-{i}.html", rank=1, engine="web"))
    stage = siblings.Siblings(Guesses())
    asks = asyncio.run(stage.plan(ctx, found))
    # /news/ is no site's own folder: only the hosts named after the site count, and at most
    # two of them a recovery.
    assert asks.added == 2
    assert {e.url for e in found.candidates.values()} >= {
        "https://harbourpaper-news.example/news/solar-farms-double.html",
        "https://harbourpaper.org/news/solar-farms-double.html"}
    assert not any(e.url.startswith(("https://new.example/news/solar",
                                     "https://harbourpaper.net/news/solar"))
                   for e in found.candidates.values())
    assert asyncio.run(stage.plan(ctx, found)).added == 0  # each once a recovery
    restricted, nothing = make_context(dead, methods=frozenset({"TI"}))
    nothing.add_hit("TI", Hit(url="https://harbourpaper.org/news/wind.html", rank=1,
                              engine="web"))
    assert asyncio.run(siblings.Siblings(Guesses()).plan(restricted, nothing)).added == 0


def test_answer_sites_maps_give_pages_carrying_the_query_terms_once_a_recovery():
    copy = "https://mirror.example/2020/solar-farms-double"
    mapper = ListingEngine("mapper", maps={"https://mirror.example/": Listing(
        "https://mirror.example/", pages={copy: "Solar farms double",
                                          "https://mirror.example/about": "About us"})})
    ctx, found = make_context(DEAD, engines=[mapper])
    stage = answer_sites.AnswerSites(["https://mirror.example/", "https://gone.example/"])
    asyncio.run(stage.start(ctx, found))  # the sites are known: the store is not asked
    asks = asyncio.run(stage.plan(ctx, found))
    assert asks.added == 1
    assert [e.url for e in found.candidates.values()] == [copy]
    assert [f.engine for f in found.failures] == ["elsewhere"]  # gone.example lists nothing
    assert asyncio.run(stage.plan(ctx, found)).added == 0  # read once


def test_links_list_the_site_of_a_related_candidate_and_follow_fetched_pages_links():
    other = "https://new.example/energy/solar-farms-double"
    mapper = ListingEngine("mapper")
    ctx, found = make_context(DEAD, engines=[mapper, TableEngine("captures", scope="archive")])
    found.ranked = [Candidate(url="https://new.example/energy/solar", kind="replacement",
                              confidence=0.2, scores=Scores(url_similarity=0.6))]
    stage = links.Links()
    asks = asyncio.run(stage.plan(ctx, found))
    assert {(a.method, a.site, tuple(a.engines)) for a in asks.now} == {
        ("LINKS", "new.example", ("mapper",)), ("LINKS", "new.example", ("captures",))}
    assert "new.example" in found.listed_sites
    found.pages.outlinks["https://new.example/energy/"] = [
        Link(url=other, anchor="Solar farms double"),
        Link(url="https://elsewhere.example/solar", anchor="Solar farms double")]
    assert asyncio.run(stage.settle(ctx, found)) == 1
    assert [e.url for e in found.candidates.values()] == [other]
    assert asyncio.run(stage.settle(ctx, found)) == 0  # a page's links followed once


def test_links_read_a_related_sites_map_though_the_dead_host_is_silent():
    """The site engine is left out for a silent dead host (its timeouts), not for the host
    a related candidate lives on: that host's own map is read by every lister."""
    mapper, captures = ListingEngine("mapper"), TableEngine("captures", scope="archive")
    ctx, found = make_context(DEAD, engines=[mapper, captures], host_silent=True,
                              site_gone=True)
    found.ranked = [Candidate(url="https://new.example/energy/solar", kind="replacement",
                              confidence=0.2, scores=Scores(url_similarity=0.6))]
    stage = links.Links()
    asks = asyncio.run(stage.plan(ctx, found))
    assert {tuple(a.engines) for a in asks.now + asks.then} == {("mapper",), ("captures",)}
    assert {a.site for a in asks.now + asks.then} == {"new.example"}
    # Past policy.SILENT_HOST_MAPS such hosts, only the archive's listing (one request).
    found.ranked = [Candidate(url=f"https://other{i}.example/energy/solar", kind="replacement",
                              confidence=0.2, scores=Scores(url_similarity=0.6))
                    for i in range(policy.SILENT_HOST_MAPS + 1)]
    later = asyncio.run(stage.plan(ctx, found))
    mapped = {a.site for a in later.now if a.engines == ["mapper"]}
    listed = {a.site for a in later.now if a.engines == ["captures"]}
    assert len(mapped) == policy.SILENT_HOST_MAPS - 1 and len(listed) == len(found.ranked)
    # A dead host that answers: every related host's map, as before.
    loud, found_loud = make_context(DEAD, engines=[mapper, captures])
    found_loud.ranked = found.ranked
    asks_loud = asyncio.run(links.Links().plan(loud, found_loud))
    assert {a.site for a in asks_loud.now if a.engines == ["mapper"]} == listed


def test_a_silent_sites_own_new_home_is_mapped_beside_a_republisher():
    """A republisher ranked above the dead site's own new home (a host of its registered
    domain, or one named after it) takes the other sites' map slot, not the home's."""
    mapper, captures = ListingEngine("mapper"), TableEngine("captures", scope="archive")
    dead = "https://www.solarnews.example/news/solar-farms-double.html"
    ctx, found = make_context(dead, engines=[mapper, captures], host_silent=True,
                              site_gone=True)
    related = Scores(url_similarity=0.6)
    found.ranked = [Candidate(url=f"https://press{i}.example/energy/solar",
                              kind="replacement", confidence=0.3, scores=related)
                    for i in range(policy.SILENT_HOST_MAPS + 1)]
    found.ranked += [Candidate(url="https://news.solarnews.example/solar-farms-double",
                               kind="moved", confidence=0.2, scores=related),
                     Candidate(url="https://solarnewshq.example/solar-farms-double",
                               kind="moved", confidence=0.2, scores=related)]
    asks = asyncio.run(links.Links().plan(ctx, found))
    mapped = {a.site for a in asks.now if a.engines == ["mapper"]}
    others = {f"press{i}.example" for i in range(policy.SILENT_HOST_MAPS)}
    # Both are the site's own homes (one of its registered domain, one named after it),
    # in rank order: the first take the slots, as republishers would have.
    own = ["news.solarnews.example", "solarnewshq.example"]
    assert mapped & set(own) == set(own[:policy.SILENT_HOST_MAPS])
    assert mapped - set(own) == others
    assert {a.site for a in asks.now if a.engines == ["captures"]} == {
        host_of(c.url) for c in found.ranked}


def test_home_kind_tells_the_sites_own_hosts_from_other_sites():
    assert links.home_kind("www.solarnews.de", "magazin.solarnews.de") == "own"
    assert links.home_kind("www.solarnews.de", "solarnews-online.com") == "own"
    assert links.home_kind("www.solarnews.de", "press.example.de") == "other"
    # A name too short to tell (policy.MOVED_HOST_NAME_CHARS) is no kinship.
    assert links.home_kind("www.ab.de", "abc.de") == "other"
    # Hosts no suffix list knows (an address, a bare name, nothing) are no kin, and no error.
    for odd in ("", "127.0.0.1", "localhost", "xn--", "a" * 300 + ".de"):
        assert links.home_kind("www.solarnews.de", odd) == "other"
        assert links.home_kind(odd, "www.solarnews.de") == "other"


def test_the_dead_pages_own_links_are_no_lead():
    """A tag page links the dead address and its share buttons (`?share=…`): URLs most like
    the dead one, never its new place; they must not take the link graph's few places."""
    moved = "https://old.example/archive/solar-farms-double-7731"
    ctx, found = make_context(DEAD, engines=[ListingEngine("mapper")])
    found.pages.outlinks["https://old.example/tag/solar/"] = [
        Link(url=DEAD, anchor="Solar farms double"),
        *(Link(url=f"{DEAD}?share={name}", anchor="Solar farms double")
          for name in ("twitter", "facebook", "print")),
        Link(url=moved, anchor="Solar farms double")]
    assert asyncio.run(links.Links().settle(ctx, found)) == 1
    assert [e.url for e in found.candidates.values()] == [moved]


def test_is_dead_page_adds_only_queries_to_an_address_without_one():
    dead = "https://old.example/news/solar-farms-double.html"
    assert links.is_dead_page("http://www.old.example/news/solar-farms-double.html#top", dead)
    assert links.is_dead_page(f"{dead}?share=twitter", dead)
    assert not links.is_dead_page("https://old.example/news/solar-farms-double-2.html", dead)
    assert not links.is_dead_page("https://new.example/news/solar-farms-double.html", dead)
    by_query = "https://old.example/index.php?p=12"
    assert links.is_dead_page(by_query, by_query)
    assert not links.is_dead_page("https://old.example/index.php?p=13", by_query)


def test_links_ask_nothing_when_not_allowed():
    ctx, found = make_context(DEAD, engines=[ListingEngine("mapper")],
                              methods=frozenset({"SITE"}))
    found.ranked = [Candidate(url="https://new.example/x", kind="replacement", confidence=0.2,
                              scores=Scores(url_similarity=0.6))]
    stage = links.Links()
    assert asyncio.run(stage.plan(ctx, found)).now == []
    assert asyncio.run(stage.settle(ctx, found)) == 0


def test_web_rounds_ask_the_web_and_the_index_never_the_site_engines():
    engines = [ListingEngine("mapper"), TableEngine("websearch"), TableEngine("mine",
                                                                              scope="index")]
    ctx, found = make_context(DEAD, engines=engines)
    rounds = web.rounds(ctx, 0)
    assert rounds and all(ask.engines == ["websearch", "mine"]
                          for r in rounds for ask in r.batch)
    assert [r.number for r in rounds] == sorted(r.number for r in rounds)
    first = asyncio.run(rounds[0].plan(ctx, found))
    assert first.now == rounds[0].batch and isinstance(first.now[0], Ask)


def test_no_web_round_without_a_web_engine_or_index():
    ctx, _found = make_context(DEAD, engines=[ListingEngine("mapper")])
    assert web.rounds(ctx, 0) == []


def test_links_list_a_site_named_after_the_gone_one_however_weak_its_page():
    # DEAD is on oldnews.example; a weak page of oldnewshq.example (named after it) and one
    # of an unrelated site are found. Only a gone site's namesake is listed on its name alone.
    weak = Scores(url_similarity=0.05)
    ranked = [Candidate(url="https://www.oldnewshq.example/misc/unrelated-page", kind="replacement",
                        confidence=0.01, scores=weak),
              Candidate(url="https://news.example/misc/unrelated-page", kind="replacement",
                        confidence=0.01, scores=weak)]
    for gone, listed in ((True, {"www.oldnewshq.example"}), (False, set())):
        ctx, found = make_context("https://www.oldnews.example/print/d-1615.html",
                                  engines=[ListingEngine("mapper")], site_gone=gone)
        found.ranked = ranked
        asks = asyncio.run(links.Links().plan(ctx, found))
        assert {a.site for a in asks.now} == listed


def test_a_site_is_named_by_the_label_before_its_public_suffix():
    from pagetrail.tools.content.uritokens import carries_site_name, site_name

    assert site_name("www.bbc.co.uk") == "bbc" and site_name("www.spiegel.de") == "spiegel"
    assert carries_site_name("www.spiegel.de", "www.spiegelhq.de", 4)
    assert not carries_site_name("www.spiegel.de", "www.zeit.de", 4)
    assert not carries_site_name("www.ft.com", "www.draft.com", 4)  # too short a name
