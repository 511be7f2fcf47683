"""The one shape of a stage: an object made per recovery (`chain.Chain`), keeping its own
bookkeeping (what it read, what it tried), reading the frozen `Context` and adding to the
`Findings` every stage shares."""

from __future__ import annotations

from pagetrail.tools.recovery.context import Asks, Context, Findings


class Stage:
    """`start` reads what the stage needs before the first step; `plan` adds the candidates the stage knows directly (counted in `Asks.added`) and says
    which queries to ask — `now`, with the other stages of its step, and `then`, pages only,
    once they are all answered; `settle` says what the answers lead to (links followed, a
    site's new home noted) and returns the candidates it added. A stage with nothing to
    settle keeps the default."""

    NAME: str = ""

    async def start(self, ctx: Context, found: Findings) -> None:
        """What the stage reads when the search starts, before any step (no request)."""

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        return Asks()

    async def settle(self, ctx: Context, found: Findings) -> int:
        return 0
