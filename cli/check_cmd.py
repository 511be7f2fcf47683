"""`pagetrail check URL [--json]`: is this link dead? One line, or the CheckResult as JSON."""

from __future__ import annotations

import argparse

from pagetrail import PagetrailError, Settings, check_link
from pagetrail.cli.common import add_json_flag, date_option, fail, print_json, run_async
from pagetrail.lab import check_summary

NETWORK_DOWN_EXIT = 3  # nothing at all could be reached from here: no verdict (docs/realweb.md)


def network_down_exit(exc: PagetrailError) -> int:
    """Exit status 3 for `network_down` (check, recover); other errors go on to main()."""
    if exc.code != "network_down":
        raise exc
    return fail(f"{exc.code}: {exc}", NETWORK_DOWN_EXIT)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("check", help="check whether a link is dead (verdict + evidence)")
    parser.add_argument("url", help="the http(s) URL to check")
    parser.add_argument("--no-sibling", action="store_true",
                        help="skip the soft-404 probe of a random sibling URL")
    parser.add_argument("--drift", action="store_true",
                        help="if the link works, compare it with its archived copy (drifted?)")
    parser.add_argument("--since", type=date_option("--since"), default=None, metavar="DATE",
                        help="with --drift: the link's date (the copy closest to it is used)")
    add_json_flag(parser)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    settings = Settings()
    # InvalidURL/RefusedAddress (the API's address guard) → one line, exit 2
    try:
        result = run_async(check_link(args.url, settings=settings, drift=args.drift,
                                      since=args.since, probe_sibling=not args.no_sibling))
    except PagetrailError as exc:
        return network_down_exit(exc)
    if args.json:
        print_json(result)
    else:
        print(check_summary(result))
        if result.drift is not None:
            drift = result.drift
            state = "DRIFTED: serves other content now" if drift.drifted else "same content"
            print(f"drift: {state} (similarity {drift.similarity:.2f} to the copy of "
                  f"{drift.memento.datetime:%Y-%m-%d}: {drift.memento.memento_url})")
    return 0
