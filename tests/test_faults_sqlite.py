"""SQLite's writer lock held by another process (`BEGIN EXCLUSIVE`) longer than the busy
timeout: the store's fault policy (store/faults.py) waits, so no learned move, pick or
answer is lost; and which driver errors the policy counts as faults of the infrastructure."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from pagetrail.store.errors import StoreUnavailable
from pagetrail.store.faults import call_with_policy, is_store_fault, is_transient

BUSY_TIMEOUT = 10.0  # store.db's PRAGMA busy_timeout, in seconds
# The other process keeps the lock until the store has met it past the busy timeout (the
# store says it waits), however slow the machine is to reach its first write; at most:
HOLD = 120.0

LOCKER = """
import select, sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
connection.execute("CREATE TABLE IF NOT EXISTS locker_was_here (x INTEGER)")
print("locked", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))  # until told to let go (stdin closed)
connection.execute("COMMIT")
"""


def _driver_error(message: str, orig: Exception) -> OperationalError:
    return OperationalError("SELECT 1", {}, orig)


def test_which_errors_are_faults_of_the_infrastructure() -> None:
    locked = _driver_error("locked", sqlite3.OperationalError("database is locked"))
    full = _driver_error("full", sqlite3.OperationalError("database or disk is full"))
    missing = _driver_error("table", sqlite3.OperationalError("no such table: moves"))
    assert is_transient(locked) and is_transient(full)
    assert not is_transient(missing)  # a bad migration is not waited for
    wrapped = StoreUnavailable("the database could not be used")
    wrapped.__cause__ = locked
    assert is_transient(wrapped) and is_store_fault(wrapped)
    assert not is_transient(ValueError("x"))


def test_past_the_budget_the_named_error_and_no_second_wait() -> None:
    calls = []

    def always_locked() -> None:
        calls.append(time.monotonic())
        raise _driver_error("locked", sqlite3.OperationalError("database is locked"))

    with pytest.raises(StoreUnavailable) as raised:
        call_with_policy(1.0, always_locked)
    assert "was busy for 1 s" in str(raised.value)  # a lock: busy, not away
    assert "database is locked" in str(raised.value)
    assert len(calls) >= 2  # it tried again before giving up
    assert is_store_fault(raised.value)
    assert not is_transient(raised.value)  # an outer call does not wait a second budget

    calls.clear()
    with pytest.raises(StoreUnavailable, match="was busy for 0 s"):
        call_with_policy(0, always_locked)
    assert len(calls) == 1  # a zero budget: the named error at the first fault

    missing = []

    def no_table() -> None:
        missing.append(1)
        raise _driver_error("table", sqlite3.OperationalError("no such table: moves"))

    with pytest.raises(OperationalError):
        call_with_policy(5.0, no_table)
    assert missing == [1]  # raised at once


def _hold_lock(path: Path, seconds: float) -> subprocess.Popen:
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(path), str(seconds)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert locker.stdout is not None
    assert locker.stdout.readline().strip() == "locked"
    return locker


def _release_once_waited(locker: subprocess.Popen, records: list[logging.LogRecord],
                         seconds: float) -> threading.Thread:
    """Lets the lock go once the store logs that it waits for the database (its write met
    the lock for the whole busy timeout), or after `seconds`."""

    def watch() -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not any(
                "waiting for the database" in r.getMessage() for r in list(records)):
            time.sleep(0.1)
        assert locker.stdin is not None
        locker.stdin.close()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
async def test_a_writer_lock_past_the_busy_timeout_loses_no_learned_move_or_pick(
        tiny_world, testbed, tmp_path, caplog) -> None:
    from pagetrail import record_pick, recover_link
    from pagetrail.store import Store
    from pagetrail.store.picks import picks_on_host
    from pagetrail.tools.net.urls import site_of
    from pagetrail.tools.recovery.memory import moves_for_site

    path = tmp_path / "locked.db"
    store = Store(f"sqlite:///{path}", fault_budget=60)
    caplog.set_level(logging.WARNING, logger="pagetrail.store")
    try:
        locker = _hold_lock(path, HOLD)
        _release_once_waited(locker, caplog.records, HOLD)
        started = time.monotonic()
        try:
            recovery = await recover_link(tiny_world.moved_from, anchor="solar farm boom",
                                          slim=False, settings=testbed.settings(), store=store)
            picked = await record_pick(tiny_world.moved_from, tiny_world.moved_to,
                                       by="tester", store=store)
        finally:
            assert locker.wait(60) == 0
        assert time.monotonic() - started >= BUSY_TIMEOUT  # the writes did meet the lock
        assert recovery.answer == "moved"
        assert [f for f in recovery.failures if f.engine == "store"] == []
        learned = {(m.old_url, m.new_url) for m in moves_for_site(store, tiny_world.moved_from)}
        assert (tiny_world.moved_from, tiny_world.moved_to) in learned
        picks = picks_on_host(store, site_of(tiny_world.moved_from))
        assert [(p.dead_url, p.chosen_url) for p in picks] == [
            (tiny_world.moved_from, tiny_world.moved_to)]
        assert picked is not None
        waits = [r.getMessage() for r in caplog.records if "waiting for the database" in
                 r.getMessage()]
        assert waits and "database is locked" in waits[0]
    finally:
        store.dispose()
