"""Recoveries (table `recoveries`, written only here): one remembered answer per request.

The natural key is `request_key` (a hash of the URL and the request's parameters, made by
the engine: tools.recovery.pipeline.request_key), unique since migration 0006: remembering the same
request again (a redelivered job, a re-run after the cache expired) replaces the answer,
never adds a row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import RecoveryRow, utcnow
from pagetrail.store.scans import aware


@dataclass(frozen=True)
class RecoveryRecord:
    url: str
    request_key: str
    request: dict[str, Any]
    answer: dict[str, Any]  # JSON of tools.models.Recovery
    created_at: datetime  # timezone-aware (UTC)
    seconds: float


@store_call
def remember_recovery(store: Store, url: str, request_key: str, *, request: dict[str, Any],
                      answer: dict[str, Any], seconds: float) -> None:
    """Store the answer to the request `request_key`: an upsert on the key, so that the same
    recovery remembered twice (on any worker, concurrently or not) leaves one row."""
    with store.session() as session:
        dialect = session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        values = {"url": url, "request_key": request_key, "request": request,
                  "answer": answer, "seconds": seconds, "created_at": utcnow()}
        statement = insert(RecoveryRow).values(**values)
        session.execute(statement.on_conflict_do_update(
            index_elements=["request_key"],
            set_={name: statement.excluded[name]
                  for name in ("url", "request", "answer", "seconds", "created_at")}))


@store_call
def latest_recovery(store: Store, request_key: str) -> RecoveryRecord | None:
    """The remembered answer to the request `request_key`, or None."""
    with store.session() as session:
        row = session.scalars(select(RecoveryRow).where(RecoveryRow.request_key == request_key)
                              .order_by(RecoveryRow.created_at.desc()).limit(1)).first()
        if row is None:
            return None
        return RecoveryRecord(row.url, row.request_key, row.request, row.answer,
                              aware(row.created_at), row.seconds)


@store_call
def recent_recoveries(store: Store, *, limit: int, url: str | None = None,
                      ) -> list[RecoveryRecord]:
    """The newest remembered answers (only `url`'s when given), newest first."""
    query = select(RecoveryRow).order_by(RecoveryRow.created_at.desc(), RecoveryRow.id.desc())
    if url is not None:
        query = query.where(RecoveryRow.url == url)
    with store.session() as session:
        return [RecoveryRecord(row.url, row.request_key, row.request, row.answer,
                               aware(row.created_at), row.seconds)
                for row in session.scalars(query.limit(limit))]
