"""`pagetrail recover URL` and `pagetrail pick DEAD_URL CHOSEN_URL`."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from pagetrail import Recovery, robust_link
from pagetrail.cli.common import (
    UsageError,
    add_json_flag,
    parse_date,
    print_json,
    run_async,
)
from pagetrail.lab import recovery_summary


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("recover", help="find where a dead link went")
    parser.add_argument("url", nargs="?", help="the dead link (or --batch FILE)")
    parser.add_argument("--batch", metavar="FILE",
                        help="recover every link of a CSV or JSONL file (url, source_url, "
                             "anchor, context, date); resumable; on workers with a broker")
    parser.add_argument("--output", metavar="FILE",
                        help="with --batch: write the answers here (.csv or .jsonl; default "
                             "JSONL on stdout)")
    parser.add_argument("--from", dest="source_url", help="the page that linked to it")
    parser.add_argument("--anchor", help="the link's anchor text")
    parser.add_argument("--context", help="words around the link")
    parser.add_argument("--date", help="when the link was made (ISO date)")
    parser.add_argument("--no-cache", action="store_true", help="ignore cached answers")
    parser.add_argument("--limit", type=int, default=10, help="candidates to show")
    output = parser.add_mutually_exclusive_group()
    add_json_flag(output)
    output.add_argument("--robust-link", action="store_true",
                        help="print Robust Links HTML for the chosen answer")
    parser.set_defaults(func=recover_command)

    pick = sub.add_parser("pick", help="record the replacement you chose for a dead link")
    pick.add_argument("dead_url")
    pick.add_argument("chosen_url")
    pick.add_argument("--by", default="", help="who chose it")
    pick.add_argument("--note", default="")
    pick.add_argument("--reject", action="store_true", help="record 'not it' instead")
    add_json_flag(pick)
    pick.set_defaults(func=pick_command)


def recover_command(args: argparse.Namespace) -> int:

    if args.batch:
        if args.url:
            raise UsageError("give a URL or --batch FILE, not both")
        from pagetrail.cli.batch_cmd import recover_batch

        return recover_batch(args.batch, args.output, quiet=args.json)
    if not args.url:
        raise UsageError("give the dead link's URL (or --batch FILE)")
    from pagetrail import PagetrailError, open_store, recover_link
    from pagetrail.cli.check_cmd import network_down_exit

    # The one route into a recovery, as for MCP and Slack (its URL guard included); the
    # whole answer (slim=False): the table and --json show every candidate.
    try:
        recovery = run_async(recover_link(
            args.url, source_url=args.source_url, anchor=args.anchor, context=args.context,
            link_date=parse_date(args.date, option="--date"), store=open_store(),
            fresh=args.no_cache, slim=False,
        ))
    except PagetrailError as exc:
        return network_down_exit(exc)
    if args.json:
        print_json(recovery)
    elif args.robust_link:
        print(robust_link(recovery))
    else:
        print_recovery(recovery, limit=args.limit)
    return 0


def print_recovery(recovery: Recovery, *, limit: int = 10, console: Console | None = None) -> None:
    console = console or Console()
    console.print(recovery_summary(recovery), markup=False, highlight=False)
    if recovery.candidates:
        table = Table(show_header=True, header_style="bold", expand=False)
        for column in ("#", "kind", "conf", "url", "title / evidence"):
            table.add_column(column, overflow="fold")
        for i, c in enumerate(recovery.candidates[:limit], 1):
            table.add_row(str(i), c.kind, f"{c.confidence:.2f}", c.url,
                          f"{c.title[:80]}\n[dim]{c.evidence[:160]}[/dim]" if c.title
                          else c.evidence[:160])
        console.print(table)
    for failure in recovery.failures:
        console.print(f"  [yellow]note[/yellow]: {failure.engine}: {failure.error}",
                      highlight=False)
    console.print(f"  [dim]{recovery.requests} requests, {recovery.seconds:.2f} s"
                  f"{' (cached)' if recovery.cached else ''}[/dim]")


def pick_command(args: argparse.Namespace) -> int:
    from pagetrail import record_pick

    record = run_async(record_pick(args.dead_url, args.chosen_url, by=args.by, via="cli",
                                   note=args.note, rejected=args.reject))
    if args.json:
        print_json(record)
    else:
        verb = "rejected" if args.reject else "picked"
        print(f"{verb}: {record.dead_url} → {record.chosen_url}")
    return 0
