"""The search cache (table `searches`, written only here): one engine's answer to one query
within one scope, with its expiry. The caller makes the query key (tools.engines.service
.cache_query) and turns the stored hits back into its models."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import SearchCache
from pagetrail.store.scans import aware


@store_call
def cached_hits(store: Store, engine: str, query: str, scope: str,
                now: datetime) -> list[dict[str, Any]] | None:
    """The newest cached hits (JSON) of `engine` for (query, scope), or None when there are
    none or they expired at or before `now`."""
    with store.session() as session:
        row = session.scalars(
            select(SearchCache)
            .where(SearchCache.engine == engine, SearchCache.query == query,
                   SearchCache.site == scope)
            .order_by(SearchCache.fetched_at.desc())
            .limit(1)
        ).first()
        if row is None or aware(row.expires_at) <= now:
            return None
        return list(row.hits)


@store_call
def cache_hits(store: Store, engine: str, query: str, scope: str, hits: list[dict[str, Any]],
               *, now: datetime, ttl: timedelta) -> None:
    """Replace the cached answer of `engine` for (query, scope) with `hits` (JSON)."""
    with store.session() as session:
        session.execute(delete(SearchCache).where(
            SearchCache.engine == engine, SearchCache.query == query, SearchCache.site == scope))
        session.add(SearchCache(engine=engine, query=query, site=scope, fetched_at=now,
                                expires_at=now + ttl, hits=hits))
