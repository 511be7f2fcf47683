"""`pagetrail digest run [--channel C] [--report-dir DIR]`: scan every watched target, print
the digests (with --report-dir, also each channel's chart PNG, a Markdown report that shows
it and a self-contained HTML report); `pagetrail digest chart --channel C --out FILE.png`: the channel's link-health
trend over its recorded digests, as a picture.

Each channel's digest is recorded (DigestRun, status "ready"); posting it to Slack is the
bot's job.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pagetrail import ChannelDigest, InvalidArgument, Settings, open_store
from pagetrail.cli.common import add_json_flag, print_json, run_async
from pagetrail.lab import Trend, digest_html, digest_json, digest_markdown


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("digest", help="link-rot digests of the watched sites")
    actions = parser.add_subparsers(dest="digest_action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="scan the watched targets and print the digests")
    run.add_argument("--channel", help="only this channel's watches")
    run.add_argument("--no-recover", action="store_true",
                     help="skip recovery of newly confirmed dead links")
    run.add_argument("--post", action="store_true",
                     help="post the digests to their Slack channels (needs SLACK_BOT_TOKEN, or "
                          "SLACK_CLIENT_ID and SLACK_CLIENT_SECRET for installed workspaces)")
    run.add_argument("--report-dir", metavar="DIR",
                     help="write each channel's trend chart (PNG) and its report as Markdown "
                          "and HTML (chart embedded) here")
    add_json_flag(run)
    run.set_defaults(func=handle_run)
    chart = actions.add_parser("chart", help="draw a channel's link-health trend (PNG)")
    chart.add_argument("--channel", required=True, help="the channel whose digests to draw")
    chart.add_argument("--out", required=True, metavar="FILE.png", help="where to write it")
    chart.add_argument("--weeks", type=int, default=8, help="weeks shown (default 8)")
    add_json_flag(chart)
    chart.set_defaults(func=handle_chart)


def write_chart(channel: str, path: Path, settings: Settings, weeks: int = 8) -> Trend:
    """Render the channel's stored trend to `path`; the trend drawn is returned."""
    from pagetrail import stored_trend
    from pagetrail.lab import render_trend_chart

    trend = stored_trend(open_store(settings.database_url), channel, weeks)
    if not trend.periods:
        raise InvalidArgument(f"no recorded digest for channel {channel!r} yet "
                              "(run `pagetrail digest run` first)")
    path.write_bytes(render_trend_chart(trend))
    return trend


def handle_chart(args: argparse.Namespace) -> int:
    path = Path(args.out)
    if path.suffix.lower() != ".png":
        raise InvalidArgument(f"--out must name a .png file, not {args.out!r}")
    trend = write_chart(args.channel, path, Settings(), max(1, args.weeks))
    if args.json:
        print_json({**trend.to_dict(), "file": str(path)})
    else:
        latest = ", ".join(f"{v} {k}" for k, v in trend.latest().items())
        print(f"{path}: {len(trend.periods)} weeks, latest {latest}")
    return 0


async def _run(args: argparse.Namespace, settings: Settings) -> list[ChannelDigest]:
    from pagetrail import configured_digest_runner

    store = open_store(settings.database_url)
    runner = configured_digest_runner(settings, store)  # on the workers with a broker
    return await runner(store, settings, channel=args.channel, recover=not args.no_recover)


def handle_run(args: argparse.Namespace) -> int:
    settings = Settings()
    if args.post:
        from pagetrail import configured_digest_runner
        from pagetrail.bot.digest_post import run_and_post

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
    charts: dict[str, Path] = {}
    if args.report_dir:
        folder = Path(args.report_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for digest in digests:
            stem = f"{_file_safe(digest.channel)}-{digest.period}"
            chart = folder / f"link-health-{stem}.png"
            write_chart(digest.channel, chart, settings)
            charts[digest.channel] = chart
            (folder / f"digest-{stem}.md").write_text(digest_markdown(digest, chart=chart.name))
            (folder / f"digest-{stem}.html").write_text(
                digest_html(digest, chart_png=chart.read_bytes()))
    if args.json:
        print_json([{**digest_json(d), "chart": str(charts[d.channel])} if d.channel in charts
                    else digest_json(d) for d in digests])
    else:
        for digest in digests:
            sys.stdout.write(digest_markdown(digest, chart=charts.get(digest.channel)) + "\n")
    return 0


def _file_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60] or "channel"
