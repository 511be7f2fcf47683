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
at the first step whose ranking is `settled` — the hand rule is sure (`confirmed`) or, once
a web round's leads were followed, the learned answer already recommends a page it read
(`answered`); when every step has run unsettled, the links of the pages read by the last
rankings are followed (`Chain.last_links`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pagetrail.tools import policy
from pagetrail.tools.errors import ModelMissing
from pagetrail.tools.models import Candidate, Scores
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.ranking.rank import Reference, is_moved
from pagetrail.tools.recovery import answer, candidates
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
    """The hand ranking's stop rule: the top candidate is moved for sure (`moved_for_sure`),
    or the calibrated ranking is sure and nothing else comes close
    (policy.confirmed_by_confidence)."""
    if not ranked:
        return False
    top = ranked[0]
    if policy.confirmed_by_confidence(top.confidence,
                                      ranked[1].confidence if len(ranked) > 1 else None):
        return True
    return moved_for_sure(top.scores, reference.has_memento)


def answered(ctx: Context, found: Findings) -> bool:
    """The answer's own stop rule: the learned answer (`answer.learned_ranking`, what the
    user will be told) already recommends a page that was read, from a list of at least
    policy.LEARNED_STOP_CANDIDATES live candidates. Without the model only the hand rule
    stops (the answer says the model is missing). Not under a weak anchor: one common word
    and no archived copy tell a page apart only from a whole search's list — the model's
    rows are final lists, and a partial one, its right page not yet found, reads to it as a
    clear lead (a page titled with the slug's common words, 0.998 on a list the search had
    not finished, 0.08 on the finished one)."""
    if not policy.LEARNED_ANSWER or ctx.weak_anchor:
        return False
    live = answer.answer_list([c for c in found.ranked
                               if normalize_url(c.url) not in ctx.direct.rejected],
                              weak=False)
    if len(live) < policy.LEARNED_STOP_CANDIDATES:
        return False
    try:
        ordered, probability, line = answer.learned_ranking(ctx.url, live,
                                                            ctx.reference.has_memento)
    except ModelMissing:
        return False
    first = found.candidates.get(normalize_url(ordered[0].url))
    if not policy.recommends(probability, line) or first is None or first.document is None:
        return False
    # Nothing else comes close (the hand rule's margin, on the ranking model's scale): two
    # pages alike — two reports of the article, each quoting part of it — may both be
    # outranked by the copy a later step finds.
    top = ordered[0].scores.learned
    runner = ordered[1].scores.learned if len(ordered) > 1 else None
    return top is not None and (runner is None or runner < top - policy.CONFIRM_MARGIN)


def settled(ctx: Context, found: Findings, *, searched: bool = False) -> bool:
    """The chain stops here: the hand rule (`confirmed`), or the answer's (`answered`) once
    a web round was asked and its leads followed (`searched`). Before that the search has
    not yet shown the copies elsewhere — a republisher's, the site's new address — which
    teach later recoveries where this site's answers live (`learn.answers_elsewhere`), and
    right after a web round its hits (reports of the article, a republisher's other page)
    are leads the neighbourhood reads next for the page itself."""
    return confirmed(found.ranked, ctx.reference) or (searched and answered(ctx, found))


async def rank(ctx: Context, found: Findings) -> list[Candidate]:
    """Read the candidates worth a request and rank them; a first wave of reads holding the
    page moved for sure saves the second (`candidates.rank`)."""
    return await candidates.rank(ctx, found, moved_for_sure)


async def step(ctx: Context, found: Findings, stages: Sequence[Stage], *,
               always_rank: bool = False, searched: bool = False) -> bool:
    """One step of the chain; True when its ranking is settled (stop)."""
    plans = [await stage.plan(ctx, found) for stage in stages]
    await asyncio.gather(*(ask(ctx, found, p.now, p.context) for p in plans if p.now))
    for p in plans:
        await complement(ctx, found, p.then, p.context)
    added = sum(p.added for p in plans)
    for stage in stages:
        added += await stage.settle(ctx, found)
    if always_rank or added or any(p.now or p.then for p in plans):
        await rank(ctx, found)
        return settled(ctx, found, searched=searched)
    # Nothing new: the last ranking stands, and its leads have now been followed.
    return searched and answered(ctx, found)


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
            if await step(ctx, found, self.neighbourhood, searched=True):
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
            if settled(self.ctx, self.found, searched=True):
                return
