"""`pagetrail watch add|list|remove`: the sites and pages whose link rot a digest reports.

Watches belong to a channel: a Slack channel id for posted digests, or any name for digests
printed by `pagetrail digest run --channel NAME` (no Slack needed). The watch logic is the
engine's (tools.api, store.watches), the same as Slack's `/linkrot watch`.
"""

from __future__ import annotations

import argparse
import sys

from pagetrail.cli.common import add_json_flag, print_json, run_async

DEFAULT_CHANNEL = "cli"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("watch", help="sites and pages watched for the link-rot digest")
    actions = parser.add_subparsers(dest="watch_action", metavar="ACTION", required=True)
    channel_help = (f"the digest's channel: a Slack channel id, or any name for "
                    f"`pagetrail digest run --channel NAME` (default {DEFAULT_CHANNEL!r})")
    add = actions.add_parser("add", help="watch a site (example.org) or a page URL")
    add.add_argument("target", metavar="URL|SITE")
    add.add_argument("--channel", default=DEFAULT_CHANNEL, help=channel_help)
    add_json_flag(add)
    add.set_defaults(func=handle_add)
    remove = actions.add_parser("remove", help="stop watching a site or page")
    remove.add_argument("target", metavar="URL|SITE")
    remove.add_argument("--channel", default=DEFAULT_CHANNEL, help=channel_help)
    add_json_flag(remove)
    remove.set_defaults(func=handle_remove)
    listing = actions.add_parser("list", help="what each channel watches")
    listing.add_argument("--channel", default=None, help="only this channel (default: all)")
    add_json_flag(listing)
    listing.set_defaults(func=handle_list)


def handle_add(args: argparse.Namespace) -> int:
    from pagetrail import add_watch

    change = run_async(add_watch(args.target, channel=args.channel, by="cli"))
    if args.json:
        print_json(change)
    elif change.changed:
        print(f"{change.channel} now watches {change.target}: "
              f"`pagetrail digest run --channel {change.channel}` reports its link rot")
    else:
        print(f"{change.channel} already watches {change.target}")
    return 0


def handle_remove(args: argparse.Namespace) -> int:
    from pagetrail import remove_watch

    change = run_async(remove_watch(args.target, channel=args.channel))
    if args.json:
        print_json(change)
        return 0 if change.changed else 1
    if not change.changed:
        print(f"pagetrail: {change.channel} does not watch {change.target}", file=sys.stderr)
        return 1
    print(f"{change.channel} no longer watches {change.target}")
    return 0


def handle_list(args: argparse.Namespace) -> int:
    from pagetrail import list_watches

    watches = run_async(list_watches(channel=args.channel))
    if args.json:
        print_json(watches)
        return 0
    if not any(w.targets for w in watches):
        print("nothing is watched" + (f" by {args.channel}" if args.channel else ""))
    for watch in watches:
        for target in watch.targets:
            print(f"{watch.channel}\t{target}")
    return 0
