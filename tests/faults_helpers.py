"""Helpers for the fault tests (tests/test_faults_*.py): a PostgreSQL cluster of their own
that they may stop and start again (scripts/postgres.sh; never the shared one of
scripts/test.sh), a 40-link batch over the tiny loopback world, and what the store holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from distributed_helpers import free_port, missing

REPO = Path(__file__).resolve().parent.parent
POSTGRES_SCRIPT = REPO / "scripts" / "postgres.sh"


class OwnPostgres:
    """A throw-away PostgreSQL cluster the test may halt (`pg_ctl stop -m fast`) and resume
    on the same port, its data kept."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.url = subprocess.run(
            ["bash", str(POSTGRES_SCRIPT), "start", str(directory), str(free_port())],
            check=True, capture_output=True, text=True).stdout.strip()
        self.up = True

    def halt(self) -> None:
        subprocess.run(["bash", str(POSTGRES_SCRIPT), "halt", str(self.directory)], check=True)
        self.up = False

    def resume(self) -> None:
        subprocess.run(["bash", str(POSTGRES_SCRIPT), "resume", str(self.directory)],
                       check=True)
        self.up = True

    def stop(self) -> None:
        subprocess.run(["bash", str(POSTGRES_SCRIPT), "stop", str(self.directory)], check=True)

    def new_database(self) -> str:
        from sqlalchemy import create_engine, text

        name = f"faults_{uuid.uuid4().hex[:10]}"
        admin = create_engine(self.url.replace("postgresql://", "postgresql+psycopg://", 1),
                              isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        return f"{self.url.rpartition('/')[0]}/{name}"


def have_postgres() -> bool:
    return subprocess.run(["bash", "-c", "ls -d /usr/lib/postgresql/*/bin"],
                          capture_output=True).returncode == 0


def own_postgres_cluster() -> Iterator[OwnPostgres]:
    """For a module-scoped fixture: a cluster of the tests' own, removed afterwards."""
    if not have_postgres():
        missing("PostgreSQL server binaries")
    # Under /tmp itself: the server runs as the postgres user, who cannot enter pytest's
    # private temporary directories.
    cluster = OwnPostgres(Path(tempfile.mkdtemp(prefix="pagetrail-faults-pg.")))
    try:
        yield cluster
    finally:
        cluster.stop()


def forty_links(world: Any) -> list[dict[str, str]]:
    """40 distinct links (40 jobs) over the tiny world: its dead, moved, archived and
    redirected links, and dead links on its slow host (300 ms a request) so that the batch
    lasts long enough to be interrupted."""
    items = [
        {"url": world.moved_from, "source_url": world.blog_page, "anchor": "solar farm boom"},
        {"url": world.archived_only},
        {"url": world.nxdomain_url},
        {"url": world.live_redirect},
        {"url": world.moved_from, "anchor": "solar farms", "date": "2019-06-02"},
    ]
    items += [{"url": f"https://slow.example/gone/{i}", "anchor": f"gone page {i}"}
              for i in range(40 - len(items))]
    return items


def write_batch(path: Path, items: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def env_for(base: dict[str, str], db: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    env.update(base)
    env["PAGETRAIL_DATABASE_URL"] = db
    env.update(extra)
    return env


def batch_process(batch: Path, out: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """`pagetrail recover --batch` as its own process (stderr to `log`)."""
    with open(log, "wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "pagetrail.cli.main", "recover", "--batch", str(batch),
             "--output", str(out), "--json"],
            env=env, stdout=subprocess.DEVNULL, stderr=stderr, cwd=str(batch.parent))


def job_statuses(db: str) -> Counter[tuple[str, str]]:
    """(key, status) of every recovery job row: a key twice would be a duplicate."""
    from sqlalchemy import create_engine, select

    from pagetrail.store.jobs import JobRow

    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://", 1)
                           if db.startswith("postgresql://") else db)
    try:
        with engine.connect() as conn:
            return Counter((key, status) for key, status in conn.execute(
                select(JobRow.key, JobRow.status).where(JobRow.kind == "recover")))
    finally:
        engine.dispose()


def recovery_rows(db: str) -> Counter[tuple[str, str]]:
    """How many recovery rows (remembered answers) each request has: (request key, the
    normalised URL) → rows."""
    from sqlalchemy import create_engine, select

    from pagetrail.store.models import RecoveryRow
    from pagetrail.tools.net.urls import normalize_url

    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://", 1)
                           if db.startswith("postgresql://") else db)
    try:
        with engine.connect() as conn:
            return Counter((key, normalize_url(url)) for key, url in conn.execute(
                select(RecoveryRow.request_key, RecoveryRow.url)))
    finally:
        engine.dispose()


def finished_jobs(db: str) -> int:
    """How many recovery jobs are recorded (0 while the tables are not made yet)."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return sum(job_statuses(db).values())
    except SQLAlchemyError:
        return 0


def wait_for_jobs(db: str, count: int, process: subprocess.Popen | None,
                  timeout: float = 180.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done = finished_jobs(db)
        if done >= count:
            return done
        assert process is None or process.poll() is None, "the batch ended early"
        assert time.monotonic() < deadline, f"only {done} jobs after {timeout} s"
        time.sleep(0.1)


def answers(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def batch_job_keys(items: list[dict[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    """The batch's recovery job keys → their URLs: the first pass's, and the second's (a
    link answered with no live page is asked once more: `Dispatcher.recover`)."""
    from pagetrail.tools.workers.jobs import recover_input
    from pagetrail.tools.workers.keys import REVISIT_FIELD, job_key

    inputs = [recover_input(item) for item in items]
    return ({job_key("recover", item): item["url"] for item in inputs},
            {job_key("recover", {**item, REVISIT_FIELD: "1"}): item["url"] for item in inputs})


def first_pass_jobs(db: str, items: list[dict[str, str]]) -> int:
    """How many of the batch's first-pass recovery jobs are recorded."""
    first, _again = batch_job_keys(items)
    return sum(n for (key, _status), n in job_statuses(db).items() if key in first)


def assert_every_link_answered_once(db: str, items: list[dict[str, str]],
                                    out: Path | None = None) -> None:
    """Every link answered, exactly once, none failed; no duplicate row. Its second job (the
    batch's revisit of an unanswered link) at most once, and a second recovery row only for
    a link that second job answered afresh."""
    from sqlalchemy import create_engine, select

    from pagetrail.store.jobs import JobRow
    from pagetrail.tools.net.urls import normalize_url

    statuses = job_statuses(db)
    keys = Counter(key for key, _ in statuses.elements())
    first, again = batch_job_keys(items)
    assert {key for key in keys if key in first} == set(first), (len(keys), len(items))
    assert set(keys) <= set(first) | set(again), "a job of no link of the batch"
    assert max(keys.values()) == 1  # no job recorded twice
    assert {status for _, status in statuses} == {"done"}, statuses
    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://", 1)
                           if db.startswith("postgresql://") else db)
    try:
        with engine.connect() as conn:
            afresh = [normalize_url(again[key]) for key, result in conn.execute(
                select(JobRow.key, JobRow.result).where(JobRow.kind == "recover"))
                if key in again and (result or {}).get("evidence", {}).get("revisited")]
    finally:
        engine.dispose()
    recoveries = recovery_rows(db)
    assert recoveries, recoveries
    # one row a request; a second only for a link its revisit answered afresh
    assert all(n == 1 or (n == 2 and url in afresh) for (_key, url), n in recoveries.items()), \
        recoveries
    assert sum(n - 1 for n in recoveries.values()) <= len(afresh), (recoveries, afresh)
    if out is not None:
        rows = answers(out)
        assert len(rows) == len(items)
        assert [row["input"]["url"] for row in rows] == [item["url"] for item in items]
        assert {row["status"] for row in rows} == {"done"}
