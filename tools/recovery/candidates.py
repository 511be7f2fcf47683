"""Fetching the candidates worth a request and ranking them (after every step of the chain)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pagetrail.tools import policy
from pagetrail.tools.content.document import (
    extract_links,
    link_share,
    looks_like_error_page,
    parse_document,
)
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.evidence.queryplan import TOPIC_METHODS
from pagetrail.tools.linkcheck.walls import response_wall
from pagetrail.tools.models import Candidate, Link, Scores
from pagetrail.tools.net.fetch import unexplained_proxy_refusals
from pagetrail.tools.net.urls import host_of, normalize_url, site_of
from pagetrail.tools.offload import off_loop
from pagetrail.tools.ranking.rank import (
    CandidateEvidence,
    Reference,
    rank_candidates,
    score_candidate,
    twin_key,
)
from pagetrail.tools.recovery.context import Context, Findings

log = logging.getLogger(__name__)

# Direct evidence is fetched first, in this order; then the best-ranked hits.
DIRECT_ORDER = {"PICK": 0, "REDIRECT": 1, "INFER": 2}
TWIN_ORDER = len(DIRECT_ORDER)  # the dead URL written otherwise (escaping, scheme, slash, case)


# The chain's stop rule on one candidate's scores (`chain.moved_for_sure`): given by the chain.
StopsOn = Callable[[Scores, bool], bool]


async def rank(ctx: Context, found: Findings, stops_on: StopsOn) -> list[Candidate]:
    """Fetch what is worth fetching, rank every candidate; the ranking is also kept in
    `found.ranked`."""
    found.enter("candidates")
    await fetch_candidates(ctx, found, stops_on)
    await found.report("ranking", len(found.pages.fetched), len(found.candidates), "")
    found.ranked = await off_loop(rank_candidates, ctx.reference, list(found.candidates.values()))
    found.enter("search")
    return found.ranked


def fetch_order(found: Findings, dead_url: str, *, depth: int) -> list[CandidateEvidence]:
    """Unfetched candidates, the most promising first: direct evidence, then best rank, down
    to `depth` of each query's list. A twin of the dead URL (`rank.twin_key`) is checked
    with the direct evidence: unread, it would be dropped as the dead URL."""
    dead_twin = twin_key(dead_url) if dead_url else None

    def key(evidence: CandidateEvidence) -> tuple[int, int, int]:
        best_direct = min((DIRECT_ORDER.get(m, 9) for m, _e, _r in evidence.hits), default=9)
        if dead_twin is not None and twin_key(evidence.url) == dead_twin:
            best_direct = min(best_direct, TWIN_ORDER)
        best_rank = min((r for _m, _e, r in evidence.hits), default=99)
        return best_direct, best_rank, -len(evidence.hits)

    pending = [e for k, e in found.candidates.items() if k not in found.pages.fetched]
    pending.sort(key=key)
    # Only the top of each query's list is worth a fetch (budget: requests per case).
    followed = {site_of(dead_url)} | found.listed_sites if dead_url else found.listed_sites
    return [e for e in pending
            if key(e)[0] < 9 or within_depth(e.hits, depth,
                                             followed=site_of(e.url) in followed)]


def query_depth(method: str, depth: int, *, followed: bool = False) -> int:
    """How deep a query's list is read (pure): `depth` for a query naming the page (its
    title, its address, a search of its site) and the graph's or the archive's lists; for a
    query of the page's topic only policy.TOPIC_FETCH_PER_QUERY, unless the page is on a
    site whose links are followed (`followed`: the dead site, a site it moved to or that
    holds related pages) — there a page that is not the answer may link to it (a tag or
    section page), and is read to `depth` as well."""
    if method in TOPIC_METHODS and not followed:
        return min(depth, policy.TOPIC_FETCH_PER_QUERY)
    return depth


def within_depth(hits: list[tuple[str, str, int]], depth: int, *,
                 followed: bool = False) -> bool:
    """Whether one of a candidate's hits is near enough the top of its query's list to be
    read (pure; `query_depth`)."""
    return any(rank <= query_depth(method, depth, followed=followed)
               for method, _engine, rank in hits)


def content_confirms(reference: Reference, evidence: CandidateEvidence,
                     stops_on: StopsOn) -> bool:
    """A fetched candidate is the lost page by content (pure): what the chain's stop rule
    asks of a top candidate (`stops_on`) — and not a listing."""
    if evidence.document is None or evidence.listing > 0:
        return False
    return stops_on(score_candidate(reference, evidence), reference.has_memento)


def links_to(key: str, links: list[Link]) -> bool:
    """Whether one of the links leads to the URL with normalised form `key` (a page's links
    are untrusted: one that cannot be normalised leads nowhere)."""
    for link in links:
        try:
            if normalize_url(link.url) == key:
                return True
        except ValueError:
            continue
    return False


async def fetch_candidates(ctx: Context, found: Findings, stops_on: StopsOn) -> None:
    """Fetch the pending candidates worth a request (`fetch_order`, within the budget): the
    first policy.FIRST_FETCH_WAVE, then — unless one of them is the lost page by content
    (`content_confirms`) — the rest."""
    room = ctx.budget.max_candidates - len(found.pages.fetched)
    # Without web search the site's own map and the archive's lists are all there is: their
    # lists are read deeper.
    depth = ctx.budget.fetch_per_query if ctx.engines.web else \
        max(ctx.budget.fetch_per_query, policy.FETCH_PER_QUERY_NO_WEB)
    todo = fetch_order(found, ctx.url, depth=depth)[: max(0, room)]
    if not todo:
        return
    limit = asyncio.Semaphore(max(1, ctx.settings.concurrency))
    first, rest = todo[: policy.FIRST_FETCH_WAVE], todo[policy.FIRST_FETCH_WAVE:]
    await asyncio.gather(*(read(ctx, found, e, limit) for e in first))
    if rest and not await off_loop(_any_confirms, ctx.reference, first, stops_on):
        await asyncio.gather(*(read(ctx, found, e, limit) for e in rest))
    _drop_dead(found)


def _any_confirms(reference: Reference, evidences: list[CandidateEvidence],
                  stops_on: StopsOn) -> bool:
    return any(content_confirms(reference, e, stops_on) for e in evidences)


def _drop_dead(found: Findings) -> None:
    for key in [k for k, e in found.candidates.items() if not e.hits]:
        del found.candidates[key]


async def verify_top(ctx: Context, found: Findings) -> list[Candidate]:
    """The first answer is a page that was read: while the top live candidate was never
    fetched (the budget or the fetch order left it out, and its URL or a search snippet
    ranked it), read it and rank again — at most policy.VERIFY_TOP times. A page that
    answers 404 is then dropped instead of being offered on its looks."""
    for _ in range(policy.VERIFY_TOP):
        top = next((c for c in found.ranked if c.kind != "archived"), None)
        key = normalize_url(top.url) if top is not None else ""
        evidence = found.candidates.get(key)
        if evidence is None or normalize_url(evidence.url) in found.pages.fetched:
            break
        await read(ctx, found, evidence, asyncio.Semaphore(1))
        _drop_dead(found)
        found.ranked = await off_loop(rank_candidates, ctx.reference,
                                      list(found.candidates.values()))
    return found.ranked


async def read(ctx: Context, found: Findings, evidence: CandidateEvidence,
               limit: asyncio.Semaphore) -> None:
    """Fetch one candidate and keep what it says: its document, its links, how much it is a
    list of links; a dead or non-page candidate loses its hits (no answer)."""
    found.pages.fetched.add(normalize_url(evidence.url))
    if ctx.site_gone and host_of(evidence.url) == host_of(ctx.url):
        # The check found the dead URL's host gone (silent, unreachable, parked): its other
        # pages are no live answer either, and a silent host would spend the run's time.
        evidence.hits.clear()
        return
    async with limit:
        try:
            with unexplained_proxy_refusals():  # a failure is only "not read"
                response = await ctx.fetcher.get(evidence.url)
        except PagetrailError as exc:
            log.info("candidate %s: %s", evidence.url, exc)
            return
    if response.status != 200 or not response.is_html:
        evidence.hits.clear()  # a dead or non-page candidate is no answer
        return
    if response_wall(response) is not None:
        # A bot wall or challenge answered 200 (PerimeterX, Imperva): its words are not the
        # page's, so the candidate keeps its search hit but gets no document to rank by.
        return
    # In a thread: extraction is ~50 ms of CPU a page, and the other candidates'
    # transfers (and other recoveries sharing the loop) go on meanwhile.
    document = await off_loop(
        parse_document, response.content, response.final_url,
        content_type=response.headers.get("content-type"), links=False)
    if looks_like_error_page(document):
        evidence.hits.clear()
        return
    evidence.document = document
    # The link graph: pages near the answer link to it (cheap: no text extraction).
    links = extract_links(response.content, response.final_url,
                          content_type=response.headers.get("content-type"))
    found.pages.outlinks[normalize_url(evidence.url)] = links
    # A page linking to the dead URL itself (a roundup quoting the link's context, the
    # linking page) is no fair comparison for the other pages' texts (ranking.textref).
    evidence.cites_dead = links_to(normalize_url(ctx.url), links)
    # A page that is mostly links to other pages (a tag or section page) is rarely the
    # answer: the ranking weighs it last (policy.listing_degree).
    share = link_share(document.text, links)
    evidence.listing = policy.listing_degree(share.share, share.items)
