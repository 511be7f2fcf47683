"""PostgreSQL stopped (`pg_ctl stop -m fast`) in the middle of a 40-link `recover --batch`
and started again: in one process and on two Celery workers the batch rides it out (the
store's fault policy, store/faults.py); past the fault budget it stops with the named error,
exit 2, nothing recorded as failed, and a rerun completes. Real processes throughout: the
batch command, the workers, PostgreSQL (a cluster of the test's own), Redis."""

from __future__ import annotations

import time

import pytest
from distributed_helpers import Worker
from faults_helpers import (
    answers,
    assert_every_link_answered_once,
    batch_process,
    env_for,
    finished_jobs,
    first_pass_jobs,
    forty_links,
    job_statuses,
    own_postgres_cluster,
    wait_for_jobs,
    write_batch,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

OUTAGE = 20  # seconds PostgreSQL stays stopped
INTERRUPT_AT = 12  # jobs answered before PostgreSQL is stopped


@pytest.fixture(scope="module")
def own_postgres():
    yield from own_postgres_cluster()


def _interrupt(pg, db: str, process) -> int:
    """Stop PostgreSQL once INTERRUPT_AT jobs are answered; start it OUTAGE s later.
    Returns how many were answered when it stopped."""
    answered = wait_for_jobs(db, INTERRUPT_AT, process)
    pg.halt()
    try:
        time.sleep(OUTAGE)
    finally:
        pg.resume()
    return answered


def _migrated(db: str) -> None:
    from pagetrail.store import Store

    Store(db).dispose()


def test_postgres_stopped_20s_mid_batch_in_one_process(own_postgres, testbed, tiny_world,
                                                       tmp_path) -> None:
    db = own_postgres.new_database()
    items = forty_links(tiny_world)
    batch, out, log = write_batch(tmp_path / "links.jsonl", items), tmp_path / "out.jsonl", \
        tmp_path / "stderr.log"
    env = env_for(testbed.env, db)
    process = batch_process(batch, out, env, log)
    answered = _interrupt(own_postgres, db, process)
    assert answered < len(items)  # mid-batch
    assert process.wait(300) == 0, log.read_text()
    stderr = log.read_text()
    assert "waiting for the database" in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert_every_link_answered_once(db, items, out)
    # A rerun finds all 40 stored: nothing is recovered again.
    rerun = batch_process(batch, tmp_path / "again.jsonl", env, tmp_path / "again.log")
    assert rerun.wait(120) == 0, (tmp_path / "again.log").read_text()
    assert answers(tmp_path / "again.jsonl") == answers(out)
    assert_every_link_answered_once(db, items)


def test_postgres_stopped_20s_mid_batch_on_two_workers(own_postgres, testbed, tiny_world,
                                                       redis_url, tmp_path) -> None:
    db = own_postgres.new_database()
    _migrated(db)
    items = forty_links(tiny_world)
    batch, out, log = write_batch(tmp_path / "links.jsonl", items), tmp_path / "out.jsonl", \
        tmp_path / "stderr.log"
    env = env_for(testbed.env, db, PAGETRAIL_BROKER_URL=redis_url,
                  PAGETRAIL_BROKER_VISIBILITY_TIMEOUT="120",
                  PAGETRAIL_RECOVER_TIME_LIMIT="90")
    workers = [Worker(name, env, tmp_path, concurrency=2, via_cli=True)
               for name in ("w1", "w2")]
    try:
        for worker in workers:
            worker.wait_ready()
        process = batch_process(batch, out, env, log)
        answered = _interrupt(own_postgres, db, process)
        assert answered < len(items)
        assert process.wait(300) == 0, (log.read_text(), workers[0].output())
        assert_every_link_answered_once(db, items, out)
        logs = "".join(worker.log.read_text(errors="replace") for worker in workers)
        assert "failed for good" not in logs, logs[-4000:]
        assert "waiting for the database" in logs + log.read_text()
    finally:
        for worker in workers:
            worker.stop()


def test_workers_put_back_jobs_that_outlast_their_budget(own_postgres, testbed, tiny_world,
                                                         redis_url, tmp_path) -> None:
    """Workers with a 2 s budget, PostgreSQL stopped for 20 s: their jobs meet the database
    away past the budget and are put back for redelivery, never failed; the dispatcher
    (default budget) waits, and the batch completes when PostgreSQL is back."""
    db = own_postgres.new_database()
    _migrated(db)
    items = forty_links(tiny_world)
    batch, out, log = write_batch(tmp_path / "links.jsonl", items), tmp_path / "out.jsonl", \
        tmp_path / "stderr.log"
    env = env_for(testbed.env, db, PAGETRAIL_BROKER_URL=redis_url,
                  PAGETRAIL_BROKER_VISIBILITY_TIMEOUT="120",
                  PAGETRAIL_RECOVER_TIME_LIMIT="90")
    worker = Worker("short", {**env, "PAGETRAIL_STORE_FAULT_BUDGET": "2"}, tmp_path,
                    concurrency=2, via_cli=True)
    try:
        worker.wait_ready()
        process = batch_process(batch, out, env, log)
        assert _interrupt(own_postgres, db, process) < len(items)
        assert process.wait(300) == 0, (log.read_text(), worker.output())
        assert_every_link_answered_once(db, items, out)
        output = worker.log.read_text(errors="replace")
        assert "put back for redelivery" in output, output[-4000:]
        assert "failed for good" not in output, output[-4000:]
    finally:
        worker.stop()


def test_the_dispatcher_killed_and_rerun_mid_batch_on_two_workers(
        own_postgres, testbed, tiny_world, redis_url, tmp_path) -> None:
    """`recover --batch` with a broker, killed (-9) mid-batch and run again: the rerun sends
    only what is not answered (the jobs already queued may run twice: they find their
    answer), the batch completes, every link answered once, no row twice."""
    db = own_postgres.new_database()
    _migrated(db)
    items = forty_links(tiny_world)
    batch, out = write_batch(tmp_path / "links.jsonl", items), tmp_path / "out.jsonl"
    env = env_for(testbed.env, db, PAGETRAIL_BROKER_URL=redis_url,
                  PAGETRAIL_BROKER_VISIBILITY_TIMEOUT="120",
                  PAGETRAIL_RECOVER_TIME_LIMIT="90")
    workers = [Worker(name, env, tmp_path, concurrency=2, via_cli=True)
               for name in ("d1", "d2")]
    try:
        for worker in workers:
            worker.wait_ready()
        first = batch_process(batch, out, env, tmp_path / "first.log")
        wait_for_jobs(db, INTERRUPT_AT, first)
        first.kill()
        first.wait(10)
        assert finished_jobs(db) < len(items)  # killed mid-batch
        rerun = batch_process(batch, out, env, tmp_path / "rerun.log")
        assert rerun.wait(300) == 0, (tmp_path / "rerun.log").read_text()
        assert_every_link_answered_once(db, items, out)
    finally:
        for worker in workers:
            worker.stop()


def test_an_outage_past_the_budget_stops_with_the_named_error_and_resumes(
        own_postgres, testbed, tiny_world, tmp_path) -> None:
    db = own_postgres.new_database()
    items = forty_links(tiny_world)
    batch, out, log = write_batch(tmp_path / "links.jsonl", items), tmp_path / "out.jsonl", \
        tmp_path / "stderr.log"
    env = env_for(testbed.env, db, PAGETRAIL_STORE_FAULT_BUDGET="3")
    process = batch_process(batch, out, env, log)
    wait_for_jobs(db, 5, process)
    own_postgres.halt()
    try:
        code = process.wait(120)
    finally:
        own_postgres.resume()
    stderr = log.read_text()
    assert code == 2, stderr
    assert "store_unavailable" in stderr and "Traceback" not in stderr, stderr
    statuses = job_statuses(db)
    assert 5 <= sum(statuses.values()) < len(items)
    assert {status for _, status in statuses} == {"done"}  # nothing failed for the outage
    rerun = batch_process(batch, out, env, tmp_path / "again.log")
    assert rerun.wait(300) == 0, (tmp_path / "again.log").read_text()
    assert first_pass_jobs(db, items) == len(items)
    assert_every_link_answered_once(db, items, out)


async def test_mcp_tools_during_an_outage_answer_one_line_then_serve(
        own_postgres, testbed, tiny_world) -> None:
    """The MCP server (the SDK's real client, in memory) with PostgreSQL stopped: each tool
    answers with one line naming the fault within its budget; once PostgreSQL is back the
    same session answers normally, and nothing was stored twice."""
    from mcp import Client
    from test_mcp_inprocess import structured

    from pagetrail.server.app import build_server
    from pagetrail.store import Store
    from pagetrail.store.picks import picks_on_host
    from pagetrail.tools.net.urls import site_of

    store = Store(own_postgres.new_database(), fault_budget=2)
    pick = {"dead_url": tiny_world.moved_from, "chosen_url": tiny_world.moved_to}
    try:
        async with Client(build_server(testbed.settings(), store)) as client:
            own_postgres.halt()
            try:
                for name, arguments in [("record_pick", pick),
                                        ("recover_link", {"url": tiny_world.moved_from})]:
                    result = await client.call_tool(name, arguments)
                    text = result.content[0].text if result.content else ""
                    assert result.is_error, (name, text)
                    assert "store_unavailable: the database did not answer" in text, text
                    assert "\n" not in text.strip() and "Traceback" not in text
            finally:
                own_postgres.resume()
            assert structured(await client.call_tool("record_pick", pick))["chosen_url"] == \
                tiny_world.moved_to
            answer = structured(await client.call_tool("recover_link",
                                                       {"url": tiny_world.moved_from}))
            assert answer["answer"] == "moved"
            assert [f for f in answer.get("failures", []) if f["engine"] == "store"] == []
        picks = picks_on_host(store, site_of(tiny_world.moved_from))
        assert len(picks) == 1  # the pick made during the outage was refused, not kept
    finally:
        store.dispose()


def test_fixlink_during_an_outage_answers_one_line_then_serves(own_postgres, testbed,
                                                               tiny_world) -> None:
    """The Slack app (signed HTTP to the running app, Slack's side a loopback recorder) with
    PostgreSQL stopped: /fixlink is acknowledged in time and answered with one line naming
    the fault; once PostgreSQL is back the same app answers normally."""
    import json

    from slack_fake import FakeSlack, ServerThread, command_body, post_signed

    from pagetrail.bot.app import build_app
    from pagetrail.bot.server import asgi_app
    from pagetrail.store import Store

    secret = "test-signing-secret"
    fake = FakeSlack().start()
    store = Store(own_postgres.new_database(), fault_budget=2)
    settings = testbed.settings(slack_api_url=fake.api_url, SLACK_BOT_TOKEN="xoxb-test",
                                SLACK_SIGNING_SECRET=secret, database_url=store.url,
                                retries=0, recovery_seconds=20.0)
    server = ServerThread(asgi_app(build_app(settings, store))).start()

    def fixlink(name: str) -> dict:
        body = command_body("/fixlink", f"{tiny_world.moved_from} solar farm boom",
                            response_url=fake.response_url(name), user="U1", channel="C1")
        started = time.monotonic()
        response = post_signed(server.url, secret, body)
        assert response.status_code == 200 and time.monotonic() - started < 3.0
        return fake.wait_for(lambda: fake.posts(f"/response/{name}"), 60)[0].body

    try:
        own_postgres.halt()
        try:
            during = fixlink("during")
        finally:
            own_postgres.resume()
        assert during["response_type"] == "ephemeral"  # to the asker only
        assert during["text"].startswith("the database did not answer for 2 s")
        assert "\n" not in during["text"]
        assert "(store_unavailable)" in json.dumps(during["blocks"])
        after = fixlink("after")
        assert after["response_type"] == "in_channel"
        assert tiny_world.moved_to in json.dumps(after)
    finally:
        server.stop()
        fake.stop()
        store.dispose()


PAGES = 30  # pages of the loopback site the scan and digest tests crawl, 3 links each


def _site_routes(site) -> None:
    from test_scanner import page

    site.routes["/"] = page("Home", *((f"/p{i}.html", f"P{i}") for i in range(PAGES)))
    for i in range(PAGES):
        site.routes[f"/p{i}.html"] = page(f"P{i}", ("/", "Home"),
                                          *((f"/p{i}/{j}.html", "x") for j in range(3)))


def _checks_per_url(store) -> list[tuple[str, int]]:
    from sqlalchemy import func, select

    from pagetrail.store.models import LinkCheck

    with store.session() as s:
        return list(s.execute(select(LinkCheck.url, func.count()).group_by(LinkCheck.url)))


async def _outage_once_checked(pg, store, task, count: int = 10) -> None:
    """Stop PostgreSQL once `count` URLs are recorded as checked; start it OUTAGE s later;
    the task must still be waiting then."""
    import asyncio

    while len(await asyncio.to_thread(_checks_per_url, store)) < count:
        assert not task.done(), task
        await asyncio.sleep(0.2)
    await asyncio.to_thread(pg.halt)
    try:
        await asyncio.sleep(OUTAGE)
        assert not task.done()  # it waits for the database
    finally:
        await asyncio.to_thread(pg.resume)


async def test_postgres_stopped_20s_mid_scan(own_postgres) -> None:
    """An in-process site scan (real loopback site) with PostgreSQL stopped for 20 s while
    it records: it waits and completes; every page crawled and every URL checked once, no
    problem recorded for the outage, no row twice."""
    import asyncio

    from test_scanner import Site, fast_settings

    from pagetrail.store import Store
    from pagetrail.tools.scan.scanner import ScanOptions, scan

    with Site() as site:
        _site_routes(site)
        store = Store(own_postgres.new_database())
        settings = fast_settings(per_host_rps=8, per_host_concurrency=2, concurrency=2,
                                 spn_on_scan=False)
        try:
            scanning = asyncio.create_task(scan(site.url("/"), store=store, settings=settings,
                                                options=ScanOptions(depth=1, max_pages=500)))
            await _outage_once_checked(own_postgres, store, scanning)
            result = await asyncio.wait_for(scanning, 180)
            urls = 1 + PAGES + PAGES * 3
            assert result.pages_crawled == PAGES + 1
            assert result.urls_checked == urls
            assert result.problems == []
            per_url = _checks_per_url(store)
            assert len(per_url) == urls and max(n for _, n in per_url) == 1
            assert max(site.hits.values()) == 1  # nothing fetched twice for the outage
        finally:
            store.dispose()


async def test_postgres_stopped_20s_mid_digest_run(own_postgres) -> None:
    """A digest run (two channels watching one loopback site) with PostgreSQL stopped for
    20 s during its scan: it waits and completes; one digest per channel, no target error,
    one run recorded per channel, every URL checked once."""
    import asyncio

    from sqlalchemy import select
    from test_scanner import T0, Clock, Site, fast_settings

    from pagetrail.store import DigestRun, Store, Watch
    from pagetrail.tools.scan.digest import run_digests
    from pagetrail.tools.scan.scanner import ScanOptions

    with Site() as site:
        _site_routes(site)
        store = Store(own_postgres.new_database())
        settings = fast_settings(per_host_rps=8, per_host_concurrency=2, concurrency=2,
                                 spn_on_scan=False, drift_per_digest=0)
        with store.session() as s:
            s.add_all([Watch(channel="C1", target=site.url("/")),
                       Watch(channel="C2", target=site.url("/"))])
        try:
            running = asyncio.create_task(run_digests(
                store, settings, clock=Clock(T0), options=ScanOptions(depth=1),
                recover=False))
            await _outage_once_checked(own_postgres, store, running)
            digests = await asyncio.wait_for(running, 180)
            assert sorted(d.channel for d in digests) == ["C1", "C2"]
            assert [scan.error for d in digests for scan in d.scans] == ["", ""]
            with store.session() as s:
                runs = s.scalars(select(DigestRun)).all()
                assert sorted(r.channel for r in runs) == ["C1", "C2"]
            per_url = _checks_per_url(store)
            assert len(per_url) == 1 + PAGES + PAGES * 3 and max(n for _, n in per_url) == 1
        finally:
            store.dispose()
