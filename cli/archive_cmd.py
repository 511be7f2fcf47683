"""`pagetrail archive URL… [--json]`: ask Save Page Now to capture links now.

One line per URL: the outcome (success, skipped, pending, error, refused, no_keys), then the
capture's URL or the reason. Exit 0 when every URL is captured or already archived, 1 when
any capture failed or could not be asked for.
"""

from __future__ import annotations

import argparse

from pagetrail import Settings, archive_links
from pagetrail.cli.common import add_json_flag, print_json, run_async

OK = ("success", "skipped", "pending")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "archive", help="ask the Internet Archive (Save Page Now) to capture links now",
        description="Ask Save Page Now to capture each URL, unless archived recently. Needs "
                    "PAGETRAIL_IA_ACCESS_KEY and PAGETRAIL_IA_SECRET_KEY.")
    parser.add_argument("urls", nargs="+", metavar="URL", help="http(s) URLs to capture")
    add_json_flag(parser)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    settings = Settings()
    result = run_async(archive_links(args.urls, source="cli", settings=settings))
    if args.json:
        print_json(result)
    else:
        for capture in result.captures:
            where = capture.memento_url or capture.job_id
            detail = "  ".join(part for part in (where, capture.message) if part)
            print(f"{capture.status:8} {capture.url}  {detail}".rstrip())
    return 0 if all(c.status in OK for c in result.captures) else 1
