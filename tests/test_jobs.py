"""Jobs, their store, batch files, the Redis limiter and the distributed configuration checks.

Worker processes are exercised in test_workers.py; here everything runs in this process
(the Redis limiter against a real redis-server)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import pytest
from distributed_helpers import MeteredServer, free_port

from pagetrail.store.jobs import JobRecord, count_jobs, done_keys, load_jobs, record_jobs
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.workers.batch import read_batch, write_answers
from pagetrail.tools.workers.jobs import BadJobInput, job_key


def test_a_job_is_recorded_once_first_writer_wins(store) -> None:
    first = JobRecord("recover", "k1", {"url": "https://a.example/"}, "done", {"answer": "moved"})
    again = JobRecord("recover", "k1", {"url": "https://a.example/"}, "done", {"answer": "none"})
    record_jobs(store, [first])
    record_jobs(store, [again, JobRecord("recover", "k2", {}, "failed", {}, "x: y")])
    assert count_jobs(store) == 2
    assert load_jobs(store, "recover", ["k1"])["k1"].result == {"answer": "moved"}
    assert done_keys(store, "recover", ["k1", "k2", "k3"]) == {"k1", "k2"}
    assert done_keys(store, "check", ["k1"]) == set()  # keys are per kind


def test_queued_and_running_marks_are_not_records_and_give_way_to_one(store) -> None:
    from pagetrail.store.jobs import job_state, mark_job

    mark_job(store, "scan", "s1", {"request": "s1"}, "queued")
    assert job_state(store, "scan", "s1")[0] == "queued"
    assert done_keys(store, "scan", ["s1"]) == set() and load_jobs(store, "scan", ["s1"]) == {}
    assert count_jobs(store) == 0
    mark_job(store, "scan", "s1", {"request": "s1"}, "running")
    assert job_state(store, "scan", "s1")[0] == "running"
    record_jobs(store, [JobRecord("scan", "s1", {"request": "s1"}, "done", {"n": 1})])
    record_jobs(store, [JobRecord("scan", "s1", {"request": "s1"}, "done", {"n": 2})])
    state, record = job_state(store, "scan", "s1")
    assert state == "done" and record is not None and record.result == {"n": 1}
    assert job_state(store, "scan", "nope") == ("unknown", None)


def test_job_keys_are_the_input_not_its_spelling() -> None:
    a = job_key("recover", {"url": "https://a.example/x", "anchor": "solar"})
    b = job_key("recover", {"anchor": "solar", "url": "https://a.example/x", "context": ""})
    assert a == b
    assert a != job_key("recover", {"url": "https://a.example/x"})
    assert job_key("check", {"url": "u", "batch": "1"}) != job_key("check",
                                                                    {"url": "u", "batch": "2"})


def test_batch_files_csv_and_jsonl(tmp_path) -> None:
    csv_file = tmp_path / "links.csv"
    csv_file.write_text("url,anchor,date\nhttps://a.example/x,solar farm,2019-06-01\n"
                        "https://b.example/,,\n")
    assert read_batch(csv_file) == [
        {"url": "https://a.example/x", "anchor": "solar farm", "date": "2019-06-01"},
        {"url": "https://b.example/"}]
    jsonl = tmp_path / "links.jsonl"
    jsonl.write_text('{"url": "https://a.example/x", "source_url": "https://s.example/"}\n\n')
    assert read_batch(jsonl) == [{"url": "https://a.example/x",
                                  "source_url": "https://s.example/"}]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("a.jsonl", '{"url": "https://a.example/"}\n{"anchor": "x"}\n', "a.jsonl:2: a row without a url"),
    ("b.jsonl", "not json\n", "b.jsonl:1: not JSON"),
    ("c.csv", "link\nhttps://a.example/\n", "c.csv:1: the CSV header needs a 'url' column"),
    ("d.csv", "url,date\nhttps://a.example/,yesterday\n", "d.csv:2: not an ISO date"),
])
def test_a_bad_batch_row_is_named(tmp_path, name, text, message) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BadJobInput) as caught:
        read_batch(path)
    assert str(caught.value).endswith(message) or message in str(caught.value)


def test_answers_as_csv_keep_input_order(tmp_path) -> None:
    import csv
    import io

    records = [
        JobRecord("recover", "k1", {"url": "https://a.example/x"}, "done",
                  {"answer": "moved", "candidates": [
                      {"url": "https://a.example/y", "kind": "moved", "confidence": 0.9}],
                   "memento": None}),
        JobRecord("recover", "k2", {"url": "https://b.example/"}, "failed", {},
                  "invalid_url: bad"),
    ]
    out = io.StringIO()
    write_answers(records, out, "csv")
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [(r["url"], r["status"], r["best_url"], r["error"]) for r in rows] == [
        ("https://a.example/x", "done", "https://a.example/y", ""),
        ("https://b.example/", "failed", "", "invalid_url: bad")]


# --- the Redis limiter ------------------------------------------------------------------------

async def test_redis_limiter_bounds_a_host_across_instances(redis_url) -> None:
    """Three limiters (as three workers would hold) on one Redis: polite requests to a host
    never exceed `rps` in any second and never more than `concurrency` run at once."""
    from pagetrail.tools.net.politeness import RedisHostLimiter, redis_client

    limiters = [RedisHostLimiter(redis_client(redis_url), rps=10, concurrency=2)
                for _ in range(3)]
    starts: list[float] = []
    running = peak = 0

    async def request(limiter: RedisHostLimiter) -> None:
        nonlocal running, peak
        async with limiter.slot("Host.Example", polite=True):
            starts.append(time.monotonic())
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.15)
            running -= 1

    await asyncio.gather(*(request(limiters[i % 3]) for i in range(12)))
    starts.sort()
    assert peak == 2
    assert _most_in_any(starts, 1.0) <= 10
    assert starts[-1] - starts[0] >= 1.0  # 12 requests at 10/s: the last two wait a second
    for limiter in limiters:
        await limiter.client.aclose()


def _most_in_any(times: list[float], window: float) -> int:
    """The most of `times` within any closed `window` seconds."""
    times = sorted(times)
    return max(sum(1 for t in times if s <= t <= s + window) for s in times)


async def test_redis_limiter_holds_whenever_the_request_reaches_the_host(redis_url) -> None:
    """The rate holds for arrivals, not bookings: each request reaches the 'host' at some
    moment inside its slot (a caller descheduled after taking its slot, a slow connect), and
    still no second at the host holds more than rps. Spacing bookings 1/rps apart did not
    give this: a late sender followed by a prompt one arrive closer than 1/rps."""
    import random

    from pagetrail.tools.net.politeness import RedisHostLimiter, redis_client

    rng = random.Random(17)
    delays = [rng.choice([0.0, 0.3]) for _ in range(24)]
    limiters = [RedisHostLimiter(redis_client(redis_url), rps=4, concurrency=3)
                for _ in range(3)]
    arrivals: list[float] = []

    async def request(i: int) -> None:
        async with limiters[i % 3].slot("late.example", polite=True):
            await asyncio.sleep(delays[i])  # between the booking and the arrival
            arrivals.append(time.monotonic())
            await asyncio.sleep(0.3 - delays[i])  # the answer

    await asyncio.gather(*(request(i) for i in range(24)))
    assert len(arrivals) == 24
    assert _most_in_any(arrivals, 1.0) <= 4
    for limiter in limiters:
        await limiter.client.aclose()


def test_rate_windows() -> None:
    from pagetrail.tools.net.politeness import rate_window

    assert rate_window(4) == (4, 1.0)
    assert rate_window(2.5) == (2, 1.0)
    assert rate_window(0.5) == (1, 2.0)
    assert rate_window(0) == (0, 0.0)


async def test_a_dead_holders_slot_expires(redis_url) -> None:
    """A slot whose holder died (never released) is free again after its lease."""
    from pagetrail.tools.net.politeness import RedisHostLimiter, redis_client

    client = redis_client(redis_url)
    limiter = RedisHostLimiter(client, rps=0, concurrency=1, lease_seconds=0.5)
    dead = limiter.slot("h.example", polite=False)
    await dead.__aenter__()  # taken, never given back: the holder was killed
    started = time.monotonic()
    async with limiter.slot("h.example", polite=False):
        waited = time.monotonic() - started
    assert 0.3 <= waited < 3.0
    await client.aclose()


async def test_fetches_use_the_redis_limiter_when_configured(redis_url) -> None:
    """PAGETRAIL_REDIS_URL selects the shared limiter for the fetcher: the pace holds for two
    fetchers (as in two processes) measured at the server."""
    from pagetrail.tools.net.fetch import Fetcher
    from pagetrail.tools.net.politeness import RedisHostLimiter, shared_limiter
    from pagetrail.tools.settings import Settings

    server = MeteredServer(latency=0.01)
    try:
        settings = Settings(redis_url=redis_url, per_host_rps=5, per_host_concurrency=1,
                            allow_hosts=[f"127.0.0.1:{server.port}"], retries=0)
        assert isinstance(shared_limiter(settings), RedisHostLimiter)
        url = f"http://127.0.0.1:{server.port}/x"
        async with Fetcher(settings) as one, Fetcher(settings) as two:
            await asyncio.gather(*(f.get(url, polite=True) for f in (one, two) * 4))
        times = sorted(server.arrivals["127.0.0.1"])
        assert len(times) == 8
        assert server.max_per_window("127.0.0.1") <= 5
        assert times[5] - times[0] >= 1.0  # the sixth waits for the first to leave the window
    finally:
        server.close()


# --- configuration errors ---------------------------------------------------------------------

def _pagetrail(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    import os

    full = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "pagetrail.cli.main", *args], env=full,
                          capture_output=True, text=True, timeout=60)


def _one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0]


def test_bad_broker_url_is_a_clear_error(tmp_path) -> None:
    env = {"PAGETRAIL_BROKER_URL": "amqp://guest:secret@127.0.0.1/",
           "PAGETRAIL_DATABASE_URL": "postgresql://u@127.0.0.1:1/db",
           "PAGETRAIL_DATA_DIR": str(tmp_path)}
    result = _pagetrail(["worker"], env)
    _one_line_error(result, "config_error", "must be a Redis URL")
    assert "secret" not in result.stderr


def test_sqlite_with_a_broker_is_a_clear_error(tmp_path) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text('{"url": "https://a.example/x"}\n')
    env = {"PAGETRAIL_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",
           "PAGETRAIL_DATA_DIR": str(tmp_path)}
    _one_line_error(_pagetrail(["recover", "--batch", str(batch)], env),
                    "config_error", "SQLite", "PostgreSQL")


def test_redis_down_at_start_is_a_clear_error(tmp_path) -> None:
    port = free_port()  # nothing listens there
    env = {"PAGETRAIL_BROKER_URL": f"redis://127.0.0.1:{port}/0",
           "PAGETRAIL_DATABASE_URL": "postgresql://u@127.0.0.1:1/db",
           "PAGETRAIL_DATA_DIR": str(tmp_path)}
    _one_line_error(_pagetrail(["worker"], env), "broker_unavailable", f"127.0.0.1:{port}")


def test_dispatcher_selection(tmp_path, store) -> None:
    from pagetrail.tools.settings import Settings
    from pagetrail.tools.workers.dispatch import InProcessDispatcher, get_dispatcher

    assert isinstance(get_dispatcher(Settings(), store), InProcessDispatcher)
    with pytest.raises(ConfigError):
        get_dispatcher(Settings(broker_url="redis://127.0.0.1:1/0",
                                database_url=f"sqlite:///{tmp_path}/x.db"), store)


# --- pagetrail recover --batch, in-process ---------------------------------------------------

def test_recover_batch_in_process_is_resumable(tiny_world, testbed_env, tmp_path, capsys):
    """Answers in input order; a rerun recovers nothing again (the store's job table)."""
    import csv

    from sqlalchemy import delete, func, select

    from pagetrail.cli.main import main
    from pagetrail.store.models import RecoveryRow
    from pagetrail.tools.settings import configured_store

    batch = tmp_path / "links.jsonl"
    batch.write_text(
        f'{{"url": "{tiny_world.moved_from}", "source_url": "{tiny_world.blog_page}", '
        f'"anchor": "solar farm boom"}}\n'
        f'{{"url": "{tiny_world.archived_only}"}}\n'
        '{"url": "not a url"}\n')
    out = tmp_path / "answers.csv"
    assert main(["recover", "--batch", str(batch), "--output", str(out)]) == 1  # one failed
    rows = list(csv.DictReader(out.open()))
    assert [(r["url"], r["status"], r["answer"]) for r in rows] == [
        (tiny_world.moved_from, "done", "moved"),
        (tiny_world.archived_only, "done", "archived"),
        ("not a url", "failed", "")]
    assert rows[0]["best_url"] == tiny_world.moved_to
    assert rows[2]["error"].startswith("invalid_url")
    assert "3 links: 2 answered, 1 failed" in capsys.readouterr().err

    store = configured_store()
    with store.session() as s:  # no cached answers left: only the job table can skip them
        assert s.scalar(select(func.count()).select_from(RecoveryRow)) == 2
        s.execute(delete(RecoveryRow))
    assert main(["recover", "--batch", str(batch), "--output", str(out)]) == 1
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(RecoveryRow)) == 0
    assert list(csv.DictReader(out.open())) == rows


def test_celery_worker_refuses_a_configuration_that_cannot_work(tmp_path) -> None:
    """`celery -A pagetrail.tools.workers.celery_app worker` runs the same checks as `pagetrail
    worker` (Celery would only log a failing start-up hook and go on)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    env.update({"PAGETRAIL_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",
                "PAGETRAIL_DATA_DIR": str(tmp_path)})
    result = subprocess.run([sys.executable, "-m", "celery", "-A",
                             "pagetrail.tools.workers.celery_app", "worker", "--pool=solo"],
                            env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 2
    assert "pagetrail: config_error: PAGETRAIL_BROKER_URL is set but the store is SQLite" in (
        result.stderr + result.stdout)


async def test_a_site_watched_by_two_channels_is_scanned_once_per_period(store) -> None:
    """Two channels' digest jobs at once (as on two workers): one scan of the site, keyed by
    site, options and period; each channel's digest is built from it."""
    from sqlalchemy import func, select
    from test_scanner import Site, fast_settings, page

    from pagetrail.store.models import DigestRun, Watch
    from pagetrail.store.scans import Scan
    from pagetrail.tools.workers.jobs import digest_job

    with Site() as site:
        site.routes["/"] = page("Home", ("/a.html", "A"), ("/gone.html", "Gone"))
        site.routes["/a.html"] = page("A")
        with store.session() as s:
            s.add_all([Watch(channel="C1", target=site.url("/")),
                       Watch(channel="C2", target=site.url("/")),
                       Watch(channel="C2", target=site.url("/a.html"))])
        settings = fast_settings()
        records = await asyncio.gather(*(
            digest_job({"channel": channel, "request": f"req-{channel}", "recover": False},
                       settings, store) for channel in ("C1", "C2")))
        assert [r.status for r in records] == ["done", "done"]
        assert site.hits["/"] == 1  # the root page fetched by one scan only
        with store.session() as s:
            scans = s.scalar(select(func.count()).select_from(Scan))
            runs = {run.channel: run.summary for run in s.scalars(select(DigestRun))}
        assert scans == 2  # the shared site, and C2's own page
        shared = {scan["target"]: scan["scan_id"] for run in runs.values()
                  for scan in run["scans"]}
        ids = [scan["scan_id"] for scan in runs["C1"]["scans"]]
        assert ids == [shared[site.url("/")]] and all(ids)
        assert [s["scan_id"] for s in runs["C2"]["scans"]
                if s["target"] == site.url("/")] == ids
        # A later digest job in the same period reads the scan back; nothing is fetched.
        again = await digest_job({"channel": "C1", "request": "req-later", "recover": False},
                                 settings, store)
        assert again.status == "done" and site.hits["/"] == 1
def test_the_celery_dispatcher_polls_pending_jobs_a_window_at_a_time(store, monkeypatch) -> None:
    """It looks up the oldest pending keys first and stops at the first window not wholly
    done (asking for all 20,000 pending keys each poll loaded the store); wholly done windows
    let it go on in the same poll, and a later key done out of order is found on a later
    poll, once the windows before it are done."""
    from pagetrail.tools.settings import Settings
    from pagetrail.tools.workers import dispatch
    from pagetrail.tools.workers.dispatch import CeleryDispatcher

    monkeypatch.setattr(dispatch, "POLL_WINDOW", 10)
    dispatcher = CeleryDispatcher(Settings(broker_url="redis://127.0.0.1:1/0"), store)
    keys = [f"k{i:03d}" for i in range(40)]

    def finish(*indexes: int) -> None:
        record_jobs(store, [JobRecord("check", keys[i], {}, "done", {}) for i in indexes])

    finish(*range(12), 35)  # the first window, part of the second, one out of order
    assert dispatcher._finished("check", keys) == set(keys[:12])
    finish(*range(12, 32))
    assert dispatcher._finished("check", keys[12:]) == set(keys[12:32]) | {keys[35]}
    assert dispatcher._finished("check", []) == set()


async def test_check_jobs_judge_as_a_check_with_the_full_fetcher(store, monkeypatch) -> None:
    """Check jobs take the lean bulk client (httpx cost most of a check's CPU): same verdict,
    status, final URL and reason as `check_link` with the Fetcher, for a live page, a 404,
    a redirect, a soft 404 (every path answers 200), a 500 and a PDF."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pagetrail.tools.linkcheck.check import check_link
    from pagetrail.tools.net import bulkfetch
    from pagetrail.tools.net.fetch import Fetcher
    from pagetrail.tools.settings import Settings
    from pagetrail.tools.workers.jobs import check_jobs

    clients: list[bulkfetch.BulkFetcher] = []

    class Seen(bulkfetch.BulkFetcher):  # the real client, remembered to count its requests
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            clients.append(self)

    monkeypatch.setattr(bulkfetch, "BulkFetcher", Seen)
    page = b"<html><head><title>Solar</title></head><body>" + b"<p>solar farms</p>" * 50 + \
        b"</body></html>"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            host = self.headers["Host"]
            if self.path.startswith("/moved"):
                status, kind, body, extra = 301, "text/html", b"", {
                    "Location": f"http://{host}/live"}
            elif self.path == "/live" or host.startswith("127.0.0.2"):  # .2: all pages 200
                status, kind, body, extra = 200, "text/html", page, {}
            elif self.path == "/doc.pdf":
                status, kind, body, extra = 200, "application/pdf", b"%PDF-1.4 x", {}
            elif self.path == "/broken":
                status, kind, body, extra = 500, "text/plain", b"oops", {}
            else:
                status, kind, body, extra = 404, "text/plain", b"not here", {}
            self.send_response(status)
            for name, value in {"Content-Type": kind, **extra}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)

        do_HEAD = do_GET

    server = ThreadingHTTPServer(("", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        settings = Settings(allow_hosts=[f"127.0.0.1:{port}", f"127.0.0.2:{port}"], retries=0,
                            per_host_rps=0)
        urls = [f"http://127.0.0.1:{port}/{path}" for path in
                ("live", "gone", "moved/old", "broken", "doc.pdf")]
        urls.append(f"http://127.0.0.2:{port}/any/missing-page")
        items = [{"url": url, "batch": "b1"} for url in urls]
        records = await check_jobs(items, settings, store)
        async with Fetcher(settings) as fetcher:
            expected = [await check_link(url, fetcher, settings=settings, polite=True)
                        for url in urls]
    finally:
        server.shutdown()
        server.server_close()

    def judged(result: dict) -> tuple:
        return (result["verdict"], result["status"], result["final_url"], result["reason"])

    assert [r.status for r in records] == ["done"] * len(urls)
    assert [judged(r.result) for r in records] == [
        judged(e.model_dump(mode="json")) for e in expected]
    verdicts = [e.verdict for e in expected]
    assert len(set(verdicts)) >= 4, verdicts  # the cases are not all alike
    assert len(clients) == 1
    assert clients[0].requests >= len(urls) and clients[0].delegated == 0  # the lean path
