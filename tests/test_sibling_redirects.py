"""Siblings' live redirects as evidence for a URL-only link (proposal 5 of #27): the pure
choice of siblings and rule, and the siblings stage on a hand-made site (tests/stage_fakes)."""

from __future__ import annotations

import asyncio

from stage_fakes import Listing, ListingEngine, Response, TableFetcher, make_context

from pagetrail.tools.recovery.homes import Guesses
from pagetrail.tools.recovery.sibling_redirects import directory, pick_siblings, proposals
from pagetrail.tools.recovery.stages import siblings

DEAD = "https://www.lab.example/notes/specs/spec-0404/"
MOVED = {f"https://www.lab.example/notes/specs/spec-{n}/": f"https://specs.lab.example/spec-{n}/"
         for n in ("0003", "0101", "0257")}


def test_siblings_are_pages_of_the_same_folder_shaped_like_the_dead_one() -> None:
    listed = ["https://www.lab.example/notes/", "https://www.lab.example/notes/specs/spec-0404/",
              "https://www.lab.example/notes/specs/index.html", *MOVED,
              "https://www.lab.example/blog/spec-0003/", "https://other.example/notes/specs/x/"]
    picked = pick_siblings(DEAD, listed)
    assert picked == list(MOVED)  # shaped alike first; the dead URL, other folders, hosts out
    assert len(pick_siblings(DEAD, listed, limit=2)) == 2
    assert directory(DEAD) == "www.lab.example/notes/specs/"


def test_the_rule_of_agreeing_redirects_is_applied_to_the_dead_url() -> None:
    redirects = list(MOVED.items())[:2]
    assert proposals(DEAD, redirects) == ["https://specs.lab.example/spec-0404/"]
    assert proposals(DEAD, redirects[:1]) == ["https://specs.lab.example/spec-0404/"]
    # siblings redirecting anywhere else (the home page) make no rule that holds for all
    scattered = [(redirects[0][0], "https://www.lab.example/"), redirects[1]]
    assert proposals(DEAD, scattered) == []
    # a redirect to the home page rebuilds nothing from the dead URL's name
    assert proposals(DEAD, [(redirects[0][0], "https://www.lab.example/")]) == []
    assert proposals(DEAD, []) == []


def test_a_rule_learned_from_the_siblings_may_be_a_shape_never_seen() -> None:
    # the name moved into a path parameter on a new host, by the site's own redirects
    redirects = [("https://old.example/kb/reset-password.html",
                  "https://help.example/kb/view;id=reset-password"),
                 ("https://old.example/kb/change-email.html",
                  "https://help.example/kb/view;id=change-email")]
    assert proposals("https://old.example/kb/close-account.html", redirects) == [
        "https://help.example/kb/view;id=close-account"]


def _site(dead_status: int = 404) -> tuple[ListingEngine, TableFetcher]:
    pages = {old: Response(status=301, headers={"location": new}) for old, new in MOVED.items()}
    pages[next(iter(MOVED))] = Response(status=404)  # the redirect map misses pages
    pages[DEAD] = Response(status=dead_status)
    pages["https://specs.lab.example/spec-0404/"] = Response()
    mapper = ListingEngine("mapper", maps={"https://www.lab.example/": Listing(
        "https://www.lab.example/", pages={url: "" for url in MOVED})})
    return mapper, TableFetcher(pages)


def _siblings() -> siblings.Siblings:
    """The siblings stage as a recovery makes it (its own guesses)."""
    return siblings.Siblings(Guesses())


def test_a_url_only_link_gets_the_siblings_rule_with_at_most_three_checks() -> None:
    mapper, fetcher = _site()
    ctx, found = make_context(DEAD, engines=[mapper], fetcher=fetcher)
    stage = _siblings()
    asks = asyncio.run(stage.plan(ctx, found))
    assert "https://specs.lab.example/spec-0404/" in {e.url for e in found.candidates.values()}
    assert asks.added >= 1 and fetcher.requests == 3
    asyncio.run(stage.plan(ctx, found))
    assert fetcher.requests == 3  # once a recovery


def test_a_link_with_words_and_candidates_costs_no_check() -> None:
    mapper, fetcher = _site()
    ctx, found = make_context(DEAD, engines=[mapper], fetcher=fetcher)
    ctx.reference.anchor = "Spec 404"
    found.add_hit("SITE", siblings.Hit(url="https://www.lab.example/notes/other/", rank=1,
                                       engine="mapper"))
    asyncio.run(_siblings().plan(ctx, found))
    assert fetcher.requests == 0


def test_the_siblings_redirects_are_kept_so_the_folder_is_checked_once(store) -> None:
    mapper, fetcher = _site()
    ctx, found = make_context(DEAD, engines=[mapper], fetcher=fetcher, store=store)
    asyncio.run(_siblings().plan(ctx, found))
    assert fetcher.requests == 3
    other = "https://www.lab.example/notes/specs/spec-0500/"
    ctx, found = make_context(other, engines=[mapper], fetcher=fetcher, store=store)
    asyncio.run(_siblings().plan(ctx, found))
    assert fetcher.requests == 3  # the kept redirects answered
    assert "https://specs.lab.example/spec-0500/" in {e.url for e in found.candidates.values()}


def test_a_sibling_still_at_its_address_ends_the_checks() -> None:
    mapper, fetcher = _site()
    first = next(iter(MOVED))
    fetcher.pages[first] = Response(status=200)  # the folder did not move
    ctx, found = make_context(DEAD, engines=[mapper], fetcher=fetcher)
    asyncio.run(_siblings().plan(ctx, found))
    assert fetcher.requests == 1
    assert "https://specs.lab.example/spec-0404/" not in {e.url for e in found.candidates.values()}
