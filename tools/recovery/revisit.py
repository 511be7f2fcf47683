"""An answer that told no live page is stale once the store has learnt what could answer it.

A batch (a docs tree's links, an evaluation's cases) teaches the store as it goes: the sites
that hold copies of other links' pages (a republisher: `stages.answer_sites`) and the site's
rewrite rules, inferred from its moves (`stages.direct`). A link recovered before its
batch-mates taught that is answered as if they had never been seen: its remembered "none"
depends on the order the links were checked. So a remembered answer that recommended no live
page is not given again when, since it was given,

- a site became an answer site that the recovery did not read, and its map (as a later
  recovery kept it) lists a page for the link (the answers recorded for this link itself not
  counted: what its own recovery taught is no news to it), or
- the site's rewrite rules, given moves recorded since, confidently propose an address the
  recovery did not consider.

`learned_since` says which (None: nothing new, the remembered answer stands); the pipeline
then answers afresh (`pipeline.recover`), and batch runners ask their unanswered links once
more at the end (`UNANSWERED`), which costs nothing for the links with nothing new.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pagetrail.tools import policy
from pagetrail.tools.engines.site import site_origin
from pagetrail.tools.models import Recovery
from pagetrail.tools.net.urls import host_of, normalize_url
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.stages.answer_sites import best_listed

# The answers that told the user no live page: what a revisit may change.
UNANSWERED = frozenset({"none", "archived"})


def answered_afresh(revisited: object, requests: int) -> bool:
    """Whether a link's second run replaces its first: it was answered afresh because the
    store had learnt something (`revisited` set), or it found no remembered answer (the
    first was not kept: a failure) and did the work again (`requests`). Else it gave the
    remembered answer back, at no request, and the first stands."""
    return bool(revisited) or requests > 0


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def new_answer_sites(store: memory.Store, recovery: Recovery) -> list[str]:
    """The hosts of the answer sites known now that the recovery did not read and whose map,
    as a later recovery kept it (`memory.kept_listing`), lists a page for it that it did not
    consider (`answer_sites.best_listed` with the queries it noted). A map nobody kept is no
    evidence — an unreachable site's never is, and reading maps here would make asking the
    cache cost requests. A recovery that never came to read answer sites (it had nothing to
    look them up by) has nothing to learn here."""
    search = recovery.evidence.get("search")
    search = search if isinstance(search, dict) else {}
    read, queries = search.get("answer_sites"), search.get("listing_queries")
    if not isinstance(read, list) or not isinstance(queries, list) or not queries:
        return []
    considered = {normalize_url(c.url) for c in recovery.candidates}
    hosts = []
    for site in memory.answer_sites(store, exclude_url=recovery.url, limit=policy.ANSWER_SITES):
        origin = site_origin(site.example_url)
        if host_of(origin) in read:
            continue
        listing = memory.kept_listing(store, origin)
        if listing and any(normalize_url(url) not in considered
                           for url in best_listed(listing, [str(q) for q in queries])):
            hosts.append(host_of(origin))
    return hosts


def new_proposals(store: memory.Store, recovery: Recovery, since: datetime) -> list[str]:
    """The address the site's rewrite rules, given moves recorded after `since`, propose
    *confidently* for the link (FABLE's decision: `Inference.best`) when it is none of the
    recovery's candidates. A rule's guess short of that was a guess before too, and asked
    again it cost ~25 requests for no answer (seven PEP links of a thin-index world)."""
    from pagetrail.tools.learning import KnownMove, infer_aliases

    moves = memory.moves_for_site(store, recovery.url)
    if not any(_aware(move.created_at) > _aware(since) for move in moves):
        return []
    document = recovery.memento.document if recovery.memento is not None else None
    best = infer_aliases([KnownMove(m.old_url, m.new_url, source=m.source) for m in moves],
                         recovery.url, title=(document.title if document else "") or None).best
    considered = {normalize_url(c.url) for c in recovery.candidates}
    return [best.url] if best is not None and normalize_url(best.url) not in considered else []


def learned_since(store: memory.Store, recovery: Recovery, since: datetime,
                  methods: frozenset[str] | None = None) -> str | None:
    """Why the remembered `recovery` (given at `since`) is stale, or None when it stands.
    Only an answer that told no live page is ever stale here; `methods` (an evaluation's
    evidence sources) limits what counts as new."""
    if recovery.answer not in UNANSWERED:
        return None
    if methods is None or "ELSEWHERE" in methods:
        sites = new_answer_sites(store, recovery)
        if sites:
            return f"answer sites learnt since it was answered: {', '.join(sites)}"
    if methods is None or "INFER" in methods:
        proposals = new_proposals(store, recovery, since)
        if proposals:
            return f"the site's rewrite rules now propose {proposals[0]}"
    return None
