"""pagetrail's memory: checks, mementos, searches, recoveries, picks, watches, link graph.

SQLAlchemy 2.x models and sessions with Alembic migrations; SQLite by default (WAL),
PostgreSQL through ``PAGETRAIL_DATABASE_URL``.
"""

from pagetrail.store.db import Store, open_store
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
    TermStat,
    Watch,
)

__all__ = [
    "Base",
    "DigestRun",
    "LinkCheck",
    "LinkEdge",
    "MementoCache",
    "Move",
    "Pick",
    "RecoveryRow",
    "SearchCache",
    "Store",
    "TermStat",
    "Watch",
    "open_store",
]
