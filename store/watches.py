"""A channel's watches (table `watches`, written only here): add, remove, list. Digests
(tools.scan.digest) scan what is watched. Targets are compared by the caller's `key` (the
engine's URL normalisation: tools.recovery.memory), inside the same transaction as the write."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import delete, select

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Watch

Key = Callable[[str], str]


@store_call
def add_watch(store: Store, channel: str, target: str, *, key: Key, by: str = "") -> bool:
    """Watch `target` in `channel`; False when the channel already watches it (same key)."""
    with store.session() as session:
        existing = session.scalars(select(Watch.target).where(Watch.channel == channel)).all()
        if any(key(other) == key(target) for other in existing):
            return False
        session.add(Watch(channel=channel, target=target, created_by=by))
    return True


@store_call
def remove_watch(store: Store, channel: str, target: str, *, key: Key) -> bool:
    """Stop watching `target` (every stored target with its key) in `channel`."""
    with store.session() as session:
        rows = session.scalars(select(Watch).where(Watch.channel == channel)).all()
        ids = [w.id for w in rows if key(w.target) == key(target)]
        if not ids:
            return False
        session.execute(delete(Watch).where(Watch.id.in_(ids)))
    return True


@store_call
def list_watches(store: Store, channel: str) -> list[str]:
    with store.session() as session:
        rows = session.scalars(select(Watch).where(Watch.channel == channel)
                               .order_by(Watch.created_at, Watch.id)).all()
        return [w.target for w in rows]


@store_call
def watched_channels(store: Store) -> list[str]:
    with store.session() as session:
        return sorted(set(session.scalars(select(Watch.channel)).all()))


@store_call
def all_watches(store: Store) -> list[tuple[str, str]]:
    """Every (channel, target), in the order they were added."""
    with store.session() as session:
        return [(c, t) for c, t in session.execute(
            select(Watch.channel, Watch.target).order_by(Watch.id)).all()]
