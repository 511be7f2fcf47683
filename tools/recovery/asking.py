"""Asking the search service a stage's queries, and keeping what they return."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.models import Query
from pagetrail.tools.recovery.context import Ask, Context, Findings


async def ask(ctx: Context, found: Findings, batch: Sequence[Ask],
              search_context: SearchContext | None = None) -> None:
    """Every query of `batch` at once; each engine's hits become candidates' evidence, each
    failure is recorded once per engine, and a web query that could not be asked is named."""
    scope = search_context or ctx.search

    async def one(item: Ask) -> None:
        outcome = await ctx.service.search(item.text, site=item.site,
                                           limit=ctx.budget.hits_per_query,
                                           context=scope, engines=item.engines)
        for failure in outcome.failures:
            if ctx.engines.counts_as_web(failure.engine):
                found.notes.unasked.append(f"{item.method}: {item.text[:80]}")
            found.fail(failure, once="engine")
        for engine, hits in outcome.hits.items():
            found.queries.append(Query(text=item.text[:500], method=item.method, engine=engine,
                                       site=item.site, hits=hits[: ctx.budget.hits_per_query]))
            for hit in hits[: ctx.budget.hits_per_query]:
                found.add_hit(item.method, hit)

    await asyncio.gather(*(one(item) for item in batch))


async def complement(ctx: Context, found: Findings, batch: Sequence[Ask],
                     search_context: SearchContext | None = None) -> None:
    """Queries that only add pages: the same listings ranked another way are no new
    evidence about a page they already gave, so such a page gains no vote from them."""
    if not batch:
        return
    before = {key: len(evidence.hits) for key, evidence in found.candidates.items()}
    await ask(ctx, found, batch, search_context)
    for key, count in before.items():
        if key in found.candidates:
            del found.candidates[key].hits[count:]
