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
import time
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console

from pagetrail import Recovery
from pagetrail.cli.common import add_json_flag, fail, print_json, run_async
from pagetrail.cli.recover_cmd import print_recovery
from pagetrail.lab import same_url


def bundled_world() -> Path:
    return Path(str(resources.files("pagetrail.demo").joinpath("world")))


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="recover the dead links of the bundled offline world")
    parser.add_argument("--world", type=Path, default=None,
                        help="another testbed world (default: the bundled demo world)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N links")
    parser.add_argument("--show", type=int, default=3, help="candidates shown per link")
    parser.add_argument("--jobs", type=_positive, default=4,
                        help="links recovered at once (default 4)")
    add_json_flag(parser)
    parser.set_defaults(func=demo_command)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number ≥ 1, not {text!r}")
    return value


def demo_command(args: argparse.Namespace) -> int:
    from pagetrail.lab import load_world

    world = load_world(args.world or bundled_world())
    cases = [c.raw for c in world.cases][: args.limit or None]
    # Progress goes to stderr with --json (stdout is the answer), to stdout otherwise.
    console = Console(stderr=bool(args.json), highlight=False)
    console.print(f"Serving the world {world.name!r} on 127.0.0.1 (live web, archive, search) "
                  f"and recovering its {len(cases)} dead links, {args.jobs} at a time…")
    state = _Progress(console=console, total=len(cases), show=args.show,
                      detailed=not args.json)
    recoveries, down = run_async(_recover_all(world, cases, jobs=args.jobs, progress=state))
    if args.json:
        print_json([{"case": c["id"], "recovery": r} for c, r in zip(cases, recoveries,
                                                                   strict=True)])
    else:
        console.rule()
        console.print(f"{state.agreed} of {len(cases)} answers agree with the world's truth.")
    if down:
        return fail(world_failure(down, recoveries), 1)
    return 0


def world_failure(down: list[str], recoveries: list[Recovery]) -> str:
    """The message for a run whose world broke: what stopped answering, and how many
    answers carry a failure (they are incomplete, not results)."""
    failed = sum(1 for r in recoveries if r.failures)
    return (f"the world's services failed during the demo: {', '.join(down)} stopped "
            f"answering; {failed} of {len(recoveries)} answers report failures "
            f"and are incomplete")


@dataclass
class _Progress:
    """Prints each link as soon as its recovery ends (the run is minutes long)."""

    console: Console
    total: int
    show: int
    detailed: bool
    done: int = 0
    agreed: int = 0

    def ready(self, testbed: Any, seconds: float) -> None:
        self.console.print(f"The world is up after {seconds:.0f} s (archive "
                           f"{testbed.archive_url}, search {testbed.search_url}); each link "
                           "is shown as soon as it is answered.", markup=False)

    def __call__(self, case: dict[str, Any], recovery: Recovery) -> None:
        self.done += 1
        verdict = agrees(case, recovery)
        self.agreed += verdict
        expected = case["expect"]
        mark = "[green]agrees[/green]" if verdict else "[red]differs[/red]"
        if not self.detailed:
            self.console.print(f"[{self.done}/{self.total}] {case['id']}: {recovery.answer}"
                               f" — {mark}")
            return
        self.console.rule(f"[bold]{self.done}/{self.total} {case['id']}[/bold] "
                          f"{case.get('category', '')}", style="dim")
        print_recovery(recovery, limit=self.show, console=self.console)
        self.console.print(f"  truth: {expected['kind']} "
                           f"{' '.join(expected.get('urls', [])[:1])}  →  {mark}")


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


async def _recover_all(world: Any, cases: list[dict[str, Any]], *, jobs: int,
                       progress: _Progress) -> tuple[list[Recovery], list[str]]:
    """Every case's recovery, and the world's services found down at the end."""
    from pagetrail import Store, recover_link
    from pagetrail.lab import Testbed

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pagetrail-demo-") as scratch:
        async with Testbed(world) as testbed:
            progress.ready(testbed, time.monotonic() - started)
            settings = testbed.settings(database_url=f"sqlite:///{Path(scratch) / 'demo.db'}")
            store = Store(settings.database_url)
            limit = asyncio.Semaphore(jobs)

            async def one(case: dict[str, Any]) -> Recovery:
                source = case.get("source") or {}
                date = case.get("link_date")
                async with limit:
                    recovery = await recover_link(
                        case["url"], source_url=source.get("url"), anchor=source.get("anchor"),
                        context=source.get("context"),
                        link_date=datetime.fromisoformat(date.replace("Z", "+00:00"))
                        if date else None,
                        slim=False, settings=settings, store=store,
                    )
                progress(case, recovery)
                return recovery

            try:
                recoveries = list(await asyncio.gather(*(one(c) for c in cases)))
            finally:
                store.dispose()
            return recoveries, await testbed.down()
