"""Picks (table `picks`, written only here): the replacement a person chose (or rejected)
for a dead URL. The caller gives the site (`host`) and compares URLs
(tools.recovery.memory.record_pick / picks_for)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Pick


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


@store_call
def insert_pick(store: Store, dead_url: str, chosen_url: str, *, host: str, by: str = "",
                via: str = "cli", where: str = "", note: str = "",
                rejected: bool = False) -> PickRecord:
    """Store a pick (or, with rejected=True, a 'not it'). Committed when this returns."""
    with store.session() as session:
        pick = Pick(dead_url=dead_url, chosen_url=chosen_url, host=host, by=by, via=via,
                    where=where, note=note[:2000], rejected=rejected)
        session.add(pick)
        session.flush()
        return _record(pick)


@store_call
def picks_on_host(store: Store, host: str) -> list[PickRecord]:
    """Every pick and rejection of a dead URL on site `host`, newest first."""
    with store.session() as session:
        rows = session.scalars(
            select(Pick).where(Pick.host == host).order_by(Pick.created_at.desc())).all()
        return [_record(p) for p in rows]


@store_call
def picked_since(store: Store, host: str, since: datetime) -> bool:
    """Whether a person picked or rejected anything on site `host` at or after `since`."""
    with store.session() as session:
        return session.scalars(
            select(Pick.id).where(Pick.host == host, Pick.created_at >= since).limit(1)
        ).first() is not None
