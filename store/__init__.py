"""pagetrail's memory: checks, searches, recoveries, picks, watches, link graph.

SQLAlchemy 2.x models and sessions with Alembic migrations; SQLite by default (WAL),
PostgreSQL through ``PAGETRAIL_DATABASE_URL``. The only package that knows SQL: the engine
calls the typed functions of its modules (docs/INTERFACES.md lists them with the table each
writes). It imports nothing from the engine (pagetrail.tools).

The names below load on first use (PEP 562), so that importing `pagetrail.store.errors`
(which every engine error module does) does not import SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagetrail._lazy import lazy_getattr

if TYPE_CHECKING:
    from pagetrail.store.db import PoolSize, Store, open_store
    from pagetrail.store.models import (
        Base,
        DigestRun,
        LinkCheck,
        LinkEdge,
        Move,
        Pick,
        RecoveryRow,
        SearchCache,
        SlackChannel,
        Watch,
    )

_WHERE = {
    "PoolSize": "pagetrail.store.db", "Store": "pagetrail.store.db",
    "open_store": "pagetrail.store.db",
    **{name: "pagetrail.store.models" for name in ("Base", "DigestRun", "LinkCheck", "LinkEdge",
                                   "Move", "Pick", "RecoveryRow", "SearchCache", "SlackChannel",
                                   "Watch")},
}

__all__ = [
    "Base",
    "DigestRun",
    "LinkCheck",
    "LinkEdge",
    "Move",
    "Pick",
    "PoolSize",
    "RecoveryRow",
    "SearchCache",
    "SlackChannel",
    "Store",
    "Watch",
    "open_store",
]


__getattr__ = lazy_getattr(__name__, _WHERE, globals())
