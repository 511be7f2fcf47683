"""`pagetrail memento URL [--at DATE] [--list] [--redirects] [--json]`."""

from __future__ import annotations

import argparse
import sys

from pagetrail import (
    Memento,
    NoMemento,
    archived_redirects,
    fetch_memento,
    list_captures,
)
from pagetrail.cli.common import (
    UsageError,
    add_json_flag,
    date_option,
    print_json,
    run_async,
)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "memento", help="find the archived copy of a URL (Memento, raw capture)",
        description="Find the capture of URL closest before --at (default: the latest good "
                    "one), skipping redirects, error pages and soft 404s.")
    parser.add_argument("url", help="the (dead) URL")
    parser.add_argument("--at", type=date_option("--at"), default=None,
                        help="date the link was made or broke: 2019-06-01, ISO date-time, "
                             "or a 14-digit archive timestamp")
    parser.add_argument("--list", action="store_true", help="list every capture instead")
    parser.add_argument("--redirects", action="store_true",
                        help="list captured redirects of the URL to other URLs")
    add_json_flag(parser)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.list and args.redirects:
        raise UsageError("--list and --redirects do not go together")
    if args.list:
        unavailable: list[str] = []
        captures = run_async(list_captures(args.url, unavailable=unavailable))
        if args.json:
            print_json({"url": args.url, "captures": captures, "unavailable": unavailable})
        for c in [] if args.json else captures:
            print(f"{c.datetime:%Y-%m-%d %H:%M:%S}  {c.status or '-':>3}  "
                  f"{c.mimetype or '-':<12} {c.memento_url}")
        for note in [] if args.json else unavailable:  # a partial listing says so
            print(f"note: not listed: {note}", file=sys.stderr)
        return 0
    if args.redirects:
        redirects = run_async(archived_redirects(args.url))
        if args.json:
            print_json(redirects)
        for r in [] if args.json else redirects:
            print(f"{r.datetime:%Y-%m-%d}  {r.status}  {r.target_url}  ({r.memento_url})")
        return 0
    try:
        memento = run_async(fetch_memento(args.url, at=args.at, whole=True))
    except NoMemento as exc:
        if exc.code != NoMemento.code:  # named: the archive refused (archive_excluded)
            raise
        memento = None
    if args.json:
        print_json(memento)
        return 0 if memento else 1
    if memento is None:
        print(f"no usable archived copy of {args.url}")
        return 1
    print(describe(memento))
    return 0


def describe(memento: Memento) -> str:
    lines = [
        f"memento   {memento.memento_url}",
        f"raw       {memento.raw_url}",
        f"captured  {memento.datetime:%Y-%m-%d %H:%M:%S %Z}  (archive {memento.archive})",
    ]
    document = memento.document
    if document:
        lines.append(f"title     {document.title or '(none)'}"
                     + (f"  [site: {document.site_name}]" if document.site_name else ""))
        lines.append(f"language  {document.lang or '?'}  words {len(document.text.split())}"
                     f"  links {len(document.links)}")
        if document.description:
            lines.append(f"about     {document.description[:200]}")
    return "\n".join(lines)
