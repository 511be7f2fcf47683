"""Direct evidence: a person's picks, the archives' redirects of the dead URL and the site's
inferred rewrite rules (FABLE). Read before the search (the ranking's reference weighs them);
when it is already a verified move, no search engine is asked at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pagetrail.tools import policy
from pagetrail.tools.models import ArchivedRedirect, Hit
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.context import Asks, Context, DeadURL, Findings

NAME = "direct"


@dataclass
class Direct:
    """What the direct evidence says beyond its candidates (for the ranking's reference)."""

    picks: list[str] = field(default_factory=list)
    rejected: set[str] = field(default_factory=set)  # normalised URLs a person said "not it"
    rule_support: dict[str, float] = field(default_factory=dict)  # normalised URL → support


async def gather(url: DeadURL, store: memory.Store | None, methods: frozenset[str] | None,
                 found: Findings, redirects: Sequence[ArchivedRedirect], title: str,
                 evidence: dict[str, object]) -> Direct:
    """Add picks, archived redirects and rule proposals as candidates."""
    direct = Direct()
    if store is not None:
        direct.picks, direct.rejected = await memory.stored(
            found.failures, "reading picks", ([], set()), memory.picks_and_rejections,
            store, url)
    for chosen in direct.picks:
        found.add_hit("PICK", Hit(url=chosen, rank=1, engine="store"))
    found.archived_redirects = list(redirects)
    if methods is None or "REDIRECT" in methods:
        for i, redirect in enumerate(redirects, 1):
            found.add_hit("REDIRECT", Hit(url=redirect.target_url, rank=i, engine="archive"))
        evidence["archived_redirects"] = [r.target_url for r in redirects]
    if store is not None and (methods is None or "INFER" in methods):
        for proposal_url, support in await memory.stored(
                found.failures, "reading known moves", [], inferred, store, url, title):
            found.add_hit("INFER", Hit(url=proposal_url, rank=1, engine="rules"))
            direct.rule_support[normalize_url(proposal_url)] = support
    return direct


def inferred(store: memory.Store, url: str, title: str) -> list[tuple[str, float]]:
    """Candidates from the site's rewrite rules, learnt from its known moves (FABLE)."""
    from pagetrail.tools.recovery.aliases import KnownMove, infer_aliases

    moves = [KnownMove(m.old_url, m.new_url, source=m.source)
             for m in memory.moves_for_site(store, url)]
    if not moves:
        return []
    inference = infer_aliases(moves, url, title=title or None)
    # Proposals are verified like every candidate (fetched, ranked); confident rules weigh more.
    return [(p.url, p.quality if p.confident else p.quality / 2)
            for p in inference.proposals[:policy.RULE_PROPOSALS]]


async def plan(ctx: Context, found: Findings) -> Asks:
    """Nothing to ask: the direct candidates are already there (ranked when there are any)."""
    return Asks(added=len(found.candidates))


async def settle(ctx: Context, found: Findings) -> int:
    return 0
