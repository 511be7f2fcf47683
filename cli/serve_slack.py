"""`pagetrail serve slack [--host H] [--port P] [--socket] [--no-digests]`.

Call `register_slack(faces)` from cli/serve_cmd.py's `register` (next to register_mcp).
"""

from __future__ import annotations

import argparse
import sys

from pagetrail import get_settings
from pagetrail.cli.common import UsageError, run_async

DEFAULT_PORT = 3000


def register_slack(faces: argparse._SubParsersAction) -> None:
    slack = faces.add_parser(
        "slack", help="the Slack app (/fixlink, /linkrot, weekly digests)",
        description="Serve the Slack app over HTTP (Slack's requests at /slack/events) or "
                    "Socket Mode. One workspace: SLACK_BOT_TOKEN, and SLACK_SIGNING_SECRET "
                    "(HTTP) or SLACK_APP_TOKEN (Socket Mode). Every workspace that installs "
                    "it (HTTP only): SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and "
                    "SLACK_SIGNING_SECRET; people install at /slack/install.")
    slack.add_argument("--host", default="127.0.0.1",
                       help="HTTP bind address (127.0.0.1; put a reverse proxy in front)")
    slack.add_argument("--port", type=int, default=DEFAULT_PORT,
                       help=f"HTTP port ({DEFAULT_PORT})")
    slack.add_argument("--socket", action="store_true",
                       help="Socket Mode instead of HTTP (no public URL needed)")
    slack.add_argument("--no-digests", dest="digests", action="store_false",
                       help="do not schedule the weekly digests (use cron + "
                            "`pagetrail digest run` instead)")
    slack.set_defaults(func=handle_slack)


def handle_slack(args: argparse.Namespace) -> int:
    from pagetrail import open_store
    from pagetrail.bot.server import serve_http, serve_socket

    if not 0 < args.port <= 65535:
        raise UsageError("--port must be between 1 and 65535")
    settings = get_settings()
    store = open_store(settings.database_url, interactive=True)
    if args.socket:
        print("pagetrail Slack app in Socket Mode", file=sys.stderr, flush=True)
        run_async(serve_socket(settings, store, scheduler=args.digests))
    else:
        print(f"pagetrail Slack app on http://{args.host}:{args.port}/slack/events",
              file=sys.stderr, flush=True)
        if settings.slack_client_id and settings.slack_client_secret:
            print(f"install page: http://{args.host}:{args.port}/slack/install (behind your "
                  "public address)", file=sys.stderr, flush=True)
        run_async(serve_http(settings, store, host=args.host, port=args.port,
                             scheduler=args.digests))
    return 0
