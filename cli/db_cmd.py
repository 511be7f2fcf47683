"""`pagetrail db upgrade|current`."""

from __future__ import annotations

import argparse

from pagetrail import Settings, migrate_store, store_revisions
from pagetrail.lab import mask_url


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("db", help="database migrations")
    inner = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = inner.add_parser("upgrade", help="migrate the database to the latest schema")
    up.add_argument("--revision", default="head")
    up.set_defaults(func=db_upgrade)
    cur = inner.add_parser("current", help="print the schema revision")
    cur.set_defaults(func=db_current)


def db_upgrade(args: argparse.Namespace) -> int:
    url = Settings().database_url
    revision = migrate_store(url, args.revision)
    print(f"{mask_url(url)}: at revision {revision}")
    return 0


def db_current(args: argparse.Namespace) -> int:
    url = Settings().database_url
    current, head = store_revisions(url)
    print(f"{mask_url(url)}: revision {current} (head {head})")
    return 0
