"""Picks: the replacement a person chose (or rejected) for a dead URL."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from pagetrail.store.db import Store
from pagetrail.store.models import Pick
from pagetrail.tools.urls import normalize_url, site_of


@dataclass(frozen=True)
class PickRecord:
    dead_url: str
    chosen_url: str
    by: str
    via: str
    where: str
    note: str
    rejected: bool
    created_at: datetime


def _record(p: Pick) -> PickRecord:
    return PickRecord(p.dead_url, p.chosen_url, p.by, p.via, p.where, p.note, p.rejected,
                      p.created_at)


def record_pick(
    store: Store,
    dead_url: str,
    chosen_url: str,
    *,
    by: str = "",
    via: str = "cli",
    where: str = "",
    note: str = "",
    rejected: bool = False,
) -> PickRecord:
    """Store a pick (or, with rejected=True, a 'not it'). Committed when this returns."""
    with store.session() as session:
        pick = Pick(
            dead_url=dead_url, chosen_url=chosen_url, host=site_of(dead_url), by=by, via=via,
            where=where, note=note[:2000], rejected=rejected,
        )
        session.add(pick)
        session.flush()
        record = _record(pick)
    if not rejected:
        try:
            from pagetrail.store.moves import record_move
        except ImportError:  # pragma: no cover - moves evidence arrives with alias inference
            return record
        record_move(store, dead_url, chosen_url, source="pick")
    return record


def picks_for(store: Store, dead_url: str) -> list[PickRecord]:
    """Every pick and rejection for this URL (normalised match), newest first."""
    key = normalize_url(dead_url)
    with store.session() as session:
        rows = session.scalars(
            select(Pick).where(Pick.host == site_of(dead_url)).order_by(Pick.created_at.desc())
        ).all()
        return [_record(p) for p in rows if normalize_url(p.dead_url) == key]


def picks_for_site(store: Store, dead_url: str, limit: int = 200) -> list[PickRecord]:
    with store.session() as session:
        rows = session.scalars(
            select(Pick).where(Pick.host == site_of(dead_url), Pick.rejected.is_(False))
            .order_by(Pick.created_at.desc()).limit(limit)
        ).all()
        return [_record(p) for p in rows]
