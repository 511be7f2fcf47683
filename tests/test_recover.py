"""recover() end to end through the loopback testbed (tiny world; see plugin_testbed.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from test_engines_support import Answer, local_server

from pagetrail.store import Store
from pagetrail.tools.errors import InvalidURL, RefusedAddress
from pagetrail.tools.evidence.queryplan import ALL_METHODS
from pagetrail.tools.net.urls import same_url
from pagetrail.tools.recovery.memory import record_pick
from pagetrail.tools.recovery.output import robust_link
from pagetrail.tools.recovery.pipeline import recover

pytestmark = pytest.mark.testbed


@pytest.fixture
def tb_store(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'recover.db'}")
    yield store
    store.dispose()


def live(recovery):
    return [c for c in recovery.candidates if c.kind != "archived"]


async def test_moved_page_is_found_and_explained(tiny_world, testbed_settings, tb_store):
    recovery = await recover(tiny_world.moved_from, source_url=tiny_world.blog_page,
                             settings=testbed_settings, store=tb_store)
    assert recovery.check is not None and recovery.check.verdict == "dead"
    assert recovery.answer == "moved"
    top = live(recovery)[0]
    assert same_url(top.url, tiny_world.moved_to)
    assert top.kind == "moved" and top.confidence >= 0.5
    assert top.scores.title_similarity == pytest.approx(1.0)
    assert top.evidence  # a sentence a person can read
    assert recovery.memento is not None and recovery.memento.document is not None
    assert recovery.evidence["title"] == "Solar farms double in a year"
    assert recovery.requests > 0 and recovery.seconds > 0
    # the archived copy is offered too, last
    assert recovery.candidates[-1].kind == "archived"
    html = robust_link(recovery)
    assert 'data-originalurl="' + tiny_world.moved_from in html
    assert "data-versionurl=" in html


async def test_repeat_is_answered_from_the_store(tiny_world, testbed_settings, tb_store):
    first = await recover(tiny_world.moved_from, settings=testbed_settings, store=tb_store)
    again = await recover(tiny_world.moved_from, settings=testbed_settings, store=tb_store)
    assert not first.cached and again.cached
    assert again.requests == 0
    assert [c.url for c in again.candidates] == [c.url for c in first.candidates]


async def test_gone_page_gets_its_archived_copy(tiny_world, testbed_settings, tb_store):
    recovery = await recover(tiny_world.archived_only, settings=testbed_settings, store=tb_store)
    assert recovery.answer == "archived"
    assert recovery.memento is not None
    assert tiny_world.archived_only in recovery.memento.memento_url
    assert all(c.confidence < 0.5 for c in live(recovery))


async def test_nothing_known_is_an_honest_none(tiny_world, testbed_settings, tb_store):
    recovery = await recover(tiny_world.nxdomain_url, settings=testbed_settings, store=tb_store)
    assert recovery.check is not None and recovery.check.verdict == "unreachable"
    assert recovery.answer == "none"
    assert recovery.reason
    assert not any(c.confidence >= 0.5 for c in live(recovery))


async def test_alive_link_is_not_recovered(tiny_world, testbed_settings, tb_store):
    recovery = await recover(tiny_world.slow_url, settings=testbed_settings, store=tb_store)
    assert recovery.answer == "alive"
    assert recovery.candidates == [] and recovery.queries == []


async def test_permanent_redirect_is_the_answer(tiny_world, testbed_settings, tb_store):
    recovery = await recover(tiny_world.live_redirect, settings=testbed_settings, store=tb_store)
    assert recovery.answer == "redirected"
    assert same_url(recovery.candidates[0].url, tiny_world.moved_to)


async def test_a_pick_changes_the_next_answer(tiny_world, testbed_settings, tb_store):
    before = await recover(tiny_world.archived_only, settings=testbed_settings, store=tb_store)
    assert not live(before) or not same_url(live(before)[0].url, tiny_world.wind_page)
    record_pick(tb_store, tiny_world.archived_only, tiny_world.wind_page, by="U1", via="test")
    after = await recover(tiny_world.archived_only, settings=testbed_settings, store=tb_store)
    assert not after.cached  # a person spoke since: answered afresh
    top = live(after)[0]
    assert same_url(top.url, tiny_world.wind_page)
    assert "PICK" in top.methods and top.scores.pick == 1.0


async def test_a_rejected_candidate_is_not_offered_again(tiny_world, testbed_settings, tb_store):
    record_pick(tb_store, tiny_world.moved_from, tiny_world.moved_to, rejected=True)
    recovery = await recover(tiny_world.moved_from, settings=testbed_settings, store=tb_store)
    assert not any(same_url(c.url, tiny_world.moved_to) for c in live(recovery))


async def test_archive_outage_still_answers_and_says_so(tiny_world, testbed_settings, tb_store):
    with socket.socket() as probe:  # a port nothing listens on: the archive is down
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = testbed_settings.model_copy(update={
        "archives": [f"http://127.0.0.1:{port}/world"], "retries": 0})
    recovery = await recover(tiny_world.moved_from, settings=settings, store=tb_store,
                             use_cache=False)
    assert any(f.engine == "archive" for f in recovery.failures)
    assert recovery.memento is None
    assert recovery.answer in ("moved", "replacement", "none")
    assert any(same_url(c.url, tiny_world.moved_to) for c in live(recovery))


async def test_one_archive_down_of_two_is_named_in_the_answer(tiny_world, testbed_settings,
                                                             tb_store):
    with socket.socket() as probe:  # a port nothing listens on: the first archive is down
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = f"http://127.0.0.1:{port}/world"
    settings = testbed_settings.model_copy(update={
        "archives": [down, *testbed_settings.archives], "retries": 0})
    recovery = await recover(tiny_world.moved_from, settings=settings, store=tb_store,
                             use_cache=False)
    assert recovery.memento is not None  # the second archive answered
    errors = [f.error for f in recovery.failures if f.engine == "archive"]
    assert errors and all(e.startswith(f"{down}: archive_unavailable: ") for e in errors)
    assert len(errors) == len(set(errors))


async def test_search_engine_rate_limiting_still_answers(tiny_world, testbed_settings, tb_store):
    with local_server() as limited:
        limited.routes["/search"] = Answer(429, "slow down", {"Retry-After": "120"})
        settings = testbed_settings.model_copy(update={"searxng_url": limited.base})
        # Without the archived redirect: that direct evidence would answer before any search.
        recovery = await recover(tiny_world.moved_from, settings=settings, store=tb_store,
                                 use_cache=False,
                                 methods=frozenset(ALL_METHODS) - {"REDIRECT"})
    failed = {f.engine for f in recovery.failures}
    assert "searxng" in failed
    assert recovery.answer == "moved"  # the site's own sitemap and the archive still work


async def test_bad_input_is_a_named_error(testbed_settings, tb_store):
    with pytest.raises(InvalidURL):
        await recover("javascript:alert(1)", settings=testbed_settings, store=tb_store)
    with pytest.raises(RefusedAddress):
        await recover("http://169.254.169.254/latest/meta-data/", settings=testbed_settings,
                      store=tb_store)


def test_cli_recover_json_and_pick(tiny_world, testbed_env, tmp_path):
    import os

    env = {**os.environ, **testbed_env,
           "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    run = subprocess.run([sys.executable, "-m", "pagetrail.cli", "recover", tiny_world.moved_from,
                          "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["schema_version"] == 1 and answer["answer"] == "moved"
    bad = subprocess.run([sys.executable, "-m", "pagetrail.cli", "recover", "not a url"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
