"""`pagetrail signature URL [--live] [--json]` and `pagetrail tags URL [--json]`."""

from __future__ import annotations

import argparse

from pagetrail import (
    extract_signature,
    get_tags,
)
from pagetrail.cli.common import add_json_flag, print_json, run_async


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "signature", help="lexical signature (TF-IDF LS5/LS7, KLD and URL terms) of a page",
        description="Signature of the archived copy of URL (default) or of the live page.")
    parser.add_argument("url")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--memento", dest="live", action="store_false",
                        help="use the archived copy (default)")
    source.add_argument("--live", dest="live", action="store_true", help="use the live page")
    add_json_flag(parser)
    parser.set_defaults(func=handle_signature, live=False)

    tags = sub.add_parser("tags", help="tags of a URL: memento keywords, Hacker News; ghosts "
                                       "marked")
    tags.add_argument("url")
    add_json_flag(tags)
    tags.set_defaults(func=handle_tags)


def handle_signature(args: argparse.Namespace) -> int:
    signature = run_async(extract_signature(args.url, source="live" if args.live else "archive"))
    if args.json:
        print_json(signature)
        return 0
    print(f"title  {signature.title}")
    print(f"LS5    {' '.join(signature.ls5)}")
    print(f"LS7    {' '.join(signature.ls7)}")
    print(f"KLD    {' '.join(t.term for t in signature.kld_terms[:10])}")
    print(f"URL    {' '.join(signature.url_terms)}")
    print(f"lang   {signature.lang}")
    return 0


def handle_tags(args: argparse.Namespace) -> int:
    result = run_async(get_tags(args.url))
    url, tags = result.url, result.tags
    if args.json:
        print_json(tags)
        return 0
    if not tags:
        print(f"no tags found for {url}")
    for tag in tags:
        print(f"{tag.tag}  ({tag.source}{', ghost' if tag.ghost else ''})")
    return 0
