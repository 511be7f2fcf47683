"""`pagetrail config show`: the effective settings, secrets masked, each with where it came
from (an environment variable, the config file and line, or the default), and the
repository's `pagetrail fix` configuration found from the working directory up."""

from __future__ import annotations

import argparse
from typing import Any

from pagetrail import Settings
from pagetrail.cli.common import add_json_flag, print_json
from pagetrail.lab import FixConfig, config_file, load_fix_config, setting_sources


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("config", help="show the effective configuration")
    inner = parser.add_subparsers(dest="config_command", metavar="ACTION")
    show = inner.add_parser("show", help="print effective settings (secrets masked) and "
                                         "where each came from")
    add_json_flag(show)
    show.set_defaults(func=show_config)
    parser.set_defaults(func=show_config, json=False)


def _line(key: str, value: Any, source: str) -> str:
    return f"{key} = {value!r}  # {source}"


def fix_config_lines(config: FixConfig) -> list[str]:
    """The `pagetrail fix` settings, one a line, each with where it came from."""
    where = str(config.path) if config.path else "none found (defaults)"
    lines = [f"# pagetrail fix: {where}"]
    lines += [_line(key, row["value"], row["source"]) for key, row in config.shown().items()]
    return lines


def print_fix_config(config: FixConfig) -> None:
    print("\n".join(fix_config_lines(config)))


def show_config(args: argparse.Namespace) -> int:
    shown = Settings().masked()
    sources = setting_sources()
    fix = load_fix_config()
    if args.json:
        # The settings' values stay at the top level (as before); where each came from and
        # the repository's fix configuration sit beside them.
        print_json({**shown, "sources": sources,
                    "fix": {"file": str(fix.path) if fix.path else None,
                            "settings": fix.shown()}})
        return 0
    print(f"# config file: {config_file()}")
    for key, value in shown.items():
        print(_line(key, value, sources.get(key, "default")))
    print()
    print_fix_config(fix)
    return 0
