"""`pagetrail scan URL|SITE`: crawl, check every link once, report what rotted.

A progress bar on a terminal (stderr), nothing in CI or pipes. The report is the digest of
the scan (tools.scan.digest): Markdown by default, JSON with --json. Running the same scan again
after an interruption resumes it.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# wordfreq (the tokenizer) is imported by tools.content.text on first use: a scan tokenizes only
# pages with not-found wording or a soft-404 sibling to compare, often none at all.
from pagetrail import PagetrailError, Settings, open_store
from pagetrail.cli.check_cmd import network_down_exit
from pagetrail.cli.common import print_json, run_async
from pagetrail.lab import (
    ScanDigest,
    ScanOptions,
    ScanProgressFn,
    build_digest,
    digest_json,
    digest_markdown,
    recover_confirmed,
    recovery_plan,
    scan_site,
)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("scan", help="crawl a site or page and check its links for rot")
    parser.add_argument("target", metavar="URL|SITE", help="a page URL, a site root or a host")
    parser.add_argument("--depth", type=int, default=2, help="crawl depth (default 2)")
    parser.add_argument("--max-pages", type=int, default=500, help="pages crawled at most")
    parser.add_argument("--same-site-only", action="store_true",
                        help="check only links to the same site")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="requests in flight at once (default: settings.concurrency)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the digest as JSON")
    output.add_argument("--markdown", action="store_true", help="print Markdown (default)")
    parser.add_argument("--recover", action="store_true",
                        help="run recovery on the confirmed dead links (newly confirmed first);"
                             " suspect links wait for confirmation")
    parser.add_argument("--recover-limit", type=int, default=10,
                        help="recoveries at most (default 10)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=handle)


# Allocations between two young-generation collections during a scan (CPython's default: 700).
# A scan allocates millions of short-lived objects (requests, parse trees, rows); at 700 the
# collector ran ~500 times in a 20,000-link scan and promoted survivors to be walked again
# by older-generation passes, ~0.3 s of CPU in all (plus the caches it evicts); at 20,000,
# ~0.07 s (558 collections → 55). Cycles wait a little longer to be freed: a few MB at most.
SCAN_GC_THRESHOLD = 20_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The cyclic collector runs less often while the block runs (restored afterwards)."""
    previous = gc.get_threshold()
    gc.set_threshold(SCAN_GC_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def show_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty() and not os.environ.get("CI")


@contextmanager
def progress_bar(enabled: bool, description: str = "checking links",
                 ) -> Iterator[ScanProgressFn | None]:
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


async def _scan(args: argparse.Namespace, settings: Settings,
                progress: ScanProgressFn | None) -> ScanDigest:
    store = open_store(settings.database_url)
    options = ScanOptions(depth=max(0, args.depth), max_pages=max(1, args.max_pages),
                          same_site_only=args.same_site_only, concurrency=args.concurrency)
    result = await scan_site(args.target, store=store, settings=settings, options=options,
                        progress=progress)
    digest = build_digest(store, result)
    if args.recover:
        # Said before the (long) recoveries start: what is recovered, what waits, until when.
        print(f"pagetrail: {recovery_plan(digest, max(0, args.recover_limit))}",
              file=sys.stderr)
        await recover_confirmed(digest, store=store, settings=settings,
                                limit=max(0, args.recover_limit))
    return digest


def _scan_on_workers(args: argparse.Namespace, settings: Settings) -> ScanDigest:
    """With a broker: the scan runs on a worker, the recoveries fan out over the workers."""
    from pagetrail.lab import get_dispatcher, scan_on_workers

    dispatcher = get_dispatcher(settings, open_store(settings.database_url))
    with progress_bar(show_progress(args.quiet), "recovering links") as progress:
        result = run_async(scan_on_workers(
            dispatcher, args.target, depth=max(0, args.depth), max_pages=max(1, args.max_pages),
            same_site_only=args.same_site_only,
            recover_limit=max(0, args.recover_limit) if args.recover else 0, progress=progress))
    return ScanDigest.model_validate(result)


def handle(args: argparse.Namespace) -> int:
    settings = Settings()
    try:
        if settings.broker_url:
            digest = _scan_on_workers(args, settings)
        else:
            with fewer_collections(), progress_bar(show_progress(args.quiet)) as progress:
                digest = run_async(_scan(args, settings, progress))
    except PagetrailError as exc:
        return network_down_exit(exc)  # exit 3 as check/recover/search; others go on
    if args.json:
        print_json(digest_json(digest))
    else:
        sys.stdout.write(digest_markdown(digest))
    if digest.error:
        print(f"pagetrail: scan failed: {digest.error}", file=sys.stderr)
        return 1
    return 0
