"""`pagetrail search QUERY [--engine E]... [--site HOST] [--limit N] [--json]`."""

from __future__ import annotations

import argparse
import sys

from pagetrail import Hit, PagetrailError, SearchResult, get_settings, open_store, search_web
from pagetrail.cli.check_cmd import network_down_exit
from pagetrail.cli.common import UsageError, add_json_flag, parse_date, print_json, run_async


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


def handle(args: argparse.Namespace) -> int:
    if not args.query.strip():
        raise UsageError("empty query")
    if args.limit < 1 or args.limit > 100:
        raise UsageError("--limit must be between 1 and 100")
    settings = get_settings()
    try:
        result = run_async(search_web(
            args.query, engines=args.engines, site=args.site, limit=args.limit,
            dead_url=args.dead_url, after=parse_date(args.after, option="--after"),
            settings=settings, store=open_store(settings.database_url)))
    except PagetrailError as exc:  # network_down: exit 3, as check and recover
        return network_down_exit(exc)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print_json({**result.model_dump(mode="json"), "hits": hits_by_engine(result)})
    else:
        print_result(result)
    return 0 if result.hits or not result.failures else 1


def hits_by_engine(result: SearchResult) -> dict[str, list[Hit]]:
    by_engine: dict[str, list[Hit]] = {}
    for hit in result.hits:
        by_engine.setdefault(hit.engine, []).append(hit)
    return by_engine


def print_result(result: SearchResult) -> None:
    for engine, hits in hits_by_engine(result).items():
        cached = " (cached)" if engine in result.cached else ""
        print(f"== {engine}: {len(hits)} hits{cached}")
        for hit in hits:
            print(f"{hit.rank:3d}. {hit.url}")
            if hit.title:
                print(f"     {hit.title}")
    for failure in result.failures:
        print(f"!! {failure.engine}: {failure.error}")
