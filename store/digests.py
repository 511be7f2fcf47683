"""Digest runs (table `digest_runs`, written only here): one run of one channel's digest in
one period (ISO week), its status, whether its main message is posted, and its summary (the
digest's JSON, plus the keys `slack` — message ts, thread pages posted — and `chart`).

`posted` turns true once the main message is in the channel, so that a later run of the
same period never posts it again; a posted run whose status is "partial" has a thread that
broke off, finished by the next delivery from its stored digest."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import select

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import DigestRun

RunSummary = tuple[int, dict[str, Any]]  # (run id, summary)


@store_call
def add_run(store: Store, channel: str, period: str, *, at: datetime, status: str,
            summary: dict[str, Any] | None = None, error: str = "") -> int:
    """Record a run (status "ready" with its digest as summary, or "failed" with the error);
    its id."""
    with store.session() as s:
        run = DigestRun(channel=channel, period=period, started_at=at, status=status,
                        summary=summary or {}, error=error[:2000])
        s.add(run)
        s.flush()
        return run.id


@store_call
def update_run(store: Store, run_id: int, *, status: str | None = None,
               posted: bool | None = None, error: str | None = None,
               summary: dict[str, Any] | None = None) -> None:
    """Change a run: the fields given, and `summary`'s keys merged into its summary.
    A run that does not exist (any more) is left alone."""
    with store.session() as s:
        run = s.get(DigestRun, run_id)
        if run is None:
            return
        if summary:
            run.summary = {**(run.summary or {}), **summary}
        if status is not None:
            run.status = status
        if posted is not None:
            run.posted = posted
        if error is not None:
            run.error = error[:2000]


@store_call
def is_posted(store: Store, channel: str, period: str) -> bool:
    """Whether `channel`'s digest of `period` has its main message posted."""
    with store.session() as s:
        return s.scalar(select(DigestRun.id).where(
            DigestRun.channel == channel, DigestRun.period == period,
            DigestRun.posted.is_(True)).limit(1)) is not None


@store_call
def failed_runs(store: Store, channel: str, period: str) -> list[RunSummary]:
    """This period's failed runs of `channel`, newest first."""
    with store.session() as s:
        rows = s.scalars(select(DigestRun).where(
            DigestRun.channel == channel, DigestRun.period == period,
            DigestRun.status == "failed").order_by(DigestRun.id.desc())).all()
        return [(r.id, dict(r.summary or {})) for r in rows]


@store_call
def unfinished_runs(store: Store) -> list[RunSummary]:
    """Posted runs whose thread broke off (status "partial")."""
    with store.session() as s:
        rows = s.scalars(select(DigestRun).where(DigestRun.posted.is_(True),
                                                 DigestRun.status == "partial")).all()
        return [(r.id, dict(r.summary or {})) for r in rows]


@store_call
def run_summaries(store: Store, channel: str, statuses: Iterable[str]) -> list[dict[str, Any]]:
    """The summaries of `channel`'s runs in one of `statuses`, oldest first."""
    with store.session() as s:
        rows = s.scalars(select(DigestRun.summary).where(
            DigestRun.channel == channel, DigestRun.status.in_(list(statuses)))
            .order_by(DigestRun.id)).all()
        return [dict(summary or {}) for summary in rows]
