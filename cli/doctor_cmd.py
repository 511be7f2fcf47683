"""`pagetrail doctor`: which configured services answer (database, broker, archives, search
engines), one line each; exit 1 when a required one does not."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from pagetrail.cli.common import add_json_flag, print_json, run_async
from pagetrail.lab import doctor_healthy, run_doctor


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("doctor", help="check that the configured database, broker, "
                                           "archives and search engines answer")
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="seconds to wait for the database and the broker (default 5)")
    add_json_flag(parser)
    parser.set_defaults(func=doctor_command)


def doctor_command(args: argparse.Namespace) -> int:
    checks = run_async(run_doctor(timeout=args.timeout))
    if args.json:
        print_json({"healthy": doctor_healthy(checks),
                    "checks": [asdict(check) for check in checks]})
    else:
        for check in checks:
            print(check.line())
    return 0 if doctor_healthy(checks) else 1
