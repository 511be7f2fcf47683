"""Finished jobs, keyed by what they were asked (the dispatcher's memory).

A job (tools.jobs) records its outcome here once: `record_jobs` inserts with ON CONFLICT DO
NOTHING on (kind, key), so a redelivered job — a worker killed after writing but before
acknowledging — leaves exactly the row the first delivery wrote. A batch is resumable
because a job whose (kind, key) is here is done and is not sent again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Index, String, Text, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Mapped, mapped_column

from pagetrail.store.db import Store
from pagetrail.store.models import Base, utcnow

LOOKUP_CHUNK = 500  # keys per IN (...) query


class JobRow(Base):
    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    key: Mapped[str] = mapped_column(String(64))
    input: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16))  # done | failed
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


def record_jobs(store: Store, records: Sequence[JobRecord]) -> None:
    """Store finished jobs; a (kind, key) already stored is left as it is."""
    if not records:
        return
    rows = [{"kind": r.kind, "key": r.key, "input": r.input, "status": r.status,
             "result": r.result, "error": r.error, "finished_at": utcnow()} for r in records]
    dialect = store.engine.dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(JobRow).on_conflict_do_nothing(index_elements=["kind", "key"])
    with store.session() as s:
        s.execute(statement, rows)


def done_keys(store: Store, kind: str, keys: Iterable[str]) -> set[str]:
    """Which of `keys` have a finished job of `kind`."""
    wanted = list(dict.fromkeys(keys))
    found: set[str] = set()
    with store.session() as s:
        for i in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[i:i + LOOKUP_CHUNK]
            found.update(s.scalars(select(JobRow.key).where(JobRow.kind == kind,
                                                            JobRow.key.in_(chunk))))
    return found


def load_jobs(store: Store, kind: str, keys: Iterable[str]) -> dict[str, JobRecord]:
    wanted = list(dict.fromkeys(keys))
    found: dict[str, JobRecord] = {}
    with store.session() as s:
        for i in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[i:i + LOOKUP_CHUNK]
            for row in s.scalars(select(JobRow).where(JobRow.kind == kind,
                                                      JobRow.key.in_(chunk))):
                found[row.key] = JobRecord(row.kind, row.key, row.input, row.status,
                                           row.result, row.error)
    return found


def count_jobs(store: Store, kind: str | None = None) -> int:
    with store.session() as s:
        query = select(func.count()).select_from(JobRow)
        if kind is not None:
            query = query.where(JobRow.kind == kind)
        return int(s.scalar(query) or 0)


def digest_run_summaries(store: Store, run_ids: Sequence[int]) -> list[tuple[int, dict[str, Any]]]:
    """(id, summary) of DigestRun rows, in the order asked: the digests that digest jobs built
    (their records hold the run ids)."""
    from pagetrail.store.models import DigestRun

    with store.session() as s:
        rows = {row.id: row.summary for row in s.scalars(
            select(DigestRun).where(DigestRun.id.in_(list(run_ids))))}
    return [(run_id, rows[run_id]) for run_id in run_ids if run_id in rows]
