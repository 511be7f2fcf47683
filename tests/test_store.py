from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from sqlalchemy import inspect, select

from pagetrail.store import Pick, Store
from pagetrail.store.migrate import current_revision, head_revision

EXPECTED_TABLES = {
    "link_checks", "searches", "recoveries", "picks", "moves", "watches",
    "link_edges", "digest_runs",
}


def test_migrations_create_every_table(store: Store) -> None:
    tables = set(inspect(store.engine).get_table_names())
    assert tables >= EXPECTED_TABLES
    assert "mementos" not in tables  # never used: dropped by 0009
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


def _stored_as_text(store: Store, table: str, key: str, columns: list[str]) -> dict[str, tuple]:
    """Each row's columns as the database holds them (cast to text), keyed by `key`."""
    casts = ", ".join(f"CAST({c} AS TEXT)" for c in columns)
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql(f"SELECT {key}, {casts} FROM {table}").all()
    return {row[0]: tuple(row[1:]) for row in rows}


def test_bulk_writes_store_what_sqlalchemy_stores(store: Store) -> None:
    """store.db.BulkWrite (the scanner's driver-level executemany) against SQLAlchemy's own
    executemany: the same values stored, on every backend; JSONText is stored as given."""
    import json
    from datetime import UTC, datetime

    from sqlalchemy import bindparam, insert, update

    from pagetrail.store.db import JSONText
    from pagetrail.store.models import LinkCheck
    from pagetrail.store.scans import LinkStateRow, insert_checks, save_state_rows

    at = datetime(2026, 3, 1, 12, 30, 5, 120, tzinfo=UTC)
    evidence = {"method": "GET", "status": 200, "words": ["naïve", "日本"], "score": 0.5,
                "sibling": {"probed": True, "url": None}}
    check = {"checked_at": at, "verdict": "ok", "status": None, "final_url": "https://a.example/",
             "evidence": evidence, "scan_id": "s1"}
    with store.session() as session:
        session.connection().execute(insert(LinkCheck.__table__), [{**check, "url": "core"}])
        insert_checks(session, [{**check, "url": "bulk"},
                                {**check, "url": "text",
                                 "evidence": JSONText(json.dumps(evidence))}])
    columns = ["checked_at", "verdict", "status", "final_url", "evidence", "scan_id"]
    checks = _stored_as_text(store, "link_checks", "url", columns)
    assert checks["bulk"] == checks["core"] == checks["text"]
    assert json.loads(checks["bulk"][4]) == evidence

    def state(key: str, when: datetime | None) -> dict:
        return {"url_key": key, "url": f"https://a.example/{key}", "state": "suspect",
                "counted": [at.isoformat()], "history": "F", "first_failed_at": at,
                "last_checked_at": when, "last_verdict": "dead", "confirmed_at": None,
                "changed_at": at, "last_scan_id": "s1"}

    table = LinkStateRow.__table__
    with store.session() as session:
        session.connection().execute(insert(table), [state("core", None)])
        save_state_rows(session, [state("bulk", None)], [])
    later = datetime(2026, 3, 8, 9, 0, tzinfo=UTC)
    with store.session() as session:
        changed = state("core", later)
        session.connection().execute(
            update(table).where(table.c.url_key == bindparam("key")),
            [{"key": "core", **{k: v for k, v in changed.items() if k != "url_key"}}])
        save_state_rows(session, [], [state("bulk", later)])
    columns = ["state", "counted", "history", "first_failed_at", "last_checked_at",
               "last_verdict", "confirmed_at", "changed_at", "last_scan_id"]
    states = _stored_as_text(store, "link_states", "url_key", columns)
    assert states["bulk"] == states["core"]
    assert states["bulk"][4] is not None  # the update reached the row
