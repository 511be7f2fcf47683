"""The order of the stages and the stop rule, in one place.

    direct evidence ─▶ the dead site + the moved host ─▶ neighbourhood
        ─▶ web round 1 ─▶ neighbourhood ─▶ web round 2 ─▶ neighbourhood ─▶ …

A step plans its stages in order (each adds what it knows and says what to ask), asks all
their `now` queries together, then their `then` queries stage by stage, settles them, and
ranks the candidates (when anything was added or asked, or always for the site and web
steps). The chain stops at the first step whose ranking is `confirmed`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pagetrail.tools import policy
from pagetrail.tools.models import Candidate
from pagetrail.tools.ranking.rank import Reference, is_moved
from pagetrail.tools.recovery.asking import ask, complement
from pagetrail.tools.recovery.candidates import rank
from pagetrail.tools.recovery.context import Context, Findings
from pagetrail.tools.recovery.stages import (
    Stage,
    answer_sites,
    dead_site,
    direct,
    links,
    moved_host,
    siblings,
    web,
)

SITE: tuple[Stage, ...] = (dead_site, moved_host)
# The answer sites are read once (with the first neighbourhood); the rest every round.
NEIGHBOURHOOD: tuple[Stage, ...] = (siblings, answer_sites, links)


def confirmed(ranked: Sequence[Candidate], reference: Reference) -> bool:
    """The stop rule: the top candidate is a verified move with a near-identical title
    (policy.CONFIRM_TITLE), or the calibrated ranking is sure and nothing else comes close
    (policy.confirmed_by_confidence).

    Content alone is not enough to stop: pages quoting the article (tag pages, updates
    with other text) reach the cosine too, and the next stage may find the real move.
    """
    if not ranked:
        return False
    top = ranked[0]
    if policy.confirmed_by_confidence(top.confidence,
                                      ranked[1].confidence if len(ranked) > 1 else None):
        return True
    if not is_moved(top.scores, reference.has_memento):
        return False
    return (top.scores.title_similarity or 0.0) >= policy.CONFIRM_TITLE


async def step(ctx: Context, found: Findings, stages: Sequence[Stage], *,
               always_rank: bool = False) -> bool:
    """One step of the chain; True when its ranking is confirmed (stop)."""
    plans = [await stage.plan(ctx, found) for stage in stages]
    await asyncio.gather(*(ask(ctx, found, p.now, p.context) for p in plans if p.now))
    for p in plans:
        await complement(ctx, found, p.then, p.context)
    added = sum(p.added for p in plans)
    for stage in stages:
        added += await stage.settle(ctx, found)
    if always_rank or added or any(p.now or p.then for p in plans):
        await rank(ctx, found)
        return confirmed(found.ranked, ctx.reference)
    return False


async def search(ctx: Context, found: Findings) -> list[Candidate]:
    """Run the chain; the final ranking (also in `found.ranked`)."""
    if await step(ctx, found, (direct,)):
        return found.ranked
    found.enter("search")
    if await step(ctx, found, SITE, always_rank=True):
        return found.ranked
    if await step(ctx, found, NEIGHBOURHOOD):
        return found.ranked
    asked_first = len(found.queries)
    for web_round in web.rounds(ctx, asked_first):
        if await step(ctx, found, (web_round,), always_rank=True):
            break
        if await step(ctx, found, NEIGHBOURHOOD):
            break
    return found.ranked
