"""pagetrail's memory: checks, mementos, searches, recoveries, picks, watches, link graph.

SQLAlchemy 2.x models and sessions with Alembic migrations; SQLite by default (WAL),
PostgreSQL through ``PAGETRAIL_DATABASE_URL``. The only package that knows SQL: the engine
calls the typed functions of its modules (docs/INTERFACES.md lists them with the table each
writes). It imports nothing from the engine (pagetrail.tools).

The names below load on first use (PEP 562), so that importing `pagetrail.store.errors`
(which every engine error module does) does not import SQLAlchemy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pagetrail.store.db import PoolSize, Store, open_store
    from pagetrail.store.models import (
        Base,
        DigestRun,
        LinkCheck,
        LinkEdge,
        MementoCache,
        Move,
        Pick,
        RecoveryRow,
        SearchCache,
        Watch,
    )

_WHERE = {
    "PoolSize": "db", "Store": "db", "open_store": "db",
    **{name: "models" for name in ("Base", "DigestRun", "LinkCheck", "LinkEdge", "MementoCache",
                                   "Move", "Pick", "RecoveryRow", "SearchCache", "Watch")},
}

__all__ = [
    "Base",
    "DigestRun",
    "LinkCheck",
    "LinkEdge",
    "MementoCache",
    "Move",
    "Pick",
    "PoolSize",
    "RecoveryRow",
    "SearchCache",
    "Store",
    "Watch",
    "open_store",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"pagetrail.store.{module}"), name)
