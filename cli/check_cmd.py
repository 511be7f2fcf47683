"""`pagetrail check URL [--json]`: is this link dead? One line, or the CheckResult as JSON."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from pagetrail.cli.common import add_json_flag, print_json, run_async
from pagetrail.tools.api import with_drift
from pagetrail.tools.check import check_link, summary_line
from pagetrail.tools.fetch import Fetcher
from pagetrail.tools.models import CheckResult
from pagetrail.tools.settings import Settings
from pagetrail.tools.urls import validate_url


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
            result = await with_drift(result, fetcher, settings, since)
        return result


def parse_date(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO date: {text!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def handle(args: argparse.Namespace) -> int:
    url = validate_url(args.url)  # InvalidURL → main prints one line, exit 2
    settings = Settings()
    result = run_async(_check(url, settings, not args.no_sibling, args.drift, args.since))
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
