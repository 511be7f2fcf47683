"""`pagetrail demo`: serve the bundled offline world and recover its dead links.

This is the README's main job: it needs nothing but the installed package. Each case of the
world is a link found on a page (URL, the linking page, anchor text, context, date); the
demo recovers them one by one and prints the ranked answers with their evidence, and at the
end how many the world's truth agrees with.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console

from pagetrail.cli.common import add_json_flag, print_json, run_async
from pagetrail.cli.recover_cmd import print_recovery
from pagetrail.tools.models import Recovery
from pagetrail.tools.urls import same_url


def bundled_world() -> Path:
    return Path(str(resources.files("pagetrail.demo").joinpath("world")))


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="recover the dead links of the bundled offline world")
    parser.add_argument("--world", type=Path, default=None,
                        help="another testbed world (default: the bundled demo world)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N links")
    parser.add_argument("--show", type=int, default=3, help="candidates shown per link")
    add_json_flag(parser)
    parser.set_defaults(func=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    from pagetrail.tools.testbed import load_world

    world = load_world(args.world or bundled_world())
    cases = [c.raw for c in world.cases][: args.limit or None]
    recoveries = run_async(_recover_all(world, cases))
    if args.json:
        print_json([{"case": c["id"], "recovery": r} for c, r in zip(cases, recoveries,
                                                                   strict=True)])
        return 0
    console = Console()
    agreed = 0
    for case, recovery in zip(cases, recoveries, strict=True):
        console.rule(f"[bold]{case['id']}[/bold] {case.get('category', '')}", style="dim")
        print_recovery(recovery, limit=args.show, console=console)
        verdict = agrees(case, recovery)
        agreed += verdict
        expected = case["expect"]
        console.print(f"  truth: {expected['kind']} {' '.join(expected.get('urls', [])[:1])}"
                      f"  →  {'[green]agrees[/green]' if verdict else '[red]differs[/red]'}",
                      highlight=False)
    console.rule()
    console.print(f"{agreed} of {len(cases)} answers agree with the world's truth.")
    return 0


def agrees(case: dict[str, Any], recovery: Recovery) -> bool:
    """Does the first answer match the case's truth (the evaluator's success@1, simplified)?"""
    kind = case["expect"]["kind"]
    if kind == "alive":
        return recovery.answer in ("alive", "unverified", "redirected")
    live = [c for c in recovery.candidates if c.kind != "archived"]
    if kind in ("moved", "replacement"):
        return bool(live) and any(same_url(live[0].url, u) for u in case["expect"]["urls"])
    confident_live = bool(live) and live[0].confidence >= 0.5
    if kind == "archived":
        return recovery.memento is not None and not confident_live
    return not confident_live  # none: abstaining is right


async def _recover_all(world: Any, cases: list[dict[str, Any]]) -> list[Recovery]:
    from pagetrail.store import Store
    from pagetrail.tools.recover import recover
    from pagetrail.tools.testbed import Testbed

    with tempfile.TemporaryDirectory(prefix="pagetrail-demo-") as scratch:
        async with Testbed(world) as testbed:
            settings = testbed.settings(database_url=f"sqlite:///{Path(scratch) / 'demo.db'}")
            store = Store(settings.database_url)
            limit = asyncio.Semaphore(4)

            async def one(case: dict[str, Any]) -> Recovery:
                source = case.get("source") or {}
                date = case.get("link_date")
                async with limit:
                    return await recover(
                        case["url"], source_url=source.get("url"), anchor=source.get("anchor"),
                        context=source.get("context"),
                        link_date=datetime.fromisoformat(date.replace("Z", "+00:00"))
                        if date else None,
                        settings=settings, store=store,
                    )

            try:
                return list(await asyncio.gather(*(one(c) for c in cases)))
            finally:
                store.dispose()
