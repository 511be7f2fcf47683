"""`pagetrail check URL [--json]`: is this link dead? One line, or the CheckResult as JSON."""

from __future__ import annotations

import argparse
from datetime import datetime

from pagetrail.cli.common import add_json_flag, parse_date, print_json, run_async, user_url
from pagetrail.tools.api import check_with_drift
from pagetrail.tools.check import check_link, summary_line
from pagetrail.tools.fetch import Fetcher
from pagetrail.tools.models import CheckResult
from pagetrail.tools.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("check", help="check whether a link is dead (verdict + evidence)")
    parser.add_argument("url", help="the http(s) URL to check")
    parser.add_argument("--no-sibling", action="store_true",
                        help="skip the soft-404 probe of a random sibling URL")
    parser.add_argument("--drift", action="store_true",
                        help="if the link works, compare it with its archived copy (drifted?)")
    parser.add_argument("--since", type=parse_date, default=None, metavar="DATE",
                        help="with --drift: the link's date (the copy closest to it is used)")
    add_json_flag(parser)
    parser.set_defaults(func=handle)


async def _check(url: str, settings: Settings, probe_sibling: bool, drift: bool,
                 since: datetime | None) -> CheckResult:
    async with Fetcher(settings) as fetcher:
        result = await check_link(url, fetcher, settings=settings, probe_sibling=probe_sibling)
        if drift:
            result = await check_with_drift(result, fetcher, settings, since)
        return result


def handle(args: argparse.Namespace) -> int:
    settings = Settings()
    url = user_url(args.url, settings)  # InvalidURL/RefusedAddress → one line, exit 2
    result = run_async(_check(url, settings, not args.no_sibling, args.drift,
                                args.since))
    if args.json:
        print_json(result)
    else:
        print(summary_line(result))
        if result.drift is not None:
            drift = result.drift
            state = "DRIFTED: serves other content now" if drift.drifted else "same content"
            print(f"drift: {state} (similarity {drift.similarity:.2f} to the copy of "
                  f"{drift.memento.datetime:%Y-%m-%d}: {drift.memento.memento_url})")
    return 0
