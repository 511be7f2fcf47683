"""`pagetrail search QUERY [--engine E]... [--site HOST] [--limit N] [--json]`."""

from __future__ import annotations

import argparse
import sys

from pagetrail.cli.common import (
    UsageError,
    add_json_flag,
    parse_date,
    print_json,
    run_async,
    user_url,
)
from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.engines.service import SearchOutcome
from pagetrail.tools.settings import Settings, get_settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("search", help="run a query on the configured search engines")
    parser.add_argument("query", help="the query text")
    parser.add_argument("--engine", "-e", action="append", dest="engines", metavar="E",
                        help="engine to use (repeatable; default: settings.search_engines)")
    parser.add_argument("--site", help="restrict hits to this host")
    parser.add_argument("--limit", type=int, default=10, help="hits per engine (default 10)")
    parser.add_argument("--dead-url", help="the dead URL (gives the site and cdx engines a host)")
    parser.add_argument("--after", help="only URLs that appeared after this date (YYYY-MM-DD)")
    add_json_flag(parser)
    parser.set_defaults(func=handle)


async def run_search(settings: Settings, query: str, *, engines: list[str] | None,
                     site: str | None, limit: int, context: SearchContext | None,
                     ) -> tuple[SearchOutcome, list[str]]:
    from pagetrail.store.db import open_store
    from pagetrail.tools.engines.registry import build_engine_set
    from pagetrail.tools.engines.service import SearchService
    from pagetrail.tools.fetch import Fetcher

    store = open_store(settings.database_url)
    async with Fetcher(settings) as fetcher:
        engine_set = build_engine_set(settings, fetcher, store, engines)
        service = SearchService(engine_set.engines, store=store, settings=settings,
                                secrets=engine_set.secrets)
        outcome = await service.search(query, site=site, limit=limit, context=context)
    return outcome, engine_set.notes


def handle(args: argparse.Namespace) -> int:
    if not args.query.strip():
        raise UsageError("empty query")
    if args.limit < 1 or args.limit > 100:
        raise UsageError("--limit must be between 1 and 100")
    context = None
    if args.dead_url or args.after:
        dead_url = user_url(args.dead_url) if args.dead_url else None
        context = SearchContext(dead_url=dead_url, after=parse_date(args.after, option="--after"))
    outcome, notes = run_async(run_search(
        get_settings(), args.query, engines=args.engines, site=args.site,
        limit=args.limit, context=context,
    ))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print_json({
            "query": outcome.query, "site": outcome.site,
            "hits": outcome.hits, "failures": outcome.failures,
            "cached": sorted(outcome.cached), "notes": notes,
        })
    else:
        print_outcome(outcome)
    return 0 if outcome.hits or not outcome.failures else 1


def print_outcome(outcome: SearchOutcome) -> None:
    for engine, hits in outcome.hits.items():
        cached = " (cached)" if engine in outcome.cached else ""
        print(f"== {engine}: {len(hits)} hits{cached}")
        for hit in hits:
            print(f"{hit.rank:3d}. {hit.url}")
            if hit.title:
                print(f"     {hit.title}")
    for failure in outcome.failures:
        print(f"!! {failure.engine}: {failure.error}")
