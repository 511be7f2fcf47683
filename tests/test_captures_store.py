"""store.captures (Save Page Now records) and store.scans.first_seen, on SQLite and
PostgreSQL (the `store` fixture runs on both when PAGETRAIL_TEST_POSTGRES_URL is set)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pagetrail.store.captures import (
    captures_of,
    claim_slot,
    finish_capture,
    recent_capture,
    requested_since,
    start_capture,
)
from pagetrail.store.models import LinkCheck
from pagetrail.store.scans import first_seen

T0 = datetime(2030, 5, 6, 10, 0, tzinfo=UTC)
URL = "https://a.example/page"


def test_capture_rows_count_towards_the_day_and_answer_recent(store) -> None:
    midnight = T0.replace(hour=0)
    first = start_capture(store, URL, source="scan", at=T0)
    start_capture(store, "https://b.example/", source="cli", at=T0, status="refused",
                  message="daily cap")
    start_capture(store, "https://c.example/", source="cli", at=midnight - timedelta(hours=1))
    # Refused requests never reached the archive; yesterday's are another day.
    assert requested_since(store, midnight) == 1
    finish_capture(store, first, status="success", job_id="spn2-1",
                   memento_url=f"https://web.archive.org/web/20300506100000/{URL}",
                   captured_at=T0)
    recent = recent_capture(store, URL, T0 - timedelta(days=30))
    assert recent is not None and recent.status == "success" and recent.job_id == "spn2-1"
    assert recent.captured_at == T0 and recent.requested_at == T0
    assert recent_capture(store, URL, T0 + timedelta(seconds=1)) is None
    failed = start_capture(store, URL, source="cli", at=T0 + timedelta(hours=1))
    finish_capture(store, failed, status="error", message="error:not-found")
    # An error is no reason to skip: the newest success is still the answer.
    assert recent_capture(store, URL, T0 - timedelta(days=1)).job_id == "spn2-1"
    assert [c.status for c in captures_of(store, URL)] == ["success", "error"]


def test_first_seen_is_the_oldest_check(store) -> None:
    with store.session() as s:
        s.add_all([LinkCheck(url=URL, checked_at=T0 + timedelta(days=7), verdict="ok"),
                   LinkCheck(url=URL, checked_at=T0, verdict="ok"),
                   LinkCheck(url="https://b.example/", checked_at=T0, verdict="dead")])
    seen = first_seen(store, [URL, "https://never.example/"])
    assert seen == {URL: T0}


def test_claim_slot_holds_the_in_flight_limit_store_wide(store) -> None:
    window = T0 - timedelta(minutes=3)
    queued = [start_capture(store, f"https://q.example/{i}", source="scan", at=T0,
                            status="queued") for i in range(3)]
    assert claim_slot(store, queued[0], limit=2, since=window, at=T0)
    assert claim_slot(store, queued[1], limit=2, since=window, at=T0)
    assert not claim_slot(store, queued[2], limit=2, since=window, at=T0)  # two in flight
    finish_capture(store, queued[0], status="success")
    assert claim_slot(store, queued[2], limit=2, since=window, at=T0)
    # A pending row older than the window (its process died) no longer holds a slot.
    stale = start_capture(store, "https://q.example/stale", source="scan",
                          at=T0 - timedelta(hours=1), status="pending")
    late = start_capture(store, "https://q.example/late", source="scan", at=T0,
                         status="queued")
    assert stale and not claim_slot(store, late, limit=2, since=window, at=T0)
    finish_capture(store, queued[1], status="error")
    assert claim_slot(store, late, limit=2, since=window, at=T0)
    assert requested_since(store, T0 - timedelta(days=1)) == 5  # every row that was sent


def test_claims_racing_from_threads_never_exceed_the_limit(store) -> None:
    from concurrent.futures import ThreadPoolExecutor

    window = T0 - timedelta(minutes=3)
    queued = [start_capture(store, f"https://r.example/{i}", source="scan", at=T0,
                            status="queued") for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        won = list(pool.map(lambda cid: claim_slot(store, cid, limit=2, since=window, at=T0),
                            queued))
    assert sum(won) == 2
    assert sum(c.status == "pending" for u in range(8)
               for c in captures_of(store, f"https://r.example/{u}")) == 2
