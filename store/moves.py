"""Moves (table `moves`, written only here): evidence that a URL now lives elsewhere (a pick,
a live or archived redirect, a confirmed recovery). Alias inference (tools/recovery/aliases.py) learns
a site's rewrite pattern from them. The caller validates the URLs and gives the host
(tools.recovery.memory.record_move)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Move

MOVE_SOURCES = ("pick", "live redirect", "archived redirect", "confirmed recovery")


@dataclass(frozen=True)
class MoveRecord:
    old_url: str
    new_url: str
    host: str
    source: str
    created_at: datetime


def _record(m: Move) -> MoveRecord:
    return MoveRecord(m.old_url, m.new_url, m.host, m.source, m.created_at)


@store_call
def insert_move(store: Store, old_url: str, new_url: str, *, host: str,
                source: str) -> MoveRecord:
    """Store that `old_url` (on site `host`) moved to `new_url`; idempotent per
    (old, new, source). ValueError for a source not in MOVE_SOURCES."""
    if source not in MOVE_SOURCES:
        raise ValueError(f"unknown move source {source!r}; one of {', '.join(MOVE_SOURCES)}")
    existing = _find(store, old_url, new_url, source)
    if existing is not None:
        return existing
    try:
        with store.session() as session:
            move = Move(old_url=old_url, new_url=new_url, host=host, source=source)
            session.add(move)
            session.flush()
            return _record(move)
    except IntegrityError:  # recorded concurrently by another worker: same evidence
        found = _find(store, old_url, new_url, source)
        if found is None:
            raise
        return found


def _find(store: Store, old_url: str, new_url: str, source: str) -> MoveRecord | None:
    with store.session() as session:
        move = session.scalars(select(Move).where(
            Move.old_url == old_url, Move.new_url == new_url, Move.source == source)).first()
        return _record(move) if move else None


@store_call
def moves_on_host(store: Store, host: str, *, limit: int = 500) -> list[MoveRecord]:
    """Known moves whose old URL is on site `host`, newest first."""
    with store.session() as session:
        rows = session.scalars(select(Move).where(Move.host == host)
                               .order_by(Move.created_at.desc(), Move.id.desc()).limit(limit))
        return [_record(m) for m in rows]
