"""Distributed mode end to end: real Redis, real PostgreSQL, real `celery worker` processes,
the loopback testbed (recoveries) and a metered loopback server (checks)."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections import Counter
from typing import Any

import pytest
from distributed_helpers import MeteredServer, RedisServer, Worker, have_redis_server, missing

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

VISIBILITY = 45  # seconds before a killed worker's job goes to another (> the 40 s limits)
JOB_LIMIT = "40"  # a recovery on a loaded 2-core CI machine can take well over 15 s


def _settings(env: dict[str, str]):
    from pagetrail.tools.settings import Settings

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return Settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _env(base: dict[str, str], db: str, broker: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    env.update(base)
    env.update({"PAGETRAIL_DATABASE_URL": db, "PAGETRAIL_BROKER_URL": broker,
                "PAGETRAIL_BROKER_VISIBILITY_TIMEOUT": str(VISIBILITY),
                "PAGETRAIL_RECOVER_TIME_LIMIT": JOB_LIMIT, "PAGETRAIL_CHECK_TIME_LIMIT": JOB_LIMIT,
                "PAGETRAIL_SCAN_TIME_LIMIT": JOB_LIMIT})
    env.update(extra)
    return env


def _migrate(db: str) -> None:
    """Migrate before starting workers (the migrate-once lock is store/'s business)."""
    from pagetrail.store import Store

    Store(db).dispose()


def _batch(world, n_slow: int = 0) -> list[dict[str, str]]:
    items = [
        {"url": world.moved_from, "source_url": world.blog_page, "anchor": "solar farm boom"},
        {"url": world.archived_only},
        {"url": world.nxdomain_url},
        {"url": world.live_redirect},
        {"url": world.slow_url},
        {"url": world.moved_from, "anchor": "solar farms", "date": "2019-06-02"},
    ]
    items += [{"url": f"https://slow.example/gone/{i}"} for i in range(n_slow)]
    return items


def _answer(record) -> tuple:
    result = record.result
    top = [(c["url"], c["kind"]) for c in result.get("candidates", [])[:3]]
    memento = (result.get("memento") or {}).get("memento_url")
    return record.status, result.get("answer"), tuple(top), memento


def _value_counts(db: str, column: Any) -> Counter[str]:
    """How many rows of `column`'s table hold each of its values."""
    from sqlalchemy import select

    from pagetrail.store import Store

    store = Store(db, migrate=False)
    try:
        with store.session() as s:
            return Counter(s.scalars(select(column)))
    finally:
        store.dispose()


def _recovery_rows(db: str) -> Counter[str]:
    from pagetrail.store.models import RecoveryRow

    return _value_counts(db, RecoveryRow.request_key)


def _job_rows(db: str) -> Counter[str]:
    from pagetrail.store.jobs import JobRow

    return _value_counts(db, JobRow.key)


@pytest.fixture
def second_pg_url():
    from distributed_helpers import TEST_POSTGRES_URL

    if not TEST_POSTGRES_URL:
        missing("PostgreSQL (PAGETRAIL_TEST_POSTGRES_URL)")
    from conftest import _postgres_database

    yield from _postgres_database()


@pytest.fixture
def workers(tmp_path):
    started: list[Worker] = []

    def start(name: str, env: dict[str, str], **options) -> Worker:
        worker = Worker(name, env, tmp_path, **options)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


async def _run(kind, items, settings, db, **dispatcher_options):
    from pagetrail.store import Store
    from pagetrail.tools.workers.dispatch import CeleryDispatcher

    store = Store(db, migrate=False)
    try:
        return await CeleryDispatcher(settings, store, poll_seconds=0.2,
                                      **dispatcher_options).run(kind, items)
    finally:
        store.dispose()


async def test_two_workers_answer_a_batch_as_in_process(tiny_world, testbed, pg_url,
                                                        second_pg_url, redis_url, workers):
    from pagetrail.store import Store
    from pagetrail.tools.workers.dispatch import InProcessDispatcher

    items = _batch(tiny_world)
    local_env = _env(testbed.env, second_pg_url, "")
    local_env.pop("PAGETRAIL_BROKER_URL")
    local_store = Store(second_pg_url)
    try:
        expected = await InProcessDispatcher(_settings(local_env), local_store).run(
            "recover", items)
    finally:
        local_store.dispose()

    env = _env(testbed.env, pg_url, redis_url)
    _migrate(pg_url)
    one = workers("w1", env, via_cli=True)
    two = workers("w2", env)
    one.wait_ready()
    two.wait_ready()
    got = await _run("recover", items, _settings(env), pg_url)
    assert [_answer(r) for r in got] == [_answer(r) for r in expected]
    assert {r.result["answer"] for r in got} >= {"moved", "archived", "redirected", "alive"}
    # Both workers took part (each logs the jobs it received).
    assert "pagetrail.recover" in one.output() and "pagetrail.recover" in two.output()


async def test_kill_9_of_a_worker_mid_batch_loses_and_duplicates_nothing(
        tiny_world, testbed, pg_url, redis_url, workers):
    items = _batch(tiny_world, n_slow=10)
    env = _env(testbed.env, pg_url, redis_url)
    _migrate(pg_url)
    victim = workers("victim", env)
    survivor = workers("survivor", env)
    victim.wait_ready()
    survivor.wait_ready()
    settings = _settings(env)
    batch = asyncio.create_task(_run("recover", items, settings, pg_url))
    def held() -> set[str]:  # jobs the victim received and has not finished (whole log)
        log = victim.log.read_text(errors="replace")
        return set(re.findall(r"pagetrail\.recover\[([0-9a-f-]+)\] received", log)) - set(
            re.findall(r"pagetrail\.recover\[([0-9a-f-]+)\] succeeded", log))

    deadline = time.monotonic() + 60
    while sum(_job_rows(pg_url).values()) < 2:  # the batch is under way
        assert time.monotonic() < deadline, victim.output()
        await asyncio.sleep(0.05)
    # Kill the moment the victim is seen holding a job: nothing (no database query) between
    # the look and the kill, or the job may finish in between and nothing is lost to test.
    while not held():
        assert time.monotonic() < deadline, victim.output()
        await asyncio.sleep(0.01)
    victim.kill()  # mid-job: it holds a recovery and the batch is not done
    assert sum(_job_rows(pg_url).values()) < len(items)
    got = await asyncio.wait_for(batch, 240)
    assert len(got) == len(items)
    assert [(r.input, r.error) for r in got if r.status != "done"] == []
    # The victim died holding a job, and that very job ran again on the survivor.
    lost_with_victim = held()
    assert lost_with_victim, victim.output()
    # The redelivered run stored its answer (the batch is complete); its "succeeded" log line
    # follows once the task returns — on a loaded 2-core machine that took over a minute once.
    deadline = time.monotonic() + 180
    while not all(f"[{task}] succeeded" in survivor.output() for task in lost_with_victim):
        assert time.monotonic() < deadline, (lost_with_victim, survivor.output())
        await asyncio.sleep(0.2)
    jobs = _job_rows(pg_url)
    assert len(jobs) == len(items) and max(jobs.values()) == 1
    recoveries = _recovery_rows(pg_url)
    assert max(recoveries.values()) == 1, recoveries  # no answer stored twice


async def test_redis_restarted_mid_batch_the_batch_completes(tiny_world, testbed, pg_url,
                                                             tmp_path, workers):
    if not have_redis_server():
        missing("redis-server")
    redis = RedisServer(tmp_path / "redis")
    try:
        items = _batch(tiny_world, n_slow=6)
        env = _env(testbed.env, pg_url, redis.url)
        _migrate(pg_url)
        workers("w1", env).wait_ready()
        batch = asyncio.create_task(_run("recover", items, _settings(env), pg_url))
        deadline = time.monotonic() + 60
        while sum(_job_rows(pg_url).values()) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        assert sum(_job_rows(pg_url).values()) < len(items)  # mid-batch
        redis.restart()  # the queued jobs are in the AOF
        got = await asyncio.wait_for(batch, 150)
        assert len(got) == len(items) and all(r.status == "done" for r in got)
        assert max(_job_rows(pg_url).values()) == 1
    finally:
        redis.stop()


async def test_three_workers_never_exceed_a_hosts_rate_or_concurrency(pg_url, redis_url,
                                                                      workers):
    """Measured at the server: 3 workers × 10 concurrent checks against one host limited to
    4 requests/s and 2 at once."""
    server = MeteredServer(latency=0.15)
    try:
        env = _env({"PAGETRAIL_ALLOW_HOSTS": f"127.0.0.1:{server.port}",
                    "PAGETRAIL_PER_HOST_RPS": "4", "PAGETRAIL_PER_HOST_CONCURRENCY": "2",
                    "PAGETRAIL_CHECK_CHUNK": "10", "PAGETRAIL_RETRIES": "0"},
                   pg_url, redis_url, PAGETRAIL_CHECK_TIME_LIMIT="60",
                   PAGETRAIL_BROKER_VISIBILITY_TIMEOUT="120")
        _migrate(pg_url)
        started = [workers(f"w{i}", env, queues="checks") for i in range(3)]
        for worker in started:
            worker.wait_ready()
        items = [{"url": f"http://127.0.0.1:{server.port}/p{i}", "batch": "rate"}
                 for i in range(30)]
        got = await _run("check", items, _settings(env), pg_url)
        assert [r.result["verdict"] for r in got] == ["dead"] * 30
        host = "127.0.0.1"
        assert len(server.arrivals[host]) == 30  # HEAD settles a 404: one request each
        assert server.max_in_flight[host] <= 2
        # The real limit, at the server: at most 4 arrivals in any second.
        assert server.max_per_window(host, 1.0) <= 4
        # ... and the three workers all checked (the limit held across them, not in one).
        assert all("pagetrail.check" in w.output() for w in started)
    finally:
        server.close()


async def test_a_site_scan_runs_on_a_worker_as_in_process(tiny_world, testbed, pg_url,
                                                          second_pg_url, redis_url, workers):
    """`pagetrail scan` with a broker: the scan is a job on a worker (fanned out as page
    jobs); its digest is the one an in-process scan of the same site gives."""
    from pagetrail.store import Store
    from pagetrail.tools.workers.dispatch import (
        CeleryDispatcher,
        InProcessDispatcher,
        scan_on_workers,
    )

    options = {"depth": 1, "max_pages": 20, "same_site_only": False}
    local_env = _env(testbed.env, second_pg_url, "")
    local_env.pop("PAGETRAIL_BROKER_URL")
    local_store = Store(second_pg_url)
    try:
        expected = await scan_on_workers(InProcessDispatcher(_settings(local_env), local_store),
                                          tiny_world.blog_page, **options)
    finally:
        local_store.dispose()
    env = _env(testbed.env, pg_url, redis_url)
    _migrate(pg_url)
    worker = workers("scanner", env, queues="scans,pages")
    worker.wait_ready()
    store = Store(pg_url, migrate=False)
    try:
        got = await scan_on_workers(CeleryDispatcher(_settings(env), store, poll_seconds=0.2),
                                    tiny_world.blog_page, **options)
    finally:
        store.dispose()
    assert "pagetrail.scan" in worker.output() and "pagetrail.page" in worker.output()

    def shape(digest):
        return (digest["urls_checked"], digest["verdicts"], digest["states"],
                sorted(link["url"] for link in digest["suspect"]))

    assert shape(got) == shape(expected)
    assert got["urls_checked"] >= 2


def _site_env(site, db: str, broker: str, **extra: str) -> dict[str, str]:
    # The site links to hosts that never resolve; the network probe (tools/net/netcheck.py)
    # is the site itself, which answers: those hosts are unreachable, the network is up.
    return _env({"PAGETRAIL_ALLOW_HOSTS": f"127.0.0.1:{site.port}", "PAGETRAIL_RETRIES": "0",
                 "PAGETRAIL_NETWORK_PROBE_URL": f"http://127.0.0.1:{site.port}/network-probe",
                 "PAGETRAIL_PER_HOST_RPS": "0", "PAGETRAIL_PER_HOST_CONCURRENCY": "4",
                 "PAGETRAIL_CONCURRENCY": "4"}, db, broker, **extra)


async def _scan_in_process(site, db: str, item: dict) -> dict:
    from test_scan_jobs import view

    from pagetrail.store import Store
    from pagetrail.tools.workers.dispatch import InProcessDispatcher
    from pagetrail.tools.workers.jobs import job_key

    env = _site_env(site, db, "")
    env.pop("PAGETRAIL_BROKER_URL")
    store = Store(db)
    try:
        (record,) = await InProcessDispatcher(_settings(env), store).run("scan", [item])
        assert record.status == "done", record.error
        assert job_key("scan", item)  # the in-process scan's id is its own (a uuid)
        return view(store, record.result["scan_id"])
    finally:
        store.dispose()


def _scan_view(db: str, item: dict) -> dict:
    from test_scan_jobs import view

    from pagetrail.store import Store
    from pagetrail.tools.workers.jobs import job_key

    store = Store(db, migrate=False)
    try:
        return view(store, job_key("scan", item))
    finally:
        store.dispose()


async def test_a_site_scan_through_two_workers_equals_the_in_process_scan(
        pg_url, second_pg_url, redis_url, workers):
    """Depth, robots.txt, a sitemap page, dead links, a redirect onto a crawled page: the
    page jobs spread over two workers give the in-process scan's checks, states and report."""
    from test_scan_jobs import build_site
    from test_scanner import Site

    with Site() as site:
        build_site(site)
        item = {"target": site.url("/"), "request": "two-workers", "depth": 2,
                "max_pages": 500, "same_site_only": False}
        expected = await _scan_in_process(site, second_pg_url, item)
        env = _site_env(site, pg_url, redis_url)
        _migrate(pg_url)
        started = [workers(f"w{i}", env, queues="scans,pages") for i in (1, 2)]
        for worker in started:
            worker.wait_ready()
        (record,) = await _run("scan", [item], _settings(env), pg_url)
        assert record.status == "done", record.error
        assert _scan_view(pg_url, item) == expected
        assert all("pagetrail.page" in w.output() for w in started)  # both took pages


async def test_kill_9_of_a_worker_mid_scan_loses_no_page_and_doubles_no_row(
        pg_url, second_pg_url, redis_url, workers):
    """Slow pages; the victim is killed holding a page job: the survivor gets it back after
    the visibility timeout, and the scan ends as an in-process one, every URL checked once."""
    import time as clock

    from test_scanner import Site, page

    def slow(text: str, *links: tuple[str, str]):
        def answer(_path: str):
            clock.sleep(0.4)
            return page(text, *links)
        return answer

    with Site() as site:
        site.routes["/"] = page("Home", *((f"/p{i}.html", f"P{i}") for i in range(12)))
        for i in range(12):
            site.routes[f"/p{i}.html"] = slow(f"P{i}", (f"/gone/{i}.html", "gone"),
                                               ("/p0.html", "first"))
        item = {"target": site.url("/"), "request": "kill-9", "depth": 1, "max_pages": 500,
                "same_site_only": False}
        expected = await _scan_in_process(site, second_pg_url, item)
        env = _site_env(site, pg_url, redis_url)
        _migrate(pg_url)
        victim = workers("victim", env, queues="scans,pages")
        survivor = workers("survivor", env, queues="scans,pages")
        victim.wait_ready()
        survivor.wait_ready()
        scan = asyncio.create_task(_run("scan", [item], _settings(env), pg_url))

        def held() -> set[str]:  # page jobs the victim received and has not finished
            log = victim.log.read_text(errors="replace")
            return set(re.findall(r"pagetrail\.page\[([0-9a-f-]+)\] received", log)) - set(
                re.findall(r"pagetrail\.page\[([0-9a-f-]+)\] succeeded", log))

        deadline = time.monotonic() + 90
        while not held():
            assert time.monotonic() < deadline, victim.output()
            await asyncio.sleep(0.01)
        victim.kill()
        lost = held()
        (record,) = await asyncio.wait_for(scan, 300)
        assert record.status == "done", record.error
        assert _scan_view(pg_url, item) == expected  # no page lost, no check twice
        deadline = time.monotonic() + 60
        while not all(f"[{task}] succeeded" in survivor.output() for task in lost):
            assert time.monotonic() < deadline, (lost, survivor.output())
            await asyncio.sleep(0.2)
        assert max(_job_rows(pg_url).values()) == 1


async def test_digests_fan_out_one_job_per_channel(tiny_world, testbed, pg_url, redis_url,
                                                   workers):
    """`digest run` with a broker: each channel's digest is built by a worker and read back
    as the ChannelDigest the in-process run returns (recorded as a ready DigestRun); the
    page both channels watch is scanned once (two workers, the digest jobs at once)."""
    from pagetrail.store import Store
    from pagetrail.store.models import Watch
    from pagetrail.tools.workers.dispatch import CeleryDispatcher, digest_runner

    env = _env(testbed.env, pg_url, redis_url)
    _migrate(pg_url)
    store = Store(pg_url, migrate=False)
    with store.session() as s:
        s.add_all([Watch(channel="C1", target=tiny_world.blog_page),
                   Watch(channel="C2", target=tiny_world.blog_page)])
    from sqlalchemy import func, select

    from pagetrail.store.scans import Scan

    started = [workers(f"digester{i}", env, queues="digests") for i in (1, 2)]
    for worker in started:
        worker.wait_ready()
    try:
        runner = digest_runner(CeleryDispatcher(_settings(env), store, poll_seconds=0.2))
        digests = await runner(store, _settings(env), recover=False)
        with store.session() as s:
            scans = s.scalar(select(func.count()).select_from(Scan))
    finally:
        store.dispose()
    assert sorted(d.channel for d in digests) == ["C1", "C2"]
    assert all(d.run_id and d.scans and d.scans[0].target == tiny_world.blog_page
               for d in digests)
    assert scans == 1 and len({d.scans[0].scan_id for d in digests}) == 1
    logs = "".join(w.output() for w in started)
    assert len(re.findall(r"pagetrail\.digest\[[0-9a-f-]+\] received", logs)) == 2
