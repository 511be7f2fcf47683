"""Once a recovery: the own maps of the sites that held other dead links' answers
(store.elsewhere: a republisher, a mirror), each page ranked by overlap with the listing
queries; the best policy.ANSWER_SITE_HITS of each site that carry enough of a query's
terms become candidates. An unindexed republished copy is found here though no page links
to it and no search engine returns it. Read with the first neighbourhood: waiting for the
first web stage instead saved 1 request a recovery (median) on dev2 and lost a case. Which
sites these are is read from the store when the search starts (`start`: no request)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pagetrail.tools import policy
from pagetrail.tools.engines.base import SiteLister
from pagetrail.tools.engines.overlap import precision, query_terms, rank_by_overlap
from pagetrail.tools.engines.site import site_origin
from pagetrail.tools.models import EngineFailure, Hit
from pagetrail.tools.net.urls import host_of, site_of
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.context import Asks, Context, DeadURL, Findings
from pagetrail.tools.recovery.stages.base import Stage

NAME = "answer sites"


async def remembered(url: DeadURL, store: memory.Store | None, methods: frozenset[str] | None,
                     found: Findings) -> list[str]:
    """The origins of the sites that held other dead links' answers, from the store."""
    if store is None or not (methods is None or "ELSEWHERE" in methods):
        return []
    sites = await memory.stored(found.fail, "reading the sites that held answers", [],
                                memory.answer_sites, store, exclude_url=url,
                                limit=policy.ANSWER_SITES)
    return [site_origin(site.example_url) for site in sites]


class AnswerSites(Stage):
    """The answer sites' maps, read once a recovery. `sites`: their origins when the caller
    knows them already (a test), else the store's (`remembered`), read at the start."""

    NAME = NAME

    def __init__(self, sites: list[str] | None = None) -> None:
        self.sites = sites
        self.read = False

    async def start(self, ctx: Context, found: Findings) -> None:
        if self.sites is None:
            self.sites = await remembered(ctx.url, ctx.store, ctx.methods, found)

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        lister, queries = ctx.engines.lister, ctx.listing_queries
        if self.read or lister is None or not queries:
            return Asks()
        self.read = True
        own = {site_of(ctx.url)}
        origins = [o for o in self.sites or [] if site_of(o) not in own][:policy.ANSWER_SITES]
        # The sites read (none included) and what their maps were matched with: an answer
        # that found nothing is asked again once another site's map lists a page for it
        # (`recovery.revisit`).
        found.notes.figures["answer_sites"] = [host_of(o) for o in origins]
        found.notes.figures["listing_queries"] = list(queries)
        if not origins:
            return Asks()
        listings = await asyncio.gather(*(site_pages(ctx.store, found, lister, origin)
                                          for origin in origins))
        added = 0
        for origin, (pages, error) in zip(origins, listings, strict=True):
            if not pages:  # unreachable, or no sitemap and no links on its root page
                error = error or f"{host_of(origin)} lists no pages"
                found.fail(EngineFailure(engine="elsewhere", error=error[:500]))
                continue
            for rank, url in enumerate(best_listed(pages, queries), 1):
                if found.add_hit("ELSEWHERE", Hit(url=url, rank=rank,
                                                  engine="elsewhere")) is not None:
                    added += 1
        return Asks(added=added)


async def site_pages(store: memory.Store | None, found: Findings, lister: SiteLister,
                     origin: str) -> tuple[dict[str, str], str | None]:
    """An answer site's pages (URL → link text) and why there are none: from the store when
    a recovery read its map within policy.LISTING_TTL (the same few sites are read by every
    recovery: once a day is polite and saves ~3 requests a site), else read now and kept."""
    if store is not None:
        cached = await memory.stored(found.fail, "reading an answer site's map", None,
                                     memory.kept_listing, store, origin)
        if cached is not None:
            return cached, None
    listing = await lister.listing(origin)
    if listing.pages and store is not None:
        await memory.stored(found.fail, "keeping an answer site's map", None,
                            memory.keep_listing, store, origin, listing.pages)
    return listing.pages, listing.error


def best_listed(listed: dict[str, str], queries: Sequence[str]) -> list[str]:
    """The listed pages that carry enough of a query's terms (policy.ANSWER_SITE_RECALL), or
    whose own words are the query's (a truncated slug: policy.ANSWER_SITE_PRECISION), best
    first (pure)."""
    pages = list(listed.items())
    best: dict[str, tuple[float, int]] = {}
    for query in queries:
        terms = query_terms(query)
        taken: list[tuple[float, str]] = []
        for url, text, recall in rank_by_overlap(query, pages):
            share, matched = precision(terms, url, text)
            made_of_query = (matched >= policy.ANSWER_SITE_MATCHED
                             and share >= policy.ANSWER_SITE_PRECISION)
            if recall >= policy.ANSWER_SITE_RECALL or made_of_query:
                taken.append((max(recall, share if made_of_query else 0.0), url))
        taken.sort(key=lambda item: -item[0])
        for rank, (strength, url) in enumerate(taken[:policy.ANSWER_SITE_HITS], 1):
            best[url] = min(best.get(url, (1.0, rank)), (-strength, rank))
    return sorted(best, key=lambda url: best[url])[:policy.ANSWER_SITE_HITS]
