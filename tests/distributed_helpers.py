"""Helpers for the distributed-mode tests: a throw-away Redis (scripts/redis.sh), Celery worker
subprocesses, and a loopback HTTP server that measures what its clients do to it.

Tests that need Redis take the `redis_url` fixture: PAGETRAIL_TEST_REDIS_URL (scripts/test.sh
starts one) or, when redis-server is installed, one started for the session. Without either
they skip locally and fail in CI (CI=true): a missing component must not pass silently.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from loopback import GetHeadHandler, Loopback

REPO = Path(__file__).resolve().parent.parent
REDIS_SCRIPT = REPO / "scripts" / "redis.sh"


def missing(component: str) -> None:
    """Skip locally, fail in CI."""
    if os.environ.get("CI"):
        pytest.fail(f"{component} is required in CI")
    pytest.skip(f"{component} not configured")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A throw-away redis-server with AOF (jobs survive `restart`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.url = subprocess.run(
            ["bash", str(REDIS_SCRIPT), "start", str(directory), str(free_port())],
            check=True, capture_output=True, text=True).stdout.strip()

    def restart(self) -> None:
        subprocess.run(["bash", str(REDIS_SCRIPT), "restart", str(self.directory)], check=True)

    def stop(self) -> None:
        subprocess.run(["bash", str(REDIS_SCRIPT), "stop", str(self.directory)], check=True)


def have_redis_server() -> bool:
    return subprocess.run(["bash", "-c", "command -v redis-server"],
                          capture_output=True).returncode == 0


class Worker:
    """A real `celery worker` process (its own process group, so kill -9 takes it whole)."""

    def __init__(self, name: str, env: Mapping[str, str], log_dir: Path, *,
                 queues: str = "checks,recoveries,scans,pages,digests", pool: str = "prefork",
                 concurrency: int = 1, via_cli: bool = False) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        if via_cli:
            command = [sys.executable, "-m", "pagetrail.cli.main", "worker",
                       f"--concurrency={concurrency}", f"--queues={queues}",
                       f"--pool={pool}", "--loglevel=INFO", f"--hostname={name}@%h"]
        else:
            command = [sys.executable, "-m", "celery", "-A", "pagetrail.tools.workers.celery_app",
                       "worker", f"--concurrency={concurrency}", f"--queues={queues}",
                       f"--pool={pool}", "--loglevel=INFO", f"--hostname={name}@%h",
                       "--without-gossip", "--without-mingle", "--without-heartbeat"]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, env=dict(env), stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            cwd=str(log_dir))

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "ready." in self.log.read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                raise AssertionError(f"worker {self.name} exited:\n{self.output()}")
            time.sleep(0.1)
        raise AssertionError(f"worker {self.name} not ready:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """kill -9 of the worker and its pool processes."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


class MeteredServer(Loopback):
    """A loopback HTTP server that answers after `latency` seconds and records, per Host
    header, when each request arrived and how many were in flight at once."""

    def __init__(self, latency: float = 0.1) -> None:
        self.latency = latency
        self.arrivals: dict[str, list[float]] = defaultdict(list)
        self.in_flight: dict[str, int] = defaultdict(int)
        self.max_in_flight: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        meter = self

        class Handler(GetHeadHandler):
            def answer(self, with_body: bool) -> None:
                host = (self.headers.get("Host") or "").split(":")[0]
                with meter._lock:
                    meter.arrivals[host].append(time.monotonic())
                    meter.in_flight[host] += 1
                    meter.max_in_flight[host] = max(meter.max_in_flight[host],
                                                    meter.in_flight[host])
                try:
                    time.sleep(meter.latency)
                    payload = b"not here"
                    self.send_response(404)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    if with_body:
                        self.wfile.write(payload)
                finally:
                    with meter._lock:
                        meter.in_flight[host] -= 1

        super().__init__(Handler)

    def max_per_window(self, host: str, window: float = 1.0) -> int:
        """The most requests that arrived within any closed `window` seconds."""
        times = sorted(self.arrivals[host])
        best, start = 0, 0
        for end, moment in enumerate(times):
            while moment - times[start] > window:
                start += 1
            best = max(best, end - start + 1)
        return best


TEST_REDIS_URL = os.environ.get("PAGETRAIL_TEST_REDIS_URL")
TEST_POSTGRES_URL = os.environ.get("PAGETRAIL_TEST_POSTGRES_URL")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory):
    """A private redis-server for this session (its own, so a test may restart it)."""
    if not have_redis_server():
        missing("redis-server")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.stop()


def worker_database(url: str) -> str:
    """The shared server's database of this pytest-xdist worker (gw0 → 1, gw1 → 2, …; 0
    without xdist): each worker empties, queues and keys in its own, never in another's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker:
        return url
    number = int(worker.removeprefix("gw")) + 1
    if number > 15:  # redis-server's default `databases 16`
        pytest.fail(f"Redis has no database {number} for xdist worker {worker}: use fewer "
                    "workers (-n)")
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{number}"))


@pytest.fixture
def redis_url(request: pytest.FixtureRequest) -> str:
    """A Redis to use, emptied: PAGETRAIL_TEST_REDIS_URL (this worker's database of it), else
    the session's own server."""
    from redis import Redis

    url = (worker_database(TEST_REDIS_URL) if TEST_REDIS_URL
           else request.getfixturevalue("redis_server").url)
    client = Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database (workers need one); skipped locally, failed in CI."""
    if not TEST_POSTGRES_URL:
        missing("PostgreSQL (PAGETRAIL_TEST_POSTGRES_URL)")
    from conftest import _postgres_database

    yield from _postgres_database()
