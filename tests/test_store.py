from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from sqlalchemy import inspect, select

from pagetrail.store import Pick, Store
from pagetrail.store.migrate import current_revision, head_revision

EXPECTED_TABLES = {
    "link_checks", "mementos", "searches", "recoveries", "picks", "moves", "watches",
    "link_edges", "digest_runs", "term_stats",
}


def test_migrations_create_every_table(store: Store) -> None:
    tables = set(inspect(store.engine).get_table_names())
    assert tables >= EXPECTED_TABLES
    assert current_revision(store.engine) == head_revision()


def test_upgrade_is_idempotent(db_url: str) -> None:
    first = Store(db_url)
    first.dispose()
    again = Store(db_url)  # second open: nothing to do, no error
    assert current_revision(again.engine) == head_revision()
    again.dispose()


def test_transaction_rolls_back_on_error(store: Store) -> None:
    try:
        with store.session() as s:
            s.add(Pick(dead_url="https://a.example/x", chosen_url="https://a.example/y"))
            s.flush()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with store.session() as s:
        assert s.scalars(select(Pick)).all() == []


def test_pick_survives_kill_after_write(db_url: str) -> None:
    """A child process writes a pick, reports, and is SIGKILLed: the pick is there."""
    code = textwrap.dedent(
        f"""
        import os, signal, sys
        from pagetrail.store import Store, Pick
        store = Store({db_url!r})
        with store.session() as s:
            s.add(Pick(dead_url="https://dead.example/a", chosen_url="https://new.example/a",
                       by="U1", via="test"))
        sys.stdout.write("written\\n"); sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))
    assert proc.stdout.strip() == "written", proc.stderr
    assert proc.returncode == -9
    reader = Store(db_url)
    with reader.session() as s:
        picks = s.scalars(select(Pick)).all()
    reader.dispose()
    assert [(p.dead_url, p.chosen_url, p.by) for p in picks] == [
        ("https://dead.example/a", "https://new.example/a", "U1")
    ]
