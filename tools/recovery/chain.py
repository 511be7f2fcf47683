"""The order of the stages and the stop rule, in one place.

    direct evidence ─▶ the dead site + the moved host ─▶ neighbourhood
        ─▶ web round 1 ─▶ neighbourhood ─▶ web round 2 ─▶ neighbourhood ─▶ …
        ─▶ the last pages' links

`Chain` makes one object of each stage per recovery (each keeps its own bookkeeping; the
siblings and the moved host share the recovery's guessed addresses, `homes.Guesses`). When
the search starts every stage reads what it needs (`start`); then a step plans its stages
in order (each adds what it knows and says what to ask), asks all their `now` queries
together, then their `then` queries stage by stage, settles them, and ranks the candidates
(when anything was added or asked, or always for the site and web steps). The chain stops
at the first step whose ranking is `confirmed`; when every step has run unconfirmed, the
links of the pages read by the last rankings are followed (`Chain.last_links`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pagetrail.tools import policy
from pagetrail.tools.models import Candidate, Scores
from pagetrail.tools.ranking.rank import Reference, is_moved
from pagetrail.tools.recovery import candidates
from pagetrail.tools.recovery.asking import ask, complement
from pagetrail.tools.recovery.context import Context, Findings
from pagetrail.tools.recovery.homes import Guesses
from pagetrail.tools.recovery.stages import web
from pagetrail.tools.recovery.stages.answer_sites import AnswerSites
from pagetrail.tools.recovery.stages.base import Stage
from pagetrail.tools.recovery.stages.dead_site import DeadSite
from pagetrail.tools.recovery.stages.direct import Direct
from pagetrail.tools.recovery.stages.links import Links
from pagetrail.tools.recovery.stages.moved_host import MovedHost
from pagetrail.tools.recovery.stages.siblings import Siblings


def moved_for_sure(scores: Scores, has_memento: bool) -> bool:
    """A verified move (`rank.is_moved`: policy.MOVED_*) with a near-identical title
    (policy.CONFIRM_TITLE): the page itself. Content alone is not enough: pages quoting the
    article (tag pages, updates with other text) reach the cosine too, and the next stage
    may find the real move."""
    return is_moved(scores, has_memento) and \
        (scores.title_similarity or 0.0) >= policy.CONFIRM_TITLE


def confirmed(ranked: Sequence[Candidate], reference: Reference) -> bool:
    """The stop rule: the top candidate is moved for sure (`moved_for_sure`), or the
    calibrated ranking is sure and nothing else comes close
    (policy.confirmed_by_confidence)."""
    if not ranked:
        return False
    top = ranked[0]
    if policy.confirmed_by_confidence(top.confidence,
                                      ranked[1].confidence if len(ranked) > 1 else None):
        return True
    return moved_for_sure(top.scores, reference.has_memento)


async def rank(ctx: Context, found: Findings) -> list[Candidate]:
    """Read the candidates worth a request and rank them; a first wave of reads holding the
    page moved for sure saves the second (`candidates.rank`)."""
    return await candidates.rank(ctx, found, moved_for_sure)


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


class Chain:
    """One recovery's stages, in their order."""

    def __init__(self, ctx: Context, found: Findings) -> None:
        self.ctx, self.found = ctx, found
        guesses = Guesses()  # the slugs and paths guessed, one budget for both stages
        self.direct: tuple[Stage, ...] = (Direct(),)
        self.site: tuple[Stage, ...] = (DeadSite(), MovedHost(guesses))
        # The answer sites are read once (with the first neighbourhood); the rest every round.
        self.links = Links()
        self.neighbourhood: tuple[Stage, ...] = (Siblings(guesses), AnswerSites(), self.links)

    async def search(self) -> list[Candidate]:
        """Run the chain; the final ranking (also in `found.ranked`)."""
        ctx, found = self.ctx, self.found
        for stage in (*self.direct, *self.site, *self.neighbourhood):
            await stage.start(ctx, found)
        if await step(ctx, found, self.direct):
            return found.ranked
        found.enter("search")
        if await step(ctx, found, self.site, always_rank=True):
            return found.ranked
        if await step(ctx, found, self.neighbourhood):
            return found.ranked
        asked_first = len(found.queries)
        for web_round in web.rounds(ctx, asked_first):
            if await step(ctx, found, (web_round,), always_rank=True):
                return found.ranked
            if await step(ctx, found, self.neighbourhood):
                return found.ranked
        await self.last_links()
        return found.ranked

    async def last_links(self) -> None:
        """With nothing left to ask, the links of the pages the last rankings read (a tag or
        section page read last links to the answer that no search returned) are followed, at
        most policy.LAST_LINK_STEPS times — each time only when a link was a lead."""
        for _ in range(policy.LAST_LINK_STEPS):
            if not await self.links.settle(self.ctx, self.found):
                return
            await rank(self.ctx, self.found)
            if confirmed(self.found.ranked, self.ctx.reference):
                return
