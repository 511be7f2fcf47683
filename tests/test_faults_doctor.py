"""`pagetrail doctor`: one line per configured service, what answers and what does not;
exit 1 when a required one (the database, a configured broker) is down. Real processes:
the command, the loopback testbed's archive and search engines, a stopped port for what
is down."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from distributed_helpers import free_port

pytestmark = pytest.mark.testbed


def _doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    return subprocess.run([sys.executable, "-m", "pagetrail.cli.main", "doctor", *args],
                          env={**clean, **env}, capture_output=True, text=True, timeout=120)


def test_doctor_says_everything_answers(testbed, tmp_path) -> None:
    env = {**testbed.env, "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'ok.db'}"}
    done = _doctor(env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ok    database") and "SQLite" in lines[0]
    archives = [line for line in lines if " archive " in line]
    engines = [line for line in lines if " search engine " in line]
    assert archives and all(line.startswith("ok") for line in archives), lines
    assert any(line.startswith("ok") for line in engines), lines
    report = json.loads(_doctor(env, "--json").stdout)
    assert report["healthy"] is True
    assert {c["component"] for c in report["checks"]} >= {"database", "archive",
                                                           "search engine"}


def test_doctor_names_what_is_down_and_exits_1(testbed) -> None:
    dead = free_port()
    env = {**testbed.env,
           "PAGETRAIL_DATABASE_URL": f"postgresql://pagetrail:s3cret@127.0.0.1:{dead}/pt",
           "PAGETRAIL_BROKER_URL": f"redis://:s3cret@127.0.0.1:{dead}/0"}
    done = _doctor(env, "--timeout", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("DOWN  database") and "store_unavailable" in lines[0]
    assert lines[1].startswith("DOWN  broker") and "broker_unavailable" in lines[1]
    assert "s3cret" not in done.stdout + done.stderr  # no password in what it says
    assert "Traceback" not in done.stderr
    # The archives and engines are still checked (in-process pacing, not the dead Redis).
    assert any(line.startswith("ok") and " archive " in line for line in lines), lines


def test_faces_that_answer_someone_waiting_get_the_interactive_budget(tmp_path, monkeypatch):
    """MCP and Slack open the store with the interactive budget; batches, workers and the CLI
    with the long one (store/faults.py counts it from the first fault)."""
    from pagetrail.tools.settings import configured_store, get_settings

    monkeypatch.setenv("PAGETRAIL_STORE_FAULT_BUDGET", "90")
    monkeypatch.setenv("PAGETRAIL_INTERACTIVE_STORE_FAULT_BUDGET", "4")
    get_settings.cache_clear()
    try:
        batch = configured_store(f"sqlite:///{tmp_path / 'batch.db'}")
        face = configured_store(f"sqlite:///{tmp_path / 'face.db'}", interactive=True)
    finally:
        get_settings.cache_clear()
    assert batch.fault_budget == 90
    assert face.fault_budget == 4


@pytest.mark.slow
def test_redis_away_is_one_named_line_not_a_traceback(tmp_path) -> None:
    """The shared limits' Redis does not answer (a closed port): after the client's own
    retries the command says so in one line and exits 2 — no traceback, no verdict."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    env = {**clean, "PAGETRAIL_DATA_DIR": str(tmp_path),
           "PAGETRAIL_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
           "PAGETRAIL_ALLOW_HOSTS": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-m", "pagetrail.cli.main", "check",
                           f"http://127.0.0.1:{free_port()}/page"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("pagetrail: broker_unavailable: Redis"), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_doctor_never_creates_the_sqlite_file_or_its_folder(tmp_path) -> None:
    """It says it writes nothing (#37 item 13): a missing folder is a DOWN line, a file not
    made yet an ok line that says so, an existing file is read as it is — nothing created."""
    quiet = {"PAGETRAIL_ARCHIVES": f"http://127.0.0.1:{free_port()}/web",
             "PAGETRAIL_SEARCH_ENGINES": "local", "PAGETRAIL_DATA_DIR": str(tmp_path)}
    missing = tmp_path / "nonexist" / "dir" / "x.db"
    done = _doctor({**quiet, "PAGETRAIL_DATABASE_URL": f"sqlite:///{missing}"},
                   "--timeout", "2")
    first = done.stdout.splitlines()[0]
    assert done.returncode == 1 and first.startswith("DOWN  database"), done.stdout
    assert "does not exist" in first and "Traceback" not in done.stderr
    assert not (tmp_path / "nonexist").exists()

    fresh = tmp_path / "fresh.db"
    done = _doctor({**quiet, "PAGETRAIL_DATABASE_URL": f"sqlite:///{fresh}"}, "--timeout", "2")
    first = done.stdout.splitlines()[0]
    assert first.startswith("ok    database") and "no database file yet" in first, first
    assert not fresh.exists() and list(tmp_path.iterdir()) == []

    from pagetrail.store import Store

    made = tmp_path / "made.db"
    Store(f"sqlite:///{made}").dispose()
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    done = _doctor({**quiet, "PAGETRAIL_DATABASE_URL": f"sqlite:///{made}"}, "--timeout", "2")
    first = done.stdout.splitlines()[0]
    assert first.startswith("ok    database") and "schema up to date" in first, first
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
