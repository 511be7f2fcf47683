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


def test_revisions_read_without_alembic_agree_with_alembic(store: Store) -> None:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from pagetrail.store.migrate import alembic_config

    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()
    with store.engine.connect() as connection:
        assert current_revision(store.engine) == \
            MigrationContext.configure(connection).get_current_revision()


def test_opening_a_current_store_does_not_import_alembic(db_url: str) -> None:
    Store(db_url).dispose()  # create and migrate
    code = textwrap.dedent(f"""
        import sys
        from pagetrail.store import Store
        Store({db_url!r}).dispose()
        print("alembic" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=os.environ.copy())
    assert out.stdout.strip() == "False"


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
