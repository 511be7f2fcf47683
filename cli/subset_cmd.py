"""`pagetrail testbed subset WORLD --cases N --out DIR` — cut a small world out of a big one.

Used to make the bundled demo world from the development world. `add_subset_parser` is
called by cli/testbed_cmd.py with the `testbed` command's sub-parsers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pagetrail.cli.common import add_json_flag, print_json
from pagetrail.lab import SubsetOptions, make_subset


def add_subset_parser(testbed_commands: argparse._SubParsersAction) -> None:
    parser = testbed_commands.add_parser(
        "subset", help="write a small world: N cases across categories and all they need",
        description="Choose N cases across every category (deterministic for a seed) and copy "
                    "the hosts, live pages, archive records, blobs and social lines they need, "
                    "with a few distractor pages per host, into a new, valid world.",
    )
    parser.add_argument("world", type=Path, metavar="WORLD", help="the source world directory")
    parser.add_argument("--cases", type=int, default=30, metavar="N", help="cases to keep (30)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="new world directory (must be absent or empty)")
    parser.add_argument("--seed", type=int, default=1, help="selection seed (1)")
    parser.add_argument("--distractors", type=int, default=SubsetOptions.distractors_per_host,
                        metavar="K", help="other live pages kept per host "
                        f"({SubsetOptions.distractors_per_host})")
    parser.add_argument("--archived-per-host", type=int,
                        default=SubsetOptions.archive_urls_per_host, metavar="K",
                        help="other captured URLs kept per host "
                        f"({SubsetOptions.archive_urls_per_host})")
    parser.add_argument("--name", default=None, help="name of the new world (WORLD-subset)")
    add_json_flag(parser)
    parser.set_defaults(func=subset_handler)


def subset_handler(args: argparse.Namespace) -> int:
    summary = make_subset(args.world, args.out, SubsetOptions(
        cases=args.cases, seed=args.seed, distractors_per_host=max(0, args.distractors),
        archive_urls_per_host=max(0, args.archived_per_host), name=args.name,
    ))
    if args.json:
        print_json({
            "out": str(summary.out), "cases": summary.cases, "by_category": summary.by_category,
            "hosts": summary.hosts, "resources": summary.resources, "blobs": summary.blobs,
            "warc_records": summary.warc_records, "social": summary.social,
            "bytes": summary.bytes,
        })
        return 0
    categories = ", ".join(f"{k} {v}" for k, v in sorted(summary.by_category.items()))
    print(f"{summary.out}: {summary.cases} cases ({categories}); {summary.hosts} hosts, "
          f"{summary.resources} live resources, {summary.blobs} blobs, "
          f"{summary.warc_records} WARC records, {summary.social} social lines; "
          f"{summary.bytes / 1e6:.1f} MB")
    return 0
