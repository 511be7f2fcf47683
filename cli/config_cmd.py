"""`pagetrail config show`."""

from __future__ import annotations

import argparse

from pagetrail import Settings, config_file
from pagetrail.cli.common import add_json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("config", help="show the effective configuration")
    inner = parser.add_subparsers(dest="config_command", metavar="ACTION")
    show = inner.add_parser("show", help="print effective settings, secrets masked")
    add_json_flag(show)
    show.set_defaults(func=show_config)
    parser.set_defaults(func=show_config, json=False)


def show_config(args: argparse.Namespace) -> int:
    shown = Settings().masked()
    if args.json:
        print_json(shown)
        return 0
    print(f"# config file: {config_file()}")
    for key, value in shown.items():
        print(f"{key} = {value!r}")
    return 0
