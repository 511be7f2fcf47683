"""The Learn step (FABLE): what a recovery sees move is remembered and teaches the site's
rewrite rule to the next dead URL of the same site — through a loopback world whose pages
all moved by one rule (/guide/<slug> → /handbook/<slug>)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pagetrail.tools.models import ArchivedRedirect, Candidate, CheckResult, Recovery, Scores
from pagetrail.tools.net.urls import same_url
from pagetrail.tools.recovery.memory import moves_for_site, record_move
from pagetrail.tools.recovery.pipeline import learned_moves, recover
from pagetrail.tools.testbed.runner import TestbedThread, start_in_thread
from pagetrail.tools.testbed.worldgen import WorldBuilder

SITE = "https://docs.example"
TOPICS = {
    "alpha-widgets": ("Alpha widgets: assembly and care",
                      "Alpha widgets are assembled from brass gears, calibrated springs and a "
                      "walnut housing; oil the gears monthly and keep the springs dry."),
    "beta-gadgets": ("Beta gadgets for the greenhouse",
                     "Beta gadgets measure humidity, soil warmth and daylight in greenhouses; "
                     "mount them at bench height, away from the misting nozzles."),
    "gamma-sprockets": ("Gamma sprockets in bicycle hubs",
                        "Gamma sprockets mesh with internal hub gears; replace a worn sprocket "
                        "together with the chain, and grease the pawls sparingly."),
}


def _page(title: str, text: str) -> str:
    body = " ".join([text] * 6)
    return (f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{body}</p></body></html>")


@pytest.fixture(scope="module")
def moved_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestbedThread]:
    root: Path = tmp_path_factory.mktemp("learn-world") / "w"
    world = WorldBuilder(root, name="learn")
    world.host("docs.example", not_found="404")
    world.page(f"{SITE}/", "<html><head><title>Docs</title></head><body>" + "".join(
        f'<a href="/handbook/{slug}">{title}</a>' for slug, (title, _t) in TOPICS.items())
        + "</body></html>")
    for slug, (title, text) in TOPICS.items():
        world.page(f"{SITE}/handbook/{slug}", _page(title, text))
        world.capture(f"{SITE}/guide/{slug}", "20190601000000", html=_page(title, text))
    world.write()
    handle = start_in_thread(root)
    try:
        yield handle
    finally:
        handle.stop()


async def test_a_confirmed_move_teaches_the_next_dead_url_before_any_search(moved_site, store):
    queries: list[str] = []
    index = moved_site.index
    answer = index.answer

    def spy(request):  # the real search server, observed: which queries reached it
        queries.append(request.target)
        return answer(request)

    index.answer = spy
    try:
        settings = moved_site.settings()
        first = await recover(f"{SITE}/guide/alpha-widgets", settings=settings, store=store)
        assert first.answer == "moved"
        assert same_url(first.candidates[0].url, f"{SITE}/handbook/alpha-widgets")
        learned = moves_for_site(store, SITE)
        assert [(m.new_url, m.source) for m in learned] == [
            (f"{SITE}/handbook/alpha-widgets", "confirmed recovery")]
        assert not [f for f in first.failures if f.engine == "store"]

        queries.clear()
        second = await recover(f"{SITE}/guide/beta-gadgets", settings=settings, store=store)
    finally:
        index.answer = answer
    assert second.answer == "moved"
    top = second.candidates[0]
    assert same_url(top.url, f"{SITE}/handbook/beta-gadgets")
    assert "INFER" in top.methods
    assert second.queries == []  # no engine (site, CDX, web) was asked
    assert queries == []  # and the search server saw nothing


def _recovery(answer: str, **fields) -> Recovery:
    return Recovery(url=f"{SITE}/guide/a", answer=answer, **fields)


def test_learned_moves_name_their_source() -> None:
    check = CheckResult(url=f"{SITE}/guide/a", verdict="redirected", status=301,
                        final_url=f"{SITE}/handbook/a")
    assert learned_moves(_recovery("redirected", check=check), []) == [
        (f"{SITE}/guide/a", f"{SITE}/handbook/a", "live redirect")]
    archived = ArchivedRedirect(original_url=f"{SITE}/guide/a", target_url=f"{SITE}/h/a",
                                datetime="2020-01-01T00:00:00Z", status=301,
                                memento_url="http://archive/x")
    sure = Candidate(url=f"{SITE}/handbook/a", kind="moved", confidence=0.95,
                     methods=["TI"], scores=Scores())
    unsure = sure.model_copy(update={"confidence": 0.6})
    assert learned_moves(_recovery("moved", candidates=[sure]), [archived]) == [
        (f"{SITE}/guide/a", f"{SITE}/h/a", "archived redirect"),
        (f"{SITE}/guide/a", f"{SITE}/handbook/a", "confirmed recovery")]
    assert learned_moves(_recovery("moved", candidates=[unsure]), []) == []
    replacement = sure.model_copy(update={"kind": "replacement"})
    assert learned_moves(_recovery("replacement", candidates=[replacement]), []) == []


def test_every_learned_source_is_one_the_store_accepts(store) -> None:
    check = CheckResult(url=f"{SITE}/guide/a", verdict="redirected", status=301,
                        final_url=f"{SITE}/handbook/a")
    archived = ArchivedRedirect(original_url=f"{SITE}/guide/b", target_url=f"{SITE}/h/b",
                                datetime="2020-01-01T00:00:00Z", status=301,
                                memento_url="http://archive/x")
    sure = Candidate(url=f"{SITE}/handbook/c", kind="moved", confidence=0.95,
                     methods=["TI"], scores=Scores())
    moves = (learned_moves(_recovery("redirected", check=check), [archived])
             + learned_moves(_recovery("moved", candidates=[sure]), []))
    for old, new, source in moves:
        assert record_move(store, old, new, source=source) is not None


async def test_a_store_failure_is_a_named_partial_failure_of_the_answer(moved_site, tmp_path):
    from sqlalchemy import text

    from pagetrail.store import Store

    broken = Store(f"sqlite:///{tmp_path / 'broken.db'}")
    try:
        with broken.session() as session:  # a database that lost a table (a bad migration)
            session.execute(text("DROP TABLE moves"))
        recovery = await recover(f"{SITE}/guide/gamma-sprockets",
                                 settings=moved_site.settings(), store=broken)
    finally:
        broken.dispose()
    assert recovery.answer == "moved"  # the web still answers
    errors = [f.error for f in recovery.failures if f.engine == "store"]
    assert any(e.startswith("reading known moves: StoreRefused") for e in errors), errors
    assert any(e.startswith("recording the confirmed recovery: StoreRefused")
               for e in errors), errors
