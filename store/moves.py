"""Moves: evidence that a URL now lives elsewhere (a pick, a live or archived redirect, a
confirmed recovery). Alias inference (tools/aliases.py) learns a site's rewrite pattern from
them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from pagetrail.store.db import Store
from pagetrail.store.models import Move
from pagetrail.tools.errors import InvalidURL
from pagetrail.tools.urls import same_url, site_of, validate_url

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


def record_move(store: Store, old_url: str, new_url: str, *, source: str) -> MoveRecord | None:
    """Remember that `old_url` moved to `new_url`; idempotent per (old, new, source).

    Returns None for a non-move (same URL). Raises InvalidURL for a bad URL or source.
    """
    old_url, new_url = validate_url(old_url), validate_url(new_url)
    if source not in MOVE_SOURCES:
        raise InvalidURL(f"unknown move source {source!r}; one of {', '.join(MOVE_SOURCES)}")
    if same_url(old_url, new_url):
        return None
    existing = _find(store, old_url, new_url, source)
    if existing is not None:
        return existing
    try:
        with store.session() as session:
            move = Move(old_url=old_url, new_url=new_url, host=site_of(old_url), source=source)
            session.add(move)
            session.flush()
            return _record(move)
    except IntegrityError:  # recorded concurrently by another worker: same evidence
        return _find(store, old_url, new_url, source)


def _find(store: Store, old_url: str, new_url: str, source: str) -> MoveRecord | None:
    with store.session() as session:
        move = session.scalars(select(Move).where(
            Move.old_url == old_url, Move.new_url == new_url, Move.source == source)).first()
        return _record(move) if move else None


def moves_for_site(store: Store, url_or_site: str, *, limit: int = 500) -> list[MoveRecord]:
    """Known moves whose old URL is on the same site (www. ignored), newest first."""
    site = site_of(url_or_site) if "://" in url_or_site else url_or_site.lower().removeprefix(
        "www.")
    with store.session() as session:
        rows = session.scalars(select(Move).where(Move.host == site)
                               .order_by(Move.created_at.desc(), Move.id.desc()).limit(limit))
        return [_record(m) for m in rows]
