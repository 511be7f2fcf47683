"""recover(): the product's main job — check, archives, evidence, the chain of stages,
the answer, and what it teaches. Callers come in through `route.recover_link`.

Following a dead URL: `recover` validates it once (`DeadURL`) and serves a remembered answer
when there is one; `_recover` checks the link (a live one is answered at once), gathers the
link's evidence (archived copy and redirects, linking page: `link_evidence`; picks and the
site's rewrite rules: `stages.direct.read`), builds the frozen `Context`, runs the chain of
stages (`chain.Chain`: the order and the stop rule) within the budget and turns the ranking
into the answer (`answer`, with tools/policy.py's rules). Every failure of a source
(archive down, engine rate-limiting, the store) is recorded in the answer
(`Findings.fail`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pagetrail.tools import policy
from pagetrail.tools.archive.memento import CaptureListings
from pagetrail.tools.content.document import link_context
from pagetrail.tools.content.text import guess_language
from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.engines.registry import build_engine_set
from pagetrail.tools.engines.service import SearchService
from pagetrail.tools.evidence.anchor import AnchorInfo, anchor_info
from pagetrail.tools.evidence.queryplan import QueryEvidence
from pagetrail.tools.models import (
    ArchivedRedirect,
    Candidate,
    CheckResult,
    EngineFailure,
    Memento,
    Recovery,
)
from pagetrail.tools.net.fetch import Fetcher, remembering_answers
from pagetrail.tools.net.urls import normalize_url, validate_url
from pagetrail.tools.offload import off_loop
from pagetrail.tools.ranking.rank import Reference
from pagetrail.tools.recovery import answer, chain, link_evidence, memory, revisit
from pagetrail.tools.recovery.candidates import verify_top
from pagetrail.tools.recovery.context import (
    Budget,
    Context,
    DeadURL,
    DirectEvidence,
    Engines,
    Findings,
    ProgressFn,
    Request,
)
from pagetrail.tools.recovery.learn import (
    answers_elsewhere,
    learned_moves,
    record_elsewhere,
    record_move,
)
from pagetrail.tools.recovery.stages import direct
from pagetrail.tools.settings import Settings, get_settings

__all__ = ["Budget", "DeadURL", "ProgressFn", "answers_elsewhere", "learned_moves", "recover",
           "request_key"]


def request_key(url: str, **request: object) -> str:
    payload = json.dumps({"url": url, **request}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


async def recover(
    url: str,
    *,
    source_url: str | None = None,
    anchor: str | None = None,
    context: str | None = None,
    link_date: datetime | None = None,
    settings: Settings | None = None,
    fetcher: Fetcher | None = None,
    store: memory.Store | None = None,
    methods: frozenset[str] | None = None,
    progress: ProgressFn | None = None,
    budget: Budget | None = None,
    use_cache: bool = True,
) -> Recovery:
    """Recover a dead link. Raises InvalidURL / RefusedAddress for unusable input."""
    dead = DeadURL(url)
    if source_url:
        source_url = validate_url(source_url)
    settings = settings or get_settings()
    budget = budget or Budget.from_settings(settings)
    key = request_key(dead, source=source_url, anchor=anchor, context=context,
                      date=link_date, methods=sorted(methods) if methods else None)
    found = Findings.start(dead, budget, progress)
    revisited: str | None = None
    if store is not None and use_cache:
        cached = await memory.stored(found.fail, "cached answer", None,
                                     memory.cached_answer, store, dead, key)
        if cached is not None:
            # An answer that found no live page is given again only if the store has
            # learnt nothing since that could answer it (batch-mates' lessons).
            revisited = await memory.stored(found.fail, "reading what was learnt since", None,
                                            revisit.learned_since, store, cached.recovery,
                                            cached.given_at, methods)
            if revisited is None:  # (a store that failed that reading says so)
                cached.recovery.failures.extend(found.failures)
                return cached.recovery
    started = time.monotonic()
    own_fetcher = fetcher is None
    fetcher = fetcher or Fetcher(settings)
    requests_before = fetcher.requests
    redirects: Sequence[ArchivedRedirect] = ()
    try:
        if own_fetcher:
            await fetcher.__aenter__()
        request = Request(dead, settings, fetcher, store, methods, source_url=source_url,
                          anchor=anchor or "", context=context or "", link_date=link_date)
        # A page the recovery already fetched is not fetched again (a site's home page is
        # where its dead URL, robots.txt and sitemap.xml often all redirect).
        with remembering_answers():
            recovery, redirects = await _recover(request, budget, found)
    finally:
        if own_fetcher:
            await fetcher.aclose()
    recovery.requests = fetcher.requests - requests_before
    recovery.seconds = round(time.monotonic() - started, 3)
    if revisited is not None:
        recovery.evidence["revisited"] = revisited  # why the remembered answer was not given
    if store is not None:
        # Learn (FABLE): what this recovery saw move teaches the site's rewrite rules. What
        # fails now is recorded like every failure (Findings.fail), then given in the answer.
        learning = len(found.failures)
        for old_url, new_url, source in learned_moves(recovery, redirects):
            await memory.stored(found.fail, f"recording the {source}", None,
                                record_move, store, old_url, new_url, source, required=True)
        for elsewhere in answers_elsewhere(recovery):
            await memory.stored(found.fail, "recording where an answer was found", False,
                                record_elsewhere, store, recovery.url, elsewhere,
                                required=True)
        recovery.failures.extend(found.failures[learning:])
        if recovery.all_failed or any(f.engine == "store" for f in recovery.failures):
            # Parts of this answer are missing because the database, or every engine or
            # archive, failed: it is given, with the failures named, but not remembered — the
            # next request redoes it.
            return recovery
        remembering = len(found.failures)
        await memory.stored(found.fail, "remembering the answer", None,
                            memory.remember_answer, store, str(dead), key, recovery, {
                                "source_url": source_url, "anchor": anchor,
                                "context": context,
                                "link_date": link_date.isoformat() if link_date else None,
                            })
        recovery.failures.extend(found.failures[remembering:])
    return recovery


async def _recover(req: Request, budget: Budget, found: Findings,
                   ) -> tuple[Recovery, Sequence[ArchivedRedirect]]:
    """Check → the link's evidence → the chain of stages → the answer (and the archived
    redirects it saw, which teach the site's moves)."""
    from pagetrail.tools.linkcheck.check import check_link

    await found.report("checking", 0, None, req.url)
    check = await check_link(req.url, req.fetcher, settings=req.settings)
    early = answer.for_live(req.url, check)
    if early is not None:
        if early.answer == "alive":
            await answer.add_drift(req, found, early)
        # the store's, if its cache could not be read; the drift's
        early.failures.extend(found.failures)
        return early, ()
    gathered = await _gather(req, found, check)
    ctx, service = _context(req, budget, check, gathered)
    ranked = await _search(ctx, found, service)
    recovery = await _answer(req, budget, found, check, gathered, ranked)
    return recovery, gathered.direct.redirects


@dataclass(frozen=True)
class Gathered:
    """The link's evidence, gathered before the search."""

    memento: Memento | None
    anchor_facts: AnchorInfo | None
    evidence: dict[str, object]  # the answer's `evidence` (title, signatures, terms, …)
    query_evidence: QueryEvidence
    reference: Reference
    direct: DirectEvidence


async def _gather(req: Request, found: Findings, check: CheckResult) -> Gathered:
    """The archived copy, archived redirects and the linking page at once; the anchor; the
    direct candidates; the query evidence and the ranking's reference."""
    url, anchor, context = req.url, req.anchor, req.context
    await found.report("archive", 0, None, "looking for archived copies")
    at = req.link_date or check.checked_at
    listings = CaptureListings()  # one CDX call a recovery, shared by the two lookups
    memento, redirects, source_html = await asyncio.gather(
        link_evidence.memento(url, req.fetcher, req.settings, found, listings, at),
        link_evidence.redirects(url, req.fetcher, req.settings, found, listings,
                                req.allowed("REDIRECT")),
        link_evidence.source_page(req.fetcher, found, req.source_url),
    )
    if source_html and not anchor:
        found_link = link_context(source_html, url, page_url=req.source_url or "")
        if found_link is not None:
            anchor, context = found_link.anchor, context or found_link.context

    found.enter("evidence")
    document = memento.document if memento else None
    lang = (document.lang if document and document.lang else "") or guess_language(
        f"{anchor} {context}", "en")
    anchor_facts = anchor_info(anchor, lang) if anchor else None
    evidence: dict[str, object] = {"lang": lang}

    # Direct evidence: picks, archived redirects, the site's inferred rewrite rules (the
    # chain's first step makes them candidates).
    known = await direct.read(url, req.store, req.methods, found.fail, redirects,
                              document.title if document else "")
    if req.allowed("REDIRECT"):
        evidence["archived_redirects"] = [r.target_url for r in redirects]
    # Signature, linking-page parse and term models: CPU work, off the loop (tools.offload).
    query_evidence = await off_loop(
        link_evidence.query_evidence, url, req.store, req.allowed("LNLS"), document, anchor,
        anchor_facts, context, source_html, req.source_url, lang, evidence)
    reference = Reference(
        dead_url=url, memento=document, memento_date=memento.datetime if memento else None,
        anchor=anchor, anchor_usable=bool(anchor_facts and not anchor_facts.is_stop_anchor),
        context_terms=link_evidence.terms(context, lang, policy.CONTEXT_TERMS),
        linking_terms=list(query_evidence.expansion_terms.get("linking", [])),
        picks={normalize_url(u): 1.0 for u in known.picks},
        rule_support=known.rule_support, lang=lang,
    )
    return Gathered(memento, anchor_facts, evidence, query_evidence, reference, known)


def _context(req: Request, budget: Budget, check: CheckResult,
             gathered: Gathered) -> tuple[Context, SearchService]:
    """The frozen context of the chain: the engines (by scope) and the search service."""
    engine_set = build_engine_set(req.settings, req.fetcher, req.store)
    service = SearchService(engine_set.engines, store=req.store, settings=req.settings,
                            secrets=engine_set.secrets)
    qe, memento = gathered.query_evidence, gathered.memento
    host_silent = answer.silent(check)
    # A stop anchor ("click here", the URL itself) has no terms to match a listing with.
    site_query = qe.title or (qe.anchor if qe.anchor_usable else "") or " ".join(qe.url_terms)
    ctx = Context(
        url=req.url, settings=req.settings, fetcher=req.fetcher, budget=budget,
        store=req.store, methods=req.methods, reference=gathered.reference, evidence=qe,
        # An unreachable host's own map cannot be read: the site engine is not asked for it
        # (a gone host cost ~6 requests there, each refused CONNECT asked twice; issue #27).
        service=service, engines=Engines.of(
            engine_set.engines, host_silent=host_silent or answer.unreachable_host(check)),
        search=SearchContext(dead_url=req.url,
                             after=memento.datetime if memento else req.link_date),
        host_silent=host_silent, site_gone=answer.site_gone(check), site_query=site_query,
        listing_queries=list(dict.fromkeys(
            q for q in (site_query, " ".join(qe.url_terms)) if q)),
        direct=gathered.direct,
        weak_anchor=answer.weak_anchor(memento, gathered.anchor_facts),
    )
    return ctx, service


async def _search(ctx: Context, found: Findings, service: SearchService) -> list[Candidate]:
    """The chain within the budget's seconds; at the deadline, what there is is ranked."""
    seconds = ctx.budget.seconds
    try:
        async with asyncio.timeout(seconds):
            # A 429 is waited out as told while the wait fits in what is left of the budget.
            service.deadline = time.monotonic() + seconds
            try:
                await chain.Chain(ctx, found).search()
                return await verify_top(ctx, found)
            finally:
                _search_figures(ctx, service, found)
    except TimeoutError:
        found.fail(EngineFailure(engine="budget", error=f"stopped after {seconds:.0f} s"))
        return await chain.rank(ctx, found)


async def _answer(req: Request, budget: Budget, found: Findings, check: CheckResult,
                  gathered: Gathered, ranked: list[Candidate]) -> Recovery:
    ranked = [c for c in ranked if normalize_url(c.url) not in gathered.direct.rejected]
    recovery = answer.for_dead(req.url, found, check, gathered.memento, ranked,
                               gathered.anchor_facts, gathered.evidence)
    if check.verdict == "transient":
        recovery.reason = ("the link did not answer (timeout): it may only be down for now; "
                           + recovery.reason)
    if recovery.answer == "none" and gathered.memento is None:
        recovery.related_archived = await answer.related_archived(
            req, found, gathered.evidence, budget.seconds)
        recovery.failures = list(found.failures)  # the related pages' failure too
    found.enter("done")
    recovery.evidence["timings"] = found.clock.timings
    if found.notes.figures:
        recovery.evidence["search"] = found.notes.figures
    return recovery


def _search_figures(ctx: Context, service: SearchService, found: Findings) -> None:
    """Web-search queries sent and 429s received (the eval's `search` figures), and what
    could not be asked: a named partial failure."""
    web = ctx.engines.web
    figures, unasked = found.notes.figures, found.notes.unasked
    figures["queries"] = sum(service.calls.get(name, 0) for name in web)
    figures["rate_limited"] = sum(service.rate_limited.get(name, 0) for name in web)
    if unasked:
        figures["unasked"] = unasked[:20]
        found.fail(EngineFailure(
            engine="search",
            error=f"{len(unasked)} web queries could not be asked (rate limit, budget or "
                  f"engine error): {'; '.join(unasked[:3])}"))
