"""Errors that do not pass are not outages (#37 item 10), on a real PostgreSQL (a cluster of
the test's own, scripts/postgres.sh): each error below is provoked for real and sorted by its
SQLSTATE (store/faults.py `fault_kind`); a URL over PostgreSQL's btree row limit and a wrong
password are named at once (StoreRefused, `store_refused`) — no "waiting for the database",
no budget waited out — while a stopped server is still waited for."""

from __future__ import annotations

import logging
import os
import secrets
import string
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from faults_helpers import own_postgres_cluster
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from pagetrail.store.errors import StoreRefused, StoreUnavailable
from pagetrail.store.faults import fault_kind, is_store_fault, is_transient

pytestmark = [pytest.mark.postgres]

PASSWORD = "Right-Pw-4f1e"  # the role's real password
WRONG = "Wrong-Pw-77c0"


def long_url(size: int = 4000) -> str:
    """A URL well over PostgreSQL's btree index row limit (~2,704 bytes), of random letters
    so that the index entry's compression cannot bring it under."""
    alphabet = string.ascii_letters + string.digits
    return "https://example.org/p?" + "".join(secrets.choice(alphabet) for _ in range(size))


@pytest.fixture(scope="module")
def pg():
    """A cluster of the test's own, with a role that logs in by password (scram-sha-256 over
    TCP; the cluster trusts everyone else)."""
    for cluster in own_postgres_cluster():
        admin = create_engine(_psycopg(cluster.url), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE ROLE pwuser LOGIN SUPERUSER PASSWORD '{PASSWORD}'"))
            hba = Path(conn.execute(text("SHOW hba_file")).scalar_one())
            hba.write_text("host all pwuser 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
            conn.execute(text("SELECT pg_reload_conf()"))
        admin.dispose()
        yield cluster


def _psycopg(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def _as(url: str, password: str) -> str:
    return make_url(url).set(username="pwuser", password=password).render_as_string(
        hide_password=False)


def _error_of(url: str, *statements: str) -> DBAPIError:
    engine = create_engine(_psycopg(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in statements:
                conn.execute(text(statement))
    except DBAPIError as exc:
        return exc
    finally:
        engine.dispose()
    raise AssertionError(f"no error from {statements}")


def test_real_postgresql_errors_are_sorted_by_their_sqlstate(pg) -> None:
    db = pg.new_database()
    setup = create_engine(_psycopg(db), isolation_level="AUTOCOMMIT")
    with setup.connect() as conn:
        conn.execute(text("CREATE TABLE t (url TEXT, n INT UNIQUE)"))
        conn.execute(text("CREATE INDEX t_url ON t (url)"))
        conn.execute(text("INSERT INTO t VALUES ('a', 1)"))
    setup.dispose()

    permanent = {
        "54000": _error_of(db, f"INSERT INTO t (url) VALUES ('{long_url()}')"),
        "42P01": _error_of(db, "SELECT * FROM no_such_table"),
        "42601": _error_of(db, "SELEKT 1"),
        "22012": _error_of(db, "SELECT 1/0"),
        "23505": _error_of(db, "INSERT INTO t VALUES ('b', 1)"),
    }
    for code, exc in permanent.items():
        assert exc.orig.sqlstate == code, (code, exc.orig)
        assert fault_kind(exc) == "permanent", code
        assert not is_transient(exc) and not is_store_fault(exc)
    # The program limit is an OperationalError, as a server going away is: only its code
    # tells them apart.
    assert type(permanent["54000"]).__name__ == "OperationalError"

    # 55P03: a lock not available within lock_timeout (another session holds it).
    holder = create_engine(_psycopg(db))
    with holder.connect() as conn:
        conn.execute(text("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"))
        locked = _error_of(db, "SET lock_timeout = '200ms'", "SELECT * FROM t")
        conn.rollback()
    holder.dispose()
    assert locked.orig.sqlstate == "55P03"
    assert fault_kind(locked) == "busy" and is_transient(locked)

    # 57P01: the server ends the session (what a fast shutdown does to every session).
    victim = create_engine(_psycopg(db), isolation_level="AUTOCOMMIT")
    with victim.connect() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        killer = create_engine(_psycopg(db), isolation_level="AUTOCOMMIT")
        with killer.connect() as other:
            other.execute(text(f"SELECT pg_terminate_backend({pid})"))
        killer.dispose()
        try:
            conn.execute(text("SELECT 1"))
        except DBAPIError as exc:
            ended = exc
        else:
            raise AssertionError("the terminated session still answered")
    victim.dispose()
    assert ended.orig.sqlstate == "57P01" or ended.connection_invalidated
    assert fault_kind(ended) == "away" and is_transient(ended)

    # Connection failures carry no SQLSTATE: a refused password and a missing database are
    # told by libpq's words, a refused connection is the server away.
    wrong = _error_of(_as(db, WRONG), "SELECT 1")
    missing = _error_of(make_url(db).set(database="no_such_db").render_as_string(False),
                        "SELECT 1")
    refused_port = _error_of(make_url(db).set(port=_closed_port()).render_as_string(False),
                             "SELECT 1")
    assert "password authentication failed" in str(wrong.orig)
    assert fault_kind(wrong) == "permanent" and fault_kind(missing) == "permanent"
    assert fault_kind(refused_port) == "away"


def _closed_port() -> int:
    from distributed_helpers import free_port

    return free_port()


def test_a_url_over_the_index_row_limit_is_named_at_once(pg, caplog) -> None:
    """The store's own write of a check: StoreRefused with its SQLSTATE, at the first
    attempt, with a budget of a minute left unspent and no "waiting" line."""
    from pagetrail.store import Store
    from pagetrail.store.models import LinkCheck

    store = Store(pg.new_database(), fault_budget=60)
    caplog.set_level(logging.WARNING, logger="pagetrail.store")
    attempts = []

    def write() -> None:
        attempts.append(1)
        with store.session() as s:
            s.add(LinkCheck(url=long_url(), verdict="dead", status=404))

    try:
        started = time.monotonic()
        with pytest.raises(StoreRefused) as raised:
            store.call(write)
        elapsed = time.monotonic() - started
    finally:
        store.dispose()
    assert attempts == [1]
    assert raised.value.code == "store_refused"
    message = str(raised.value)
    assert "SQLSTATE 54000" in message and "index row" in message, message
    assert len(message.splitlines()) == 1 and "INSERT" not in message  # no SQL, no URL
    assert elapsed < 30, elapsed  # far from the 60 s budget: not waited out
    assert not is_store_fault(raised.value)  # a worker records it, never puts it back
    assert not [r for r in caplog.records if "waiting for the database" in r.getMessage()]


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    return subprocess.run([sys.executable, "-m", "pagetrail.cli.main", *args],
                          env={**clean, **env}, capture_output=True, text=True, timeout=120)


def test_a_wrong_password_is_named_at_once_in_every_command(pg, tmp_path) -> None:
    db = _as(pg.new_database(), WRONG)
    env = {"PAGETRAIL_DATABASE_URL": db, "PAGETRAIL_STORE_FAULT_BUDGET": "60",
           "PAGETRAIL_DATA_DIR": str(tmp_path), "PAGETRAIL_ARCHIVES": "http://127.0.0.1:9/web",
           "PAGETRAIL_SEARCH_ENGINES": "local"}
    for command in (["db", "upgrade"], ["db", "current"]):
        started = time.monotonic()
        done = _cli(env, *command)
        assert time.monotonic() - started < 30  # not the 60 s budget
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pagetrail: store_refused: "), lines
        assert "password authentication failed" in lines[0]
        assert "waiting for the database" not in done.stderr
        assert WRONG not in done.stdout + done.stderr
    doctor = _cli(env, "doctor", "--timeout", "2")
    assert doctor.returncode == 1
    first = doctor.stdout.splitlines()[0]
    assert first.startswith("DOWN  database") and "store_refused" in first, first
    assert "password authentication failed" in first and WRONG not in doctor.stdout
    # The right password works: it was the password, not the server.
    good = _cli({**env, "PAGETRAIL_DATABASE_URL": _as(db, PASSWORD)}, "db", "upgrade")
    assert good.returncode == 0, good.stderr


def test_a_stopped_server_is_still_waited_for(pg, caplog) -> None:
    """The other side: PostgreSQL stopped is a fault that passes — waited for (one line),
    and the call goes through once it is back, within the budget."""
    from pagetrail.store import Store
    from pagetrail.store.jobs import count_jobs

    store = Store(pg.new_database(), fault_budget=60)
    caplog.set_level(logging.WARNING, logger="pagetrail.store")
    try:
        assert count_jobs(store) == 0
        pg.halt()
        resumer = threading.Timer(4.0, pg.resume)
        resumer.start()
        try:
            assert count_jobs(store) == 0  # waits, then answers
        finally:
            resumer.join()
            if not pg.up:
                pg.resume()
    finally:
        store.dispose()
    waits = [r.getMessage() for r in caplog.records if "waiting for the database" in
             r.getMessage()]
    assert len(waits) == 1, waits
    assert any("answers again" in r.getMessage() for r in caplog.records)


def test_a_stopped_server_past_the_budget_is_unavailable_not_refused(pg) -> None:
    from pagetrail.store import Store
    from pagetrail.store.jobs import count_jobs

    store = Store(pg.new_database(), fault_budget=2)
    try:
        pg.halt()
        try:
            with pytest.raises(StoreUnavailable) as raised:
                count_jobs(store)
        finally:
            pg.resume()
    finally:
        store.dispose()
    assert not isinstance(raised.value, StoreRefused)
    assert is_store_fault(raised.value)  # a worker puts the job back: the database was away
    assert "did not answer for 2 s" in str(raised.value)


def _long_link_batch(world, tmp_path: Path) -> tuple[list[dict[str, str]], Path]:
    from faults_helpers import write_batch

    items = [{"url": world.moved_from, "anchor": "solar farm boom"},
             {"url": "https://slow.example/gone/" + long_url(3500).rpartition("?")[2]},
             {"url": world.archived_only}]
    return items, write_batch(tmp_path / "links.jsonl", items)


def _job_rows(db: str) -> dict[str, tuple[str, str, dict]]:
    """url → (status, error, result) of every recovery job. A long URL's job is answered
    with the store's refusal as a named partial failure (a cache write) or recorded failed
    with it: either way finished once, never waited on nor redelivered."""
    from sqlalchemy import select

    from pagetrail.store.jobs import JobRow

    engine = create_engine(_psycopg(db))
    try:
        with engine.connect() as conn:
            return {row.input["url"]: (row.status, row.error, row.result) for row in
                    conn.execute(select(JobRow).where(JobRow.kind == "recover"))}
    finally:
        engine.dispose()


def _assert_named_not_waited(rows: dict[str, tuple[str, str, dict]], items, stderr: str) -> None:
    assert set(rows) == {item["url"] for item in items}
    status, error, result = rows[items[1]["url"]]
    said = error if status == "failed" else " ".join(
        f["error"] for f in result.get("failures", []) if f["engine"] == "store")
    assert "store_refused" in said or "StoreRefused" in said, (status, error, result)
    assert "SQLSTATE 54000" in said + stderr, (said, stderr)  # its code, in the record or log
    assert rows[items[0]["url"]][0] == "done" and rows[items[2]["url"]][0] == "done"
    assert "waiting for the database" not in stderr


@pytest.mark.slow
@pytest.mark.testbed
def test_a_batch_with_a_url_over_the_limit_names_it_and_goes_on(pg, testbed, tiny_world,
                                                                 tmp_path) -> None:
    from faults_helpers import batch_process, env_for

    db = pg.new_database()
    items, batch = _long_link_batch(tiny_world, tmp_path)
    log = tmp_path / "stderr.log"
    env = env_for(testbed.env, db, PAGETRAIL_STORE_FAULT_BUDGET="60")
    process = batch_process(batch, tmp_path / "out.jsonl", env, log)
    process.wait(240)
    stderr = log.read_text()
    assert "Traceback" not in stderr, stderr
    _assert_named_not_waited(_job_rows(db), items, stderr)


@pytest.mark.slow
@pytest.mark.testbed
@pytest.mark.redis
def test_a_worker_records_a_url_over_the_limit_and_never_puts_it_back(
        pg, testbed, tiny_world, redis_url, tmp_path) -> None:
    from distributed_helpers import Worker
    from faults_helpers import batch_process, env_for

    from pagetrail.store import Store

    db = pg.new_database()
    Store(db).dispose()
    items, batch = _long_link_batch(tiny_world, tmp_path)
    log = tmp_path / "stderr.log"
    env = env_for(testbed.env, db, PAGETRAIL_BROKER_URL=redis_url,
                  PAGETRAIL_BROKER_VISIBILITY_TIMEOUT="120", PAGETRAIL_RECOVER_TIME_LIMIT="90",
                  PAGETRAIL_STORE_FAULT_BUDGET="60")
    worker = Worker("w1", env, tmp_path, concurrency=2, via_cli=True)
    try:
        worker.wait_ready()
        process = batch_process(batch, tmp_path / "out.jsonl", env, log)
        process.wait(240)
    finally:
        worker.stop()
    output = worker.log.read_text(errors="replace")
    assert "put back for redelivery" not in output, output[-4000:]
    assert "Traceback" not in log.read_text()
    _assert_named_not_waited(_job_rows(db), items, log.read_text() + output)


@pytest.mark.slow
@pytest.mark.testbed
@pytest.mark.redis
def test_a_job_the_database_stays_busy_for_is_recorded_failed_after_n_deliveries(
        pg, testbed, tiny_world, redis_url, tmp_path) -> None:
    """A lock held on the table of remembered answers for as long as the test lasts, and a
    lock_timeout on the database (a real 55P03 LockNotAvailable each time): the job meets the
    database busy past the worker's 1 s budget, is put back, and after MAX_DELIVERIES
    deliveries is recorded failed with the reason — not redelivered forever. (PostgreSQL
    stopped, by contrast, is never counted: tests/test_faults_postgres.py.)"""
    from distributed_helpers import Worker
    from faults_helpers import batch_process, env_for, write_batch

    from pagetrail.store import Store
    from pagetrail.tools.workers.celery_app import MAX_DELIVERIES

    db = pg.new_database()
    Store(db).dispose()
    admin = create_engine(_psycopg(db), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{make_url(db).database}" '
                          "SET lock_timeout = '300ms'"))
    admin.dispose()
    items = [{"url": tiny_world.archived_only}]
    batch = write_batch(tmp_path / "links.jsonl", items)
    log = tmp_path / "stderr.log"
    env = env_for(testbed.env, db, PAGETRAIL_BROKER_URL=redis_url,
                  PAGETRAIL_BROKER_VISIBILITY_TIMEOUT="120", PAGETRAIL_RECOVER_TIME_LIMIT="90")
    worker = Worker("busy", {**env, "PAGETRAIL_STORE_FAULT_BUDGET": "1"}, tmp_path,
                    concurrency=1, via_cli=True)
    holder = create_engine(_psycopg(db))
    try:
        with holder.connect() as conn:
            conn.execute(text("LOCK TABLE recoveries IN ACCESS EXCLUSIVE MODE"))
            worker.wait_ready()
            process = batch_process(batch, tmp_path / "out.jsonl", env, log)
            assert process.wait(400) is not None
            conn.rollback()
    finally:
        holder.dispose()
        worker.stop()
    output = worker.log.read_text(errors="replace")
    assert output.count("put back for redelivery") == MAX_DELIVERIES, output[-4000:]
    status, error, _ = _job_rows(db)[items[0]["url"]]
    assert status == "failed", (status, error)
    assert f"delivered {MAX_DELIVERIES} times without an outcome" in error, error
    assert "lock timeout" in error, error  # the reason it kept coming back
    assert "Traceback" not in log.read_text()
