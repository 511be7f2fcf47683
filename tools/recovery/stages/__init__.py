"""The recovery's stages, cheapest and surest first; the order and the stop rule are in
`tools.recovery.chain`.

Every stage is a module (or, for a round of web queries, an object) with one signature:

- `NAME`/`name`: what it is called in timings and docs;
- `async plan(ctx, found) -> Asks`: add the candidates it knows directly (counted in
  `Asks.added`) and say which queries to ask — `now`, with the other stages of its step,
  and `then`, pages only, once they are all answered;
- `async settle(ctx, found) -> int`: what the answers lead to (links followed, a site's new
  home noted); returns the candidates added.

`ctx` is the frozen `recovery.context.Context`, `found` the `Findings` accumulator.

Stages: `direct` (picks, archived redirects, rewrite rules), `dead_site` (the site's own
map and captures), `moved_host` (the host's variants that answer), `siblings` (the slug
under live siblings' folders), `answer_sites` (sites that held other links' answers),
`links` (the neighbourhood: maps of candidates' sites and the link graph), `web` (the
planned queries, one round per query-plan stage).
"""

from __future__ import annotations

from typing import Protocol

from pagetrail.tools.recovery.context import Asks, Context, Findings


class Stage(Protocol):
    """The one signature of a stage (a module of this package satisfies it)."""

    NAME: str

    async def plan(self, ctx: Context, found: Findings) -> Asks: ...
    async def settle(self, ctx: Context, found: Findings) -> int: ...
