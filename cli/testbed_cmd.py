"""`pagetrail testbed serve WORLD`: serve a testbed world on loopback until interrupted.

`pagetrail testbed setup` builds the pywb virtualenv ahead of time (CI caches it).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from pagetrail.cli.subset_cmd import add_subset_parser
from pagetrail.lab import Testbed, ensure_pywb_venv, load_world, pywb_venv_path


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("testbed", help="serve a testbed world on loopback")
    commands = parser.add_subparsers(dest="testbed_command", metavar="ACTION", required=True)

    serve = commands.add_parser("serve", help="serve WORLD until Ctrl-C / SIGTERM")
    serve.add_argument("world", type=Path, help="world directory (see FORMAT.md)")
    serve.add_argument("--env-file", type=Path, help="also write the KEY=VALUE settings here")
    serve.add_argument("--ready-file", type=Path,
                       help="create this file once every service answers")
    serve.add_argument("--port-base", type=int, default=None,
                       help="proxy on N, search on N+1, archive on N+2 (default: free ports)")
    serve.set_defaults(func=serve_handler)

    setup = commands.add_parser("setup", help="build the pywb virtualenv now")
    setup.add_argument("--venv", type=Path, default=None,
                       help="where (default: $PAGETRAIL_PYWB_VENV or the user cache)")
    setup.set_defaults(func=setup_handler)

    add_subset_parser(commands)


def setup_handler(args: argparse.Namespace) -> int:
    print(ensure_pywb_venv(args.venv or pywb_venv_path(), quiet=False))
    return 0


def serve_handler(args: argparse.Namespace) -> int:
    world = load_world(args.world)  # a bad world fails here: one line, exit 2
    return asyncio.run(_serve(world, args))


async def _serve(world, args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with Testbed(world, port_base=args.port_base) as testbed:
            lines = "".join(f"{key}={value}\n" for key, value in testbed.env.items())
            sys.stdout.write(lines)
            sys.stdout.flush()
            if args.env_file:
                args.env_file.write_text(lines)
            if args.ready_file:
                args.ready_file.write_text("ready\n")
            await stop.wait()
    finally:
        if args.ready_file:
            args.ready_file.unlink(missing_ok=True)
    return 0
