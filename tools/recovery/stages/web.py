"""Web queries: the query plan (`evidence.queryplan.plan_queries`: title, lexical
signatures, anchor, tags, expansions, cheapest-and-best first) asked of the web engines and
the local index, one round per plan stage."""

from __future__ import annotations

from dataclasses import dataclass

from pagetrail.tools.evidence.queryplan import plan_queries
from pagetrail.tools.recovery.context import Ask, Asks, Context, Findings
from pagetrail.tools.recovery.stages.base import Stage

NAME = "web"


@dataclass(frozen=True)
class WebRound(Stage):
    """One stage of the query plan: a stage with the one signature."""

    number: int
    batch: list[Ask]
    planned: int  # queries planned in all, for progress

    @property
    def NAME(self) -> str:  # type: ignore[override]
        return f"{NAME} {self.number}"

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        await found.report("queries", len(found.queries), self.planned, f"stage {self.number}")
        return Asks(now=list(self.batch))


def rounds(ctx: Context, asked_before: int) -> list[WebRound]:
    """The plan's rounds in order; none without a web engine or index to ask."""
    planned = plan_queries(ctx.evidence, methods=ctx.methods,
                           max_queries=ctx.budget.max_queries,
                           expansion_per_source=ctx.settings.expansion_per_source)
    engines = ctx.engines.web + ctx.engines.index  # the index answers the same queries
    out: list[WebRound] = []
    for stage in sorted({q.stage for q in planned}):
        batch = [Ask(q.method, q.text, engines) for q in planned if q.stage == stage]
        if batch and engines:
            out.append(WebRound(stage, batch, len(planned) + asked_before))
    return out
