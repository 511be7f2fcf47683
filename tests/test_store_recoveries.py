"""store.recoveries: one remembered answer per request (natural key, upsert), on SQLite and
PostgreSQL (the `store` fixture runs both when PAGETRAIL_TEST_POSTGRES_URL is set)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from sqlalchemy import func, insert, select

from pagetrail.store import RecoveryRow, Store
from pagetrail.store.db import create_db_engine
from pagetrail.store.migrate import upgrade
from pagetrail.store.recoveries import latest_recovery, recent_recoveries, remember_recovery
from pagetrail.tools.models import Recovery as Answer
from pagetrail.tools.recovery.memory import remember_answer as _remember
from pagetrail.tools.recovery.pipeline import request_key

URL = "https://example.org/gone"


def rows(store: Store) -> int:
    with store.session() as s:
        return s.scalar(select(func.count()).select_from(RecoveryRow)) or 0


def test_the_same_recovery_remembered_twice_leaves_one_row(store: Store) -> None:
    key = request_key(URL, source=None)
    first = Answer(url=URL, answer="none", reason="first run")
    again = Answer(url=URL, answer="archived", reason="the redelivered job's run")
    _remember(store, URL, key, first, {"source_url": None})
    _remember(store, URL, key, again, {"source_url": None})  # a redelivered job
    assert rows(store) == 1
    stored = latest_recovery(store, key)
    assert stored is not None
    assert stored.answer["reason"] == "the redelivered job's run"  # the newest answer stands
    assert stored.created_at.tzinfo is not None
    other = request_key(URL, source="https://example.org/")
    _remember(store, URL, other, first, {"source_url": "https://example.org/"})
    assert rows(store) == 2  # another request of the same URL is another row


def test_concurrent_remembers_of_one_request_leave_one_row(store: Store) -> None:
    key = request_key(URL, anchor="solar")

    def remember(n: int) -> None:
        remember_recovery(store, URL, key, request={"n": n}, answer={"n": n}, seconds=n)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(remember, range(8)))
    assert rows(store) == 1
    stored = latest_recovery(store, key)
    assert stored is not None and stored.answer == stored.request


def test_migration_0006_keeps_the_newest_row_of_each_request(db_url: str) -> None:
    engine = create_db_engine(db_url)
    upgrade(engine, "0005")
    made = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.begin() as connection:
        connection.execute(insert(RecoveryRow.__table__), [
            {"url": URL, "request_key": "k1", "request": {}, "answer": {"n": n},
             "created_at": made, "seconds": 0.0} for n in (1, 2, 3)
        ] + [{"url": URL, "request_key": "k2", "request": {}, "answer": {"n": 9},
              "created_at": made, "seconds": 0.0}])
    upgrade(engine)
    store = Store(db_url)
    try:
        assert rows(store) == 2
        k1 = latest_recovery(store, "k1")
        assert k1 is not None and k1.answer == {"n": 3}
        remember_recovery(store, URL, "k1", request={}, answer={"n": 4}, seconds=0.0)
        assert rows(store) == 2
    finally:
        store.dispose()
        engine.dispose()


def test_recent_recoveries_newest_first_and_of_one_url(store: Store) -> None:
    """The MCP resources' query (pagetrail.recent_recoveries): newest first, `limit` rows,
    only one URL's when asked."""
    other = "https://example.org/elsewhere"
    for n, url in enumerate([URL, other, URL]):
        _remember(store, url, request_key(url, anchor=f"a{n}"),
                  Answer(url=url, answer="none", reason=f"run {n}"), {})
    newest = recent_recoveries(store, limit=2)
    assert [r.answer["reason"] for r in newest] == ["run 2", "run 1"]
    assert [r.answer["reason"] for r in recent_recoveries(store, limit=5, url=URL)] == [
        "run 2", "run 0"]
    assert recent_recoveries(store, limit=5, url="https://example.org/never") == []
