"""The chain's step (plan, ask together, complement, settle, rank) and its stop rule, the
direct stage and the engines' scopes, with a fake context (tests/stage_fakes.py)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from stage_fakes import ListingEngine, Response, TableEngine, TableFetcher, make_context

from pagetrail.tools import policy
from pagetrail.tools.engines.base import scope_of
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.models import ArchivedRedirect, Candidate, Scores
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.ranking.rank import Reference
from pagetrail.tools.recovery import chain
from pagetrail.tools.recovery.context import Ask, Asks, DeadURL, Engines
from pagetrail.tools.recovery.stages import direct

DEAD = "https://old.example/news/solar-farms-double.html"


class Recording:
    """A stage that asks one query now and one then, and records the order of events."""

    def __init__(self, name: str, engine: str, events: list[str]) -> None:
        self.NAME, self.engine, self.events = name, engine, events

    async def plan(self, ctx, found) -> Asks:
        self.events.append(f"plan {self.NAME}")
        return Asks(now=[Ask("TI", f"{self.NAME} now", [self.engine])],
                    then=[Ask("TI", f"{self.NAME} then", [self.engine])])

    async def settle(self, ctx, found) -> int:
        self.events.append(f"settle {self.NAME} after {len(found.queries)} queries")
        return 0


def test_a_step_plans_in_order_asks_now_then_then_and_settles():
    engine = TableEngine("websearch", urls=["https://new.example/a"])
    ctx, found = make_context(DEAD, engines=[engine])
    events: list[str] = []
    stages = (Recording("one", "websearch", events), Recording("two", "websearch", events))
    stopped = asyncio.run(chain.step(ctx, found, stages))
    assert events == ["plan one", "plan two", "settle one after 4 queries",
                      "settle two after 4 queries"]
    asked = [query for query, _site in engine.asked]
    assert set(asked[:2]) == {"one now", "two now"} and asked[2:] == ["one then", "two then"]
    # the `then` queries only add pages: the page both gave keeps the votes of `now` only
    [page] = found.candidates.values()
    assert page.url == "https://new.example/a" and len(page.hits) == 2
    assert stopped is False  # the page could not be fetched: nothing to confirm


def _candidate(confidence: float, **scores: float) -> Candidate:
    return Candidate(url=f"https://new.example/{confidence}", kind="replacement",
                     confidence=confidence, scores=Scores(**scores))


def test_the_stop_rule_is_the_policys():
    reference = Reference(dead_url=DEAD)
    sure = policy.CONFIRM_CONFIDENCE
    assert chain.confirmed([_candidate(sure)], reference)
    assert chain.confirmed([_candidate(sure), _candidate(sure - policy.CONFIRM_MARGIN - 0.01)],
                           reference)
    assert not chain.confirmed([_candidate(sure), _candidate(sure - 0.1)], reference)
    assert not chain.confirmed([_candidate(sure - 0.01)], reference)
    assert not chain.confirmed([], reference)


def test_direct_evidence_adds_archived_redirects_unless_not_allowed():
    redirect = ArchivedRedirect(original_url=DEAD, target_url="https://old.example/energy/x",
                                datetime="2020-01-01T00:00:00Z", status=301,
                                memento_url="https://web.archive.org/web/2020/x")
    known = asyncio.run(direct.read(DeadURL(DEAD), None, None, [].append, [redirect], ""))
    assert known.picks == () and known.redirects == (redirect,)
    ctx, found = make_context(DEAD, direct=known)
    assert asyncio.run(direct.Direct().plan(ctx, found)).added == 1
    assert [e.url for e in found.candidates.values()] == ["https://old.example/energy/x"]
    only_titles, none_found = make_context(DEAD, direct=known, methods=frozenset({"TI"}))
    assert asyncio.run(direct.Direct().plan(only_titles, none_found)).added == 0
    assert none_found.candidates == {}


def test_the_chain_runs_every_stage_with_its_own_state():
    """The chain makes its stages per recovery: two recoveries share no bookkeeping."""
    ctx, found = make_context(DEAD)
    first, second = chain.Chain(ctx, found), chain.Chain(ctx, found)
    assert first.neighbourhood[0] is not second.neighbourhood[0]
    # the siblings and the moved host share one recovery's guesses, and only those
    assert first.neighbourhood[0].guesses is first.site[1].guesses  # type: ignore[attr-defined]
    assert first.site[1].guesses is not second.site[1].guesses  # type: ignore[attr-defined]
    assert [s.NAME for s in (*first.direct, *first.site, *first.neighbourhood)] == [
        "direct", "dead site", "moved host", "siblings", "answer sites", "links"]


def _linking(title: str, links: list[tuple[str, str]]) -> Response:
    anchors = " ".join(f'<a href="{url}">{anchor}</a>' for url, anchor in links)
    return Response(content=f"<html><head><title>{title}</title></head><body><p>Pages filed "
                            f"here.</p>{anchors}</body></html>".encode())


def test_the_links_of_the_pages_read_last_are_followed_once_nothing_is_left_to_ask():
    """The site's search lists a hub page; the neighbourhood follows it to a tag page, read
    by the step's last ranking; with no step left, the tag page's links are followed still
    (`Chain.last_links`): the moved page is linked from it alone."""
    hub, tag = "https://old.example/sections/", "https://old.example/tag/solar-farms/"
    moved = "https://old.example/archive/solar-farms-double-7731"
    fetcher = TableFetcher({
        hub: _linking("Sections", [(tag, "Solar farms double")]),
        tag: _linking("Tag: solar farms", [(moved, "Solar farms double")]),
        moved: Response(content=b"<html><head><title>Solar farms double</title></head><body>"
                                b"<p>The county's solar farms doubled their output.</p>"
                                b"</body></html>")})
    ctx, found = make_context(DEAD, engines=[TableEngine("mapper", scope="site", urls=[hub])],
                              fetcher=fetcher)
    asyncio.run(chain.Chain(ctx, found).search())
    by_url = {c.url: c for c in found.ranked}
    assert moved in by_url, list(by_url)
    assert "LINKS" in by_url[moved].methods and by_url[moved].title == "Solar farms double"


class PluginMapper:
    """A third-party engine that searches the dead site and reads its map (no built-in
    class, no built-in name)."""

    name = "acme-sitemaps"
    scope = "site"

    async def search(self, query, *, site=None, limit=10, context=None):
        return []

    def has_listing(self, origin):
        return False

    async def listing(self, origin):
        raise AssertionError("not read here")


def test_a_plugin_declares_its_scope_and_is_asked_for_the_dead_site():
    engines = [TableEngine("websearch"), PluginMapper(), TableEngine("mine", scope="index")]
    ctx, _found = make_context(DEAD, engines=engines)
    assert ctx.engines.lister is engines[1]
    assert ctx.engines.site_local == ["acme-sitemaps"]
    assert ctx.engines.web == ["websearch"] and ctx.engines.index == ["mine"]
    assert ctx.engines.method("acme-sitemaps") == "SITE"
    assert not ctx.engines.counts_as_web("acme-sitemaps")
    assert ctx.engines.counts_as_web("websearch") and ctx.engines.counts_as_web("store")


def test_engines_without_a_scope_are_web_and_an_unknown_scope_is_named():
    class Bare:
        name = "bare"

    assert scope_of(Bare()) == "web"
    odd = TableEngine("odd", scope="gopher")
    with pytest.raises(ConfigError, match=r"odd.*gopher"):
        Engines.of([odd], host_silent=False)


def test_built_in_engines_declare_their_scopes():
    from pagetrail.tools.engines.brave import BraveEngine
    from pagetrail.tools.engines.cdx import CdxEngine
    from pagetrail.tools.engines.ddgs_engine import DdgsEngine
    from pagetrail.tools.engines.google import GoogleEngine
    from pagetrail.tools.engines.local import LocalEngine
    from pagetrail.tools.engines.searxng import SearxngEngine
    from pagetrail.tools.engines.site import SiteEngine

    assert (SiteEngine.scope, CdxEngine.scope, LocalEngine.scope) == ("site", "archive",
                                                                     "index")
    assert {e.scope for e in (BraveEngine, GoogleEngine, DdgsEngine, SearxngEngine)} == {"web"}
    assert Engines.of([ListingEngine("site"), TableEngine("cdx", scope="archive")],
                      host_silent=False).listers == ["site", "cdx"]


def test_archive_engines_that_remember_captures_are_found_by_their_declared_capability():
    from pagetrail.tools.engines.cdx import CdxEngine

    class Remembering(TableEngine):
        def listed(self, host: str) -> list[str]:
            return [f"https://{host}/a"]

    remembering = Remembering("wayback", scope="archive")
    web_with_listed = Remembering("web-with-listed")  # the capability alone is not enough
    scoped = Engines.of([remembering, web_with_listed, TableEngine("plain", scope="archive")],
                        host_silent=False)
    assert scoped.capture_listers == (remembering,)
    assert "listed" in vars(CdxEngine)  # the built-in archive engine declares it


# ------------------------------------------------------------------ the answer's stop rule


def _listed(url: str, title: str, confidence: float, **scores: float) -> Candidate:
    return Candidate(url=url, title=title, kind="moved", confidence=confidence,
                     scores=Scores(**scores))


# Under the hand rule's lines (a cosine under policy.MOVED_COSINE, a confidence under
# policy.CONFIRM_CONFIDENCE), far above the next page for the shipped model.
MOVED = _listed("https://new.example/energy/solar-farms-double.html", "Solar farms double",
                0.5, content_cosine=0.6, title_similarity=1.0, url_similarity=0.9,
                query_votes=3, best_rank=1, rrf=0.05, content_lm=0.9,
                content_resemblance=0.9, context_similarity=0.9)
ALIKE = MOVED.model_copy(update={"url": "https://other.example/energy/solar-farms-double"})


def _others(n: int) -> list[Candidate]:
    return [_listed(f"https://else{i}.example/page-{i}", f"Other {i}", 0.05,
                    content_cosine=0.1, title_similarity=0.1, url_similarity=0.1,
                    best_rank=5 + i) for i in range(n)]


def _ranked(listed: list[Candidate], *, read: set[str]):
    """A context whose last ranking is `listed`, with an archived copy to compare against;
    the pages in `read` were fetched (they have a document)."""
    from pagetrail.tools.content.document import parse_document
    from pagetrail.tools.ranking.rank import CandidateEvidence

    ctx, found = make_context(DEAD)
    ctx = dataclasses.replace(ctx, reference=Reference(dead_url=DEAD, memento=parse_document(
        "<title>Solar farms double</title><p>Solar farms doubled.</p>", DEAD)))
    for c in listed:
        found.candidates[normalize_url(c.url)] = CandidateEvidence(
            url=c.url, hits=[("TI", "websearch", 1)], document=parse_document(
                f"<title>{c.title}</title><p>text</p>", c.url) if c.url in read else None)
    found.ranked = listed
    return ctx, found


def test_the_learned_answer_stops_the_chain_once_it_recommends_a_page_it_read():
    listed = [MOVED, *_others(policy.LEARNED_STOP_CANDIDATES - 1)]
    ctx, found = _ranked(listed, read={MOVED.url})
    assert not chain.confirmed(listed, ctx.reference)  # the hand rule is not sure
    assert chain.answered(ctx, found) and chain.settled(ctx, found, searched=True)
    # ... but only once a web round was asked and its leads (a hub, a republisher) followed
    assert not chain.settled(ctx, found)


def test_the_learned_answer_does_not_stop_on_an_unread_page_a_short_list_or_a_near_tie():
    unread = _ranked([MOVED, *_others(policy.LEARNED_STOP_CANDIDATES - 1)], read=set())
    assert not chain.answered(*unread)
    short = _ranked([MOVED, *_others(policy.LEARNED_STOP_CANDIDATES - 2)], read={MOVED.url})
    assert not chain.answered(*short)  # a first step's list: nothing yet to outrank it
    tie = _ranked([MOVED, ALIKE, *_others(policy.LEARNED_STOP_CANDIDATES)],
                  read={MOVED.url, ALIKE.url})
    assert not chain.answered(*tie)


def test_a_person_rejected_page_never_stops_the_chain():
    listed = [MOVED, *_others(policy.LEARNED_STOP_CANDIDATES)]
    ctx, found = _ranked(listed, read={MOVED.url})
    ctx = dataclasses.replace(ctx, direct=dataclasses.replace(
        ctx.direct, rejected=frozenset({normalize_url(MOVED.url)})))
    assert not chain.answered(ctx, found)


def test_a_weak_anchor_never_lets_the_learned_answer_stop_the_chain():
    listed = [MOVED, *_others(policy.LEARNED_STOP_CANDIDATES)]
    ctx, found = _ranked(listed, read={MOVED.url})
    assert chain.answered(ctx, found)
    assert not chain.answered(dataclasses.replace(ctx, weak_anchor=True), found)
