"""Direct evidence: a person's picks, the archives' redirects of the dead URL and the site's
inferred rewrite rules (FABLE). Read with the link's evidence, before the search
(`read`: the ranking's reference weighs it); the chain's first step makes it candidates, and
when one is already a verified move, no search engine is asked at all."""

from __future__ import annotations

from collections.abc import Sequence

from pagetrail.tools import policy
from pagetrail.tools.models import ArchivedRedirect, Hit
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.context import Asks, Context, DeadURL, DirectEvidence, Findings
from pagetrail.tools.recovery.stages.base import Stage

NAME = "direct"


async def read(url: DeadURL, store: memory.Store | None, methods: frozenset[str] | None,
               fail: memory.FailFn, redirects: Sequence[ArchivedRedirect],
               title: str) -> DirectEvidence:
    """The picks and rejections, and the proposals of the site's rewrite rules, from the
    store; with the archives' redirects, the direct evidence."""
    picks: list[str] = []
    rejected: set[str] = set()
    proposals: list[tuple[str, float]] = []
    if store is not None:
        picks, rejected = await memory.stored(
            fail, "reading picks", ([], set()), memory.picks_and_rejections, store, url)
    if store is not None and (methods is None or "INFER" in methods):
        proposals = await memory.stored(fail, "reading known moves", [], inferred, store, url,
                                        title)
    return DirectEvidence(picks=tuple(picks), rejected=frozenset(rejected),
                          redirects=tuple(redirects), proposals=tuple(proposals))


def inferred(store: memory.Store, url: str, title: str) -> list[tuple[str, float]]:
    """Candidates from the site's rewrite rules, learnt from its known moves (FABLE)."""
    from pagetrail.tools.learning import KnownMove, infer_aliases

    moves = [KnownMove(m.old_url, m.new_url, source=m.source)
             for m in memory.moves_for_site(store, url)]
    if not moves:
        return []
    inference = infer_aliases(moves, url, title=title or None)
    # Proposals are verified like every candidate (fetched, ranked); confident rules weigh more.
    return [(p.url, p.quality if p.confident else p.quality / 2)
            for p in inference.proposals[:policy.RULE_PROPOSALS]]


class Direct(Stage):
    """Picks, archived redirects (when REDIRECT is allowed) and rule proposals as candidates,
    in that order; nothing to ask."""

    NAME = NAME

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        direct = ctx.direct
        for chosen in direct.picks:
            found.add_hit("PICK", Hit(url=chosen, rank=1, engine="store"))
        if ctx.allowed("REDIRECT"):
            for i, redirect in enumerate(direct.redirects, 1):
                found.add_hit("REDIRECT", Hit(url=redirect.target_url, rank=i,
                                              engine="archive"))
        for proposal_url, _support in direct.proposals:
            found.add_hit("INFER", Hit(url=proposal_url, rank=1, engine="rules"))
        return Asks(added=len(found.candidates))

