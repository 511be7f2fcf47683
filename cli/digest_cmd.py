"""`pagetrail digest run [--channel C]`: scan every watched target, print the digests.

Each channel's digest is recorded (DigestRun, status "ready"); posting it to Slack is the
bot's job.
"""

from __future__ import annotations

import argparse
import sys

from pagetrail.cli.common import add_json_flag, print_json, run_async
from pagetrail.store import open_store
from pagetrail.tools.digest import ChannelDigest, to_json, to_markdown
from pagetrail.tools.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("digest", help="link-rot digests of the watched sites")
    actions = parser.add_subparsers(dest="digest_action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="scan the watched targets and print the digests")
    run.add_argument("--channel", help="only this channel's watches")
    run.add_argument("--no-recover", action="store_true",
                     help="skip recovery of newly confirmed dead links")
    run.add_argument("--post", action="store_true",
                     help="post the digests to their Slack channels (needs SLACK_BOT_TOKEN)")
    add_json_flag(run)
    run.set_defaults(func=handle_run)


async def _run(args: argparse.Namespace, settings: Settings) -> list[ChannelDigest]:
    from pagetrail.tools.dispatch import configured_digest_runner

    store = open_store(settings.database_url)
    runner = configured_digest_runner(settings, store)  # on the workers with a broker
    return await runner(store, settings, channel=args.channel, recover=not args.no_recover)


def handle_run(args: argparse.Namespace) -> int:
    settings = Settings()
    if args.post:
        from pagetrail.bot.digest_post import run_and_post
        from pagetrail.tools.dispatch import configured_digest_runner

        store = open_store(settings.database_url)
        outcomes = run_async(run_and_post(settings, store, channel=args.channel,
                                          recover=not args.no_recover,
                                          runner=configured_digest_runner(settings, store)))
        if args.json:
            print_json([o.__dict__ for o in outcomes])
        for outcome in outcomes if not args.json else []:
            print(f"{outcome.channel} {outcome.period}: {outcome.status} {outcome.error}".rstrip())
        return 1 if any(o.status == "failed" for o in outcomes) else 0
    digests = run_async(_run(args, settings))
    if args.json:
        print_json([to_json(d) for d in digests])
    else:
        for digest in digests:
            sys.stdout.write(to_markdown(digest) + "\n")
    return 0
