"""pagetrail's memory: checks, searches, recoveries, picks, watches, link graph.

SQLAlchemy 2.x models and sessions with Alembic migrations; SQLite by default (WAL),
PostgreSQL through ``PAGETRAIL_DATABASE_URL``. The only package that knows SQL: the engine
calls the typed functions of its modules (docs/INTERFACES.md lists them with the table each
writes). It imports nothing from the engine (pagetrail.tools).

The names below load on first use (PEP 562), so that importing `pagetrail.store.errors`
(which every engine error module does) does not import SQLAlchemy.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use (SQLAlchemy is heavy).
_EXPORTS: dict[str, str] = {
    "PoolSize": "pagetrail.store.db",
    "Store": "pagetrail.store.db",
    "open_store": "pagetrail.store.db",
    "Base": "pagetrail.store.models",
    "DigestRun": "pagetrail.store.models",
    "LinkCheck": "pagetrail.store.models",
    "LinkEdge": "pagetrail.store.models",
    "Move": "pagetrail.store.models",
    "Pick": "pagetrail.store.models",
    "RecoveryRow": "pagetrail.store.models",
    "SearchCache": "pagetrail.store.models",
    "SlackChannel": "pagetrail.store.models",
    "Watch": "pagetrail.store.models",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
