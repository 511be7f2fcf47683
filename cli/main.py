"""`pagetrail` — the command line. Each subcommand lives in its own module with `register()`."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from pagetrail.cli.common import fail
from pagetrail.tools.errors import PagetrailError

# Modules that add subcommands; a module missing from an install is skipped, not fatal.
COMMAND_MODULES = [
    "pagetrail.cli.config_cmd",
    "pagetrail.cli.db_cmd",
    "pagetrail.cli.check_cmd",
    "pagetrail.cli.memento_cmd",
    "pagetrail.cli.signature_cmd",
    "pagetrail.cli.search_cmd",
    "pagetrail.cli.recover_cmd",
    "pagetrail.cli.demo_cmd",
    "pagetrail.cli.scan_cmd",
    "pagetrail.cli.testbed_cmd",
    "pagetrail.cli.eval_cmd",
    "pagetrail.cli.serve_cmd",
    "pagetrail.cli.digest_cmd",
    "pagetrail.cli.classify_cmd",
    "pagetrail.cli.aliases_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pagetrail",
        description="Find where a dead web link went.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    # trafilatura reports every page it cannot extract at WARNING: noise for our users.
    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except PagetrailError as exc:
        return fail(f"{exc.code}: {exc}")
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
