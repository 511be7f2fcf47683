"""Several processes on a fresh store (#20): the first use migrates once, under the store's
migration lock; writers wait for each other; a write that cannot be made is one line on
stderr, never a traceback. Real `pagetrail pick` processes, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pagetrail.store import Pick, Store

PROCESSES = 6


def _env(db_url: str) -> dict[str, str]:
    return {**os.environ, "PAGETRAIL_DATABASE_URL": db_url}


def _start_picks(db_url: str, tag: str) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen(
        [sys.executable, "-m", "pagetrail.cli", "pick", f"https://old.example/{tag}/{i}",
         f"https://new.example/{tag}/{i}"], env=_env(db_url), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(PROCESSES)]


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
def test_picks_started_together_on_a_fresh_store_are_all_recorded(db_url: str,
                                                                   trial: int) -> None:
    procs = _start_picks(db_url, f"t{trial}")
    outcomes = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    for status, err in outcomes:
        assert status == 0, err
        assert "Traceback" not in err
    store = Store(db_url)
    try:
        with store.session() as s:
            assert s.scalar(select(func.count()).select_from(Pick)) == PROCESSES
    finally:
        store.dispose()


def test_migration_lock_is_exclusive_across_holders(db_url: str) -> None:
    from sqlalchemy import create_engine

    from pagetrail.store.migrate import migration_lock

    url = db_url.replace("postgresql://", "postgresql+psycopg://", 1)
    engines = [create_engine(url), create_engine(url)]
    inside: list[int] = []
    overlap: list[bool] = []

    def hold(n: int) -> None:
        with migration_lock(engines[n]):
            inside.append(n)
            overlap.append(len(inside) > 1)
            time.sleep(0.3)
            inside.remove(n)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for engine in engines:
        engine.dispose()
    assert overlap == [False, False]


def test_a_write_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    Store(f"sqlite:///{path}").dispose()  # migrated
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    done = subprocess.run([sys.executable, "-m", "pagetrail.cli", "pick",
                           "https://old.example/a", "https://new.example/b"],
                          env=_env(read_only), text=True, capture_output=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 2
    # The URI filename names the file after `file:`: nothing is made under the working
    # directory (it once grew `file:/tmp/...` directories).
    assert not (tmp_path / "file:").exists()
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0
    # A read-only database refuses (SQLITE_READONLY): named at once, not waited for (#37).
    assert "store_refused" in done.stderr and "readonly" in done.stderr


def test_sqlite_file_reads_uri_filenames() -> None:
    from sqlalchemy.engine import make_url

    from pagetrail.store.migrate import sqlite_file

    assert sqlite_file(make_url("sqlite:////tmp/a/b.db")) == Path("/tmp/a/b.db")
    assert sqlite_file(make_url("sqlite:///file:/tmp/a/b.db?mode=ro&uri=true")) == \
        Path("/tmp/a/b.db")
    assert sqlite_file(make_url("sqlite:///file:/tmp/a%20b.db?uri=true")) == Path("/tmp/a b.db")
    assert sqlite_file(make_url("sqlite:///file:mem?mode=memory&uri=true")) is None
    assert sqlite_file(make_url("sqlite://")) is None
    assert sqlite_file(make_url("sqlite:///:memory:")) is None
