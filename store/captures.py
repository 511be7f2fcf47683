"""Save Page Now captures pagetrail asked for: one row per request, updated as the job ends.

The table is also what IA's per-account limits are kept with across every process and worker
sharing the store: the daily-cap counter (captures sent since UTC midnight), the captures in
flight (`claim_slot`: a row goes from `queued` to `pending` only while fewer than the limit
are pending), and the "asked recently" memory that keeps a scan from asking twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import DateTime, Index, String, Text, func, select, text, update
from sqlalchemy.orm import Mapped, aliased, mapped_column

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Base, utcnow
from pagetrail.store.scans import aware, url_key


class Capture(Base):
    __tablename__ = "captures"
    id: Mapped[int] = mapped_column(primary_key=True)
    url_key: Mapped[str] = mapped_column(String(64))
    url: Mapped[str] = mapped_column(Text)
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # queued → pending (sent) → success | error; refused (limits) and skipped (recent capture)
    # are written as such. requested_at: when it was queued, then when it was sent.
    status: Mapped[str] = mapped_column(String(16), default="pending")
    job_id: Mapped[str] = mapped_column(String(128), default="")
    memento_url: Mapped[str] = mapped_column(Text, default="")
    captured_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    message: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(String(16), default="cli")  # scan|cli|mcp|slack
    __table_args__ = (Index("ix_captures_url_key", "url_key"),
                      Index("ix_captures_requested_at", "requested_at"))


@dataclass(frozen=True)
class CaptureRow:
    id: int
    url: str
    requested_at: datetime
    status: str
    job_id: str
    memento_url: str
    captured_at: datetime | None
    message: str
    source: str


def _row(capture: Capture) -> CaptureRow:
    requested = aware(capture.requested_at)
    assert requested is not None
    return CaptureRow(capture.id, capture.url, requested, capture.status, capture.job_id,
                      capture.memento_url, aware(capture.captured_at), capture.message,
                      capture.source)


@store_call
def start_capture(store: Store, url: str, *, source: str, at: datetime,
                  status: str = "pending", message: str = "") -> int:
    with store.session() as s:
        capture = Capture(url_key=url_key(url), url=url, requested_at=at, status=status,
                          message=message, source=source)
        s.add(capture)
        s.flush()
        return capture.id


@store_call
def finish_capture(store: Store, capture_id: int, *, status: str, job_id: str = "",
                   memento_url: str = "", captured_at: datetime | None = None,
                   message: str = "") -> None:
    with store.session() as s:
        capture = s.get(Capture, capture_id)
        if capture is None:
            return
        capture.status = status
        capture.job_id = job_id or capture.job_id
        capture.memento_url = memento_url
        capture.captured_at = captured_at
        capture.message = message


IN_FLIGHT = ("queued", "pending")


CLAIM_LOCK = 0x7057_5350  # PostgreSQL advisory lock key of the claim ("pt SP")


@store_call
def claim_slot(store: Store, capture_id: int, *, limit: int, since: datetime,
               at: datetime) -> bool:
    """Move a queued capture to `pending` (sent at `at`) if fewer than `limit` captures sent
    since `since` are still pending, store-wide; False: wait and try again.

    Atomic across processes: one UPDATE whose condition counts the others (SQLite runs
    writes one at a time), under a transaction-scoped advisory lock on PostgreSQL (where
    two concurrent UPDATEs would each count without the other)."""
    other = aliased(Capture)
    busy = (select(func.count()).select_from(other)
            .where(other.status == "pending", other.requested_at >= since,
                   other.id != capture_id).scalar_subquery())
    with store.session() as s:
        if s.get_bind().dialect.name == "postgresql":
            s.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": CLAIM_LOCK})
        result = s.execute(update(Capture)
                           .where(Capture.id == capture_id, Capture.status == "queued",
                                  busy < limit)
                           .values(status="pending", requested_at=at))
        return bool(result.rowcount)


@store_call
def requested_since(store: Store, since: datetime) -> int:
    """Capture requests sent to the archive since `since` (the daily cap's count): rows that
    reached the archive, not the ones skipped or refused before asking."""
    with store.session() as s:
        return int(s.execute(select(func.count()).select_from(Capture)
                             .where(Capture.requested_at >= since,
                                    Capture.status.in_(("pending", "success", "error")))
                             ).scalar_one())


# A URL with one of these since the recent window began needs no capture request.
COVERED = (*IN_FLIGHT, "success", "skipped")


@store_call
def recent_capture(store: Store, url: str, since: datetime) -> CaptureRow | None:
    """The newest capture of `url` since `since` that succeeded, is under way, or was found
    in the archive already (skipped)."""
    with store.session() as s:
        row = s.execute(select(Capture).where(Capture.url_key == url_key(url),
                                              Capture.requested_at >= since,
                                              Capture.status.in_(COVERED))
                        .order_by(Capture.requested_at.desc()).limit(1)).scalar_one_or_none()
        return _row(row) if row is not None else None


@store_call
def covered(store: Store, urls: Iterable[str], since: datetime) -> set[str]:
    """Those of `urls` with a capture since `since` (success, under way, or found archived)."""
    keys = {url_key(url): url for url in urls}
    found: set[str] = set()
    wanted = list(keys)
    with store.session() as s:
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            rows = s.execute(select(Capture.url_key).where(
                Capture.url_key.in_(chunk), Capture.requested_at >= since,
                Capture.status.in_(COVERED))).scalars().all()
            found.update(keys[key] for key in rows)
    return found


@store_call
def captures_of(store: Store, url: str) -> list[CaptureRow]:
    with store.session() as s:
        rows = s.execute(select(Capture).where(Capture.url_key == url_key(url))
                         .order_by(Capture.requested_at)).scalars().all()
        return [_row(r) for r in rows]
