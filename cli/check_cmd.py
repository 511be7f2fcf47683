"""`pagetrail check URL [--json]`: is this link dead? One line, or the CheckResult as JSON."""

from __future__ import annotations

import argparse

from pagetrail.cli.common import add_json_flag, print_json, run_async, user_url
from pagetrail.tools.check import check_link, summary_line
from pagetrail.tools.fetch import Fetcher
from pagetrail.tools.models import CheckResult
from pagetrail.tools.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("check", help="check whether a link is dead (verdict + evidence)")
    parser.add_argument("url", help="the http(s) URL to check")
    parser.add_argument("--no-sibling", action="store_true",
                        help="skip the soft-404 probe of a random sibling URL")
    add_json_flag(parser)
    parser.set_defaults(func=handle)


async def _check(url: str, settings: Settings, probe_sibling: bool) -> CheckResult:
    async with Fetcher(settings) as fetcher:
        return await check_link(url, fetcher, settings=settings, probe_sibling=probe_sibling)


def handle(args: argparse.Namespace) -> int:
    settings = Settings()
    url = user_url(args.url, settings)  # InvalidURL/RefusedAddress → one line, exit 2
    result = run_async(_check(url, settings, not args.no_sibling))
    if args.json:
        print_json(result)
    else:
        print(summary_line(result))
    return 0
