"""`pagetrail signature URL [--live] [--json]` and `pagetrail tags URL [--json]`."""

from __future__ import annotations

import argparse

from pagetrail.cli.common import add_json_flag, print_json, run_async, user_url
from pagetrail.tools.api import live_document
from pagetrail.tools.errors import NoMemento, PagetrailError
from pagetrail.tools.fetch import Fetcher
from pagetrail.tools.memento import fetch_memento
from pagetrail.tools.models import Signature, Tag
from pagetrail.tools.settings import Settings, get_settings
from pagetrail.tools.signature import extract_signature
from pagetrail.tools.tags import get_tags


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


async def _signature(url: str, live: bool, settings: Settings) -> Signature:
    async with Fetcher(settings) as fetcher:
        if live:
            document = await live_document(url, fetcher)
        else:
            memento = await fetch_memento(url, fetcher, settings=settings)
            if memento is None or memento.document is None:
                raise NoMemento("no usable archived copy (try --live)", url=url)
            document = memento.document
    return extract_signature(document)


def handle_signature(args: argparse.Namespace) -> int:
    url = user_url(args.url)
    signature = run_async(_signature(url, args.live, get_settings()))
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


async def _tags(url: str, settings: Settings) -> list[Tag]:
    async with Fetcher(settings) as fetcher:
        memento = await fetch_memento(url, fetcher, settings=settings)
        current = None
        try:
            current = await live_document(url, fetcher)
        except PagetrailError:  # the page is dead: no current page to call tags ghosts by
            current = None
        return await get_tags(url, fetcher, memento=memento, current=current,
                              settings=settings)


def handle_tags(args: argparse.Namespace) -> int:
    url = user_url(args.url)
    tags = run_async(_tags(url, get_settings()))
    if args.json:
        print_json(tags)
        return 0
    if not tags:
        print(f"no tags found for {url}")
    for tag in tags:
        print(f"{tag.tag}  ({tag.source}{', ghost' if tag.ghost else ''})")
    return 0
