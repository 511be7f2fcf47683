"""`pagetrail worker`: a Celery worker running pagetrail's jobs (tools.workers.celery_app).

The same as `celery -A pagetrail.tools.workers.celery_app worker`, with pagetrail's checks first
(a Redis broker, PostgreSQL, the broker reachable: one clear line otherwise) and its
queue names as the default.
"""

from __future__ import annotations

import argparse

QUEUE_NAMES = ("checks", "recoveries", "scans", "pages", "digests")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("worker", help="run a Celery worker for pagetrail's jobs "
                                           "(needs PAGETRAIL_BROKER_URL and PostgreSQL)")
    parser.add_argument("--concurrency", type=int, default=2,
                        help="worker processes (default 2)")
    parser.add_argument("--queues", default=",".join(QUEUE_NAMES),
                        help=f"queues to take jobs from (default {','.join(QUEUE_NAMES)})")
    parser.add_argument("--loglevel", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument("--pool", default="prefork", choices=("prefork", "solo", "threads"),
                        help="Celery pool (default prefork)")
    parser.add_argument("--hostname", default=None, help="worker name (default celery@HOST)")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from pagetrail import get_settings, run_worker
    from pagetrail.cli.common import UsageError
    from pagetrail.lab import prepare_distributed

    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    unknown = sorted(set(queues) - set(QUEUE_NAMES))
    if unknown or not queues:
        raise UsageError(f"--queues: unknown queue(s) {', '.join(unknown) or '(none)'}; "
                         f"known: {', '.join(QUEUE_NAMES)}")
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    prepare_distributed(get_settings())  # the clear one-line errors, before Celery starts
    argv = ["worker", f"--concurrency={args.concurrency}", f"--queues={','.join(queues)}",
            f"--loglevel={args.loglevel}", f"--pool={args.pool}", "--without-gossip",
            "--without-mingle"]
    if args.hostname:
        argv.append(f"--hostname={args.hostname}")
    run_worker(argv)
    return 0
