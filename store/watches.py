"""A channel's watches (store.models.Watch): add, remove, list. Digests (tools.digest)
scan what is watched; the faces (Slack, the CLI) manage watches through tools.api."""

from __future__ import annotations

from sqlalchemy import delete, select

from pagetrail.store.db import Store
from pagetrail.store.models import Watch
from pagetrail.tools.urls import normalize_url


def add_watch(store: Store, channel: str, target: str, *, by: str = "") -> bool:
    """Watch `target` in `channel`; False when the channel already watches it."""
    with store.session() as session:
        existing = session.scalars(select(Watch).where(Watch.channel == channel)).all()
        if any(normalize_url(w.target) == normalize_url(target) for w in existing):
            return False
        session.add(Watch(channel=channel, target=target, created_by=by))
    return True


def remove_watch(store: Store, channel: str, target: str) -> bool:
    with store.session() as session:
        rows = session.scalars(select(Watch).where(Watch.channel == channel)).all()
        ids = [w.id for w in rows if normalize_url(w.target) == normalize_url(target)]
        if not ids:
            return False
        session.execute(delete(Watch).where(Watch.id.in_(ids)))
    return True


def list_watches(store: Store, channel: str) -> list[str]:
    with store.session() as session:
        rows = session.scalars(select(Watch).where(Watch.channel == channel)
                               .order_by(Watch.created_at, Watch.id)).all()
        return [w.target for w in rows]


def watched_channels(store: Store) -> list[str]:
    with store.session() as session:
        return sorted(set(session.scalars(select(Watch.channel)).all()))
