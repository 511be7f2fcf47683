"""The broker's side of the jobs, for the worker and the client alike: one queue and one
task name per job kind, the Celery configuration, and sending jobs without waiting. Below
the Celery app (`celery_app`), the dispatchers and the jobs, which all use it: none of them
has to import another to send work."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pagetrail.tools.settings import Settings
from pagetrail.tools.workers.keys import JobKind

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger(__name__)

QUEUES: dict[JobKind, str] = {"check": "checks", "recover": "recoveries", "scan": "scans",
                              "page": "pages", "digest": "digests"}
TASK_NAMES: dict[JobKind, str] = {kind: f"pagetrail.{kind}" for kind in QUEUES}
HARD_LIMIT_MARGIN = 30  # seconds between the soft and the hard time limit


def time_limit(settings: Settings, kind: JobKind) -> int:
    # A page job checks up to PAGETRAIL_SCAN_MAX_LINKS_PER_PAGE links, many of them on one
    # politely paced host: a scan's limit, not a chunk of checks' (in-process, no page has
    # a limit of its own).
    return {"check": settings.check_time_limit, "recover": settings.recover_time_limit,
            "scan": settings.scan_time_limit, "page": settings.scan_time_limit,
            "digest": settings.scan_time_limit}[kind]


def configure(app: Celery, settings: Settings) -> None:
    longest = max(time_limit(settings, kind) for kind in QUEUES) + HARD_LIMIT_MARGIN
    visibility = max(settings.broker_visibility_timeout, 1)
    if visibility <= longest:
        log.warning("broker visibility timeout %ss is not longer than the longest job (%ss): "
                    "a slow job may be handed to a second worker", visibility, longest)
    app.conf.update(
        broker_url=settings.broker_url,
        broker_transport_options={
            "visibility_timeout": visibility,
            # How often a worker looks for jobs a lost worker left unacknowledged (kombu's
            # default sweep is every 10 × 10 s): a quarter of the timeout, a minute at most.
            "unacked_restore_interval": max(1, min(60, visibility // 4)),
            "unacked_restore_throttle": 1,
        },
        broker_connection_retry_on_startup=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        result_backend=None,
        task_serializer="json",
        accept_content=["json"],
        task_routes={TASK_NAMES[kind]: {"queue": queue} for kind, queue in QUEUES.items()},
        task_default_queue="recoveries",
        worker_hijack_root_logger=False,
        # A running job keeps going when the broker connection drops: its result goes to the
        # store, and its redelivery (it could not be acknowledged) finds it done.
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )


def send_task(client: Any, kind: JobKind, items: list[dict[str, Any]]) -> None:
    client.send_task(TASK_NAMES[kind], args=[items], queue=QUEUES[kind])


_senders: dict[str, Any] = {}  # broker URL → Celery client, one per process


def send_jobs(settings: Settings, kind: JobKind, items: Sequence[dict[str, Any]]) -> None:
    """Send one job per item to the workers, without waiting: how a job fans out work (a
    scan's page jobs, a page job's new pages)."""
    client = _senders.get(settings.broker_url)
    if client is None:
        from celery import Celery

        client = Celery("pagetrail-sender")
        configure(client, settings)
        _senders[settings.broker_url] = client
    for item in items:
        send_task(client, kind, [dict(item)])
