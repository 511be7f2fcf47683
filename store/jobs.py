"""Finished jobs, keyed by what they were asked (the dispatcher's memory).

A job (tools.workers.jobs) records its outcome here once: `record_jobs` inserts on (kind, key) and
never overwrites a finished row (done or failed), so a redelivered job — a worker killed after
writing but before acknowledging — leaves exactly the row the first delivery wrote. A batch is
resumable because a job whose (kind, key) is finished here is not sent again.

Long jobs (scans, digests) are also marked before they finish — `queued` when enqueued,
`running` when a worker starts them — so that a caller polling one can tell a job waiting or
under way from an id nobody enqueued (`job_state`). Those marks are the only rows a finished
record replaces; `done_keys`/`load_jobs` see finished rows only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import JSON, DateTime, Index, String, Text, and_, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Mapped, mapped_column

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Base, utcnow

LOOKUP_CHUNK = 500  # keys per IN (...) query
FINISHED = ("done", "failed")
PENDING = ("queued", "running")  # marks of unfinished long jobs; a finished record replaces them
JobState = Literal["queued", "running", "done", "failed", "unknown"]


class JobRow(Base):
    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    key: Mapped[str] = mapped_column(String(64))
    input: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16))  # queued | running | done | failed
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[str] = mapped_column(Text, default="")
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (Index("ix_jobs_kind_key", "kind", "key", unique=True),)


@dataclass(frozen=True)
class JobRecord:
    kind: str
    key: str
    input: dict[str, Any]
    status: str
    result: dict[str, Any]
    error: str = ""


def _insert(store: Store) -> Any:
    return postgresql.insert if store.engine.dialect.name == "postgresql" else sqlite.insert


@store_call
def record_jobs(store: Store, records: Sequence[JobRecord]) -> None:
    """Store finished jobs; a (kind, key) already finished is left as it is (a queued or
    running mark is replaced)."""
    if not records:
        return
    rows = [{"kind": r.kind, "key": r.key, "input": r.input, "status": r.status,
             "result": r.result, "error": r.error, "finished_at": utcnow()} for r in records]
    statement = _insert(store)(JobRow)
    statement = statement.on_conflict_do_update(
        index_elements=["kind", "key"],
        set_={name: statement.excluded[name]
              for name in ("input", "status", "result", "error", "finished_at")},
        # or_, not IN: an expanding IN cannot go with executemany.
        where=or_(*(JobRow.status == status for status in PENDING)))
    with store.session() as s:
        s.execute(statement, rows)


@store_call
def mark_job(store: Store, kind: str, key: str, item: dict[str, Any],
             status: Literal["queued", "running"]) -> None:
    """Mark a long job queued (enqueued) or running (a worker started it). Never touches a
    finished record; `running` replaces `queued`, `queued` replaces nothing."""
    row = {"kind": kind, "key": key, "input": item, "status": status, "result": {},
           "error": "", "finished_at": utcnow()}
    statement = _insert(store)(JobRow)
    if status == "queued":
        statement = statement.on_conflict_do_nothing(index_elements=["kind", "key"])
    else:
        statement = statement.on_conflict_do_update(
            index_elements=["kind", "key"], set_={"status": status, "finished_at": utcnow()},
            where=JobRow.status == "queued")
    with store.session() as s:
        s.execute(statement, [row])


@store_call
def claim_job(store: Store, kind: str, key: str, item: dict[str, Any], *,
              stale_after: timedelta) -> bool:
    """Take a job to run it here: True when the caller now holds it — nobody had it, it was
    only queued, or its holder has said nothing for `stale_after` (died: its time limit is
    past). False when it is finished, or running elsewhere. Atomic: of callers racing for
    one job, one wins."""
    now = utcnow()
    statement = _insert(store)(JobRow).values(
        kind=kind, key=key, input=item, status="running", result={}, error="",
        finished_at=now)
    statement = statement.on_conflict_do_update(
        index_elements=["kind", "key"], set_={"status": "running", "finished_at": now},
        where=or_(JobRow.status == "queued",
                  and_(JobRow.status == "running", JobRow.finished_at < now - stale_after)),
    ).returning(JobRow.id)
    with store.session() as s:
        return s.execute(statement).first() is not None


@store_call
def job_state(store: Store, kind: str, key: str) -> tuple[JobState, JobRecord | None]:
    """Where one job stands: queued, running, done or failed (with its record), or unknown
    (nothing enqueued it here)."""
    with store.session() as s:
        row = s.scalars(select(JobRow).where(JobRow.kind == kind, JobRow.key == key)).first()
        if row is None:
            return "unknown", None
        record = JobRecord(row.kind, row.key, row.input, row.status, row.result, row.error)
    status = record.status if record.status in (*FINISHED, *PENDING) else "unknown"
    return status, record  # type: ignore[return-value]


@store_call
def done_keys(store: Store, kind: str, keys: Iterable[str]) -> set[str]:
    """Which of `keys` have a finished job of `kind`."""
    wanted = list(dict.fromkeys(keys))
    found: set[str] = set()
    with store.session() as s:
        for i in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[i:i + LOOKUP_CHUNK]
            found.update(s.scalars(select(JobRow.key).where(
                JobRow.kind == kind, JobRow.key.in_(chunk), JobRow.status.in_(FINISHED))))
    return found


@store_call
def load_jobs(store: Store, kind: str, keys: Iterable[str]) -> dict[str, JobRecord]:
    """The finished records of `keys` (queued and running marks are not records yet)."""
    wanted = list(dict.fromkeys(keys))
    found: dict[str, JobRecord] = {}
    with store.session() as s:
        for i in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[i:i + LOOKUP_CHUNK]
            for row in s.scalars(select(JobRow).where(
                    JobRow.kind == kind, JobRow.key.in_(chunk), JobRow.status.in_(FINISHED))):
                found[row.key] = JobRecord(row.kind, row.key, row.input, row.status,
                                           row.result, row.error)
    return found


@store_call
def count_jobs(store: Store, kind: str | None = None) -> int:
    with store.session() as s:
        query = select(func.count()).select_from(JobRow).where(JobRow.status.in_(FINISHED))
        if kind is not None:
            query = query.where(JobRow.kind == kind)
        return int(s.scalar(query) or 0)


@store_call
def digest_run_summaries(store: Store, run_ids: Sequence[int]) -> list[tuple[int, dict[str, Any]]]:
    """(id, summary) of DigestRun rows, in the order asked: the digests that digest jobs built
    (their records hold the run ids)."""
    from pagetrail.store.models import DigestRun

    with store.session() as s:
        rows = {row.id: row.summary for row in s.scalars(
            select(DigestRun).where(DigestRun.id.in_(list(run_ids))))}
    return [(run_id, rows[run_id]) for run_id in run_ids if run_id in rows]
