"""Content drift (tools/linkcheck/drift.py): pure measures, and detect_drift against a served world."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from pagetrail.tools.content.document import parse_document
from pagetrail.tools.linkcheck.drift import compare, content_similarity, detect_drift
from pagetrail.tools.models import Memento
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.testbed.runner import start_in_thread
from pagetrail.tools.testbed.worldgen import WorldBuilder

SOLAR = ("Solar farms doubled their output in a single year across the midwest, as "
         "photovoltaic module prices kept falling and utilities signed long contracts with "
         "developers. Grid operators say the new capacity arrives mostly in spring and summer, "
         "when demand for cooling peaks, and that storage batteries now follow the farms. ")
BREAD = ("Sourdough bread needs only flour, water and salt, but the starter takes a week of "
         "daily feeding before it rises reliably. Bakers fold the dough every half hour, let it "
         "proof overnight in the fridge and bake it in a hot covered pot for a crackling crust. ")
WIND = ("Offshore wind turbines now reach fifteen megawatts each; the north sea hosts the "
        "largest parks, and cables carry the power ashore to substations near the coast. ")


def page(title: str, text: str, *, template: str = "a") -> str:
    """An article in one of two site templates (navigation, sidebar and footer differ)."""
    if template == "a":
        chrome = ('<nav><a href="/">Home</a> <a href="/news">News</a> <a href="/about">About us'
                  "</a></nav>", "<footer>Copyright 2019 Paper Example. All rights reserved."
                  "</footer>")
    else:
        chrome = ('<header><ul><li><a href="/">Start</a></li><li><a href="/shop">Shop and '
                  'subscriptions</a></li><li><a href="/events">Events calendar</a></li></ul>'
                  "</header>", '<aside><h3>Newsletter</h3><p>Sign up for our weekly newsletter '
                  "with offers from partners.</p></aside><footer>© 2026 Paper Media Group, "
                  "imprint, privacy, cookie settings</footer>")
    body = "".join(f"<p>{text}</p>" for _ in range(3))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<meta property='og:site_name' content='Paper'><title>{title} - Paper"
            f"</title></head><body>{chrome[0]}<main><article><h1>{title}</h1>{body}"
            f"</article></main>{chrome[1]}</body></html>")


# --- pure ------------------------------------------------------------------------------------


def test_same_text_is_similar_and_other_text_is_not():
    assert content_similarity(SOLAR, SOLAR) == 1.0
    assert content_similarity(SOLAR, BREAD) < 0.2
    assert content_similarity("", "") == 1.0
    assert content_similarity(SOLAR, "") == 0.0


def test_a_new_site_template_is_not_drift():
    old = parse_document(page("Solar farms double", SOLAR, template="a"), "https://p.example/s")
    new = parse_document(page("Solar farms double", SOLAR, template="b"), "https://p.example/s")
    assert content_similarity(old.text, new.text) >= 0.95


def _memento(url: str) -> Memento:
    return Memento(original_url=url, memento_url=url, raw_url=url, archive="a",
                   datetime=datetime(2019, 6, 1, tzinfo=UTC))


def test_compare_uses_threshold_and_title_witness():
    url = "https://p.example/s"
    old = parse_document(page("Solar farms double", SOLAR), url)
    same = parse_document(page("Solar farms double", SOLAR, template="b"), url)
    other = parse_document(page("Baking sourdough at home", BREAD), url)
    stable = compare(url, old, same, threshold=0.5, memento=_memento(url))
    assert not stable.drifted and stable.similarity >= 0.95
    assert stable.archived_title == stable.live_title
    assert stable.archived_title.startswith("Solar farms double")
    drifted = compare(url, old, other, threshold=0.5, memento=_memento(url))
    assert drifted.drifted and drifted.similarity < 0.5
    # The threshold is the caller's: above the same page's similarity, that is drifted too.
    assert compare(url, old, same, threshold=stable.similarity + 0.01,
                   memento=_memento(url)).drifted
    # Another page (unrelated title) quoting most of the old text: drifted, although its
    # text alone is above the threshold (it is not near-identical).
    quoting = parse_document(page("Baking sourdough at home", SOLAR + BREAD[:100]), url)
    quoted = compare(url, old, quoting, threshold=0.5, memento=_memento(url))
    assert 0.5 <= quoted.similarity < 0.95 and quoted.title_similarity == 0.0
    assert quoted.drifted


def test_same_words_in_another_order_are_not_the_same_text():
    """Word order counts: the old words shuffled (or mixed into another text) keep the
    content-term cosine near 1, the shingles do not."""
    words = (SOLAR * 2).split()
    shuffled = " ".join(words[i] for i in sorted(range(len(words)), key=lambda i: (i * 7919) % len(words)))
    from pagetrail.tools.content.similarity import cosine_text

    assert cosine_text(SOLAR * 2, shuffled) > 0.95
    assert content_similarity(SOLAR * 2, shuffled) < 0.3


# --- against a served world -----------------------------------------------------------------

HOST = "https://www.paper.example"


@pytest.fixture(scope="module")
def drift_bed(tmp_path_factory):
    b = WorldBuilder(tmp_path_factory.mktemp("drift") / "w", name="drift", format=2)
    b.host("www.paper.example")
    b.page(f"{HOST}/", page("Paper", WIND))
    b.page(f"{HOST}/stable", page("Solar farms double", SOLAR, template="b"))
    b.capture(f"{HOST}/stable", "20190601000000", html=page("Solar farms double", SOLAR))
    b.page(f"{HOST}/drifted", page("Baking sourdough at home", BREAD, template="b"))
    b.capture(f"{HOST}/drifted", "20190601000000", html=page("Solar farms double", SOLAR))
    b.page(f"{HOST}/uncaptured", page("Offshore wind", WIND))
    # Revised: linked in 2019 about solar, rewritten about bread in 2022 (captured both times).
    b.page(f"{HOST}/revised", page("Baking sourdough at home", BREAD, template="b"))
    b.capture(f"{HOST}/revised", "20190601000000", html=page("Solar farms double", SOLAR))
    b.capture(f"{HOST}/revised", "20220601000000", html=page("Baking sourdough at home", BREAD))
    b.capture(f"{HOST}/removed", "20190601000000", html=page("Solar farms double", SOLAR))
    # Captured, and now failing with a server error on every try (a flaky host's bad minute).
    b.page(f"{HOST}/failing", page("Solar farms double", SOLAR), status=503)
    b.capture(f"{HOST}/failing", "20190601000000", html=page("Solar farms double", SOLAR))
    handle = start_in_thread(b.write())
    try:
        yield handle
    finally:
        handle.stop()


def _detect(bed, url: str, since: datetime | None):
    settings = bed.settings()

    async def go():
        async with Fetcher(settings) as fetcher:
            return await detect_drift(url, since=since, fetcher=fetcher, settings=settings)

    return asyncio.run(go())


LINKED = datetime(2019, 7, 1, tzinfo=UTC)


def test_stable_page_in_a_new_template_is_not_drifted(drift_bed):
    drift = _detect(drift_bed, f"{HOST}/stable", LINKED)
    assert drift is not None and not drift.drifted
    assert drift.threshold == drift_bed.settings().drift_threshold
    assert drift.memento.datetime.year == 2019 and drift.memento.document is None


def test_page_serving_other_content_is_drifted(drift_bed):
    drift = _detect(drift_bed, f"{HOST}/drifted", LINKED)
    assert drift is not None and drift.drifted
    assert drift.archived_title.startswith("Solar farms double")
    assert drift.live_title.startswith("Baking sourdough at home")


def test_capture_from_the_link_date_is_the_reference(drift_bed):
    at_link = _detect(drift_bed, f"{HOST}/revised", LINKED)
    assert at_link is not None and at_link.drifted and at_link.memento.datetime.year == 2019
    latest = _detect(drift_bed, f"{HOST}/revised", None)
    assert latest is not None and not latest.drifted and latest.memento.datetime.year == 2022


def test_nothing_to_compare_is_none(drift_bed):
    assert _detect(drift_bed, f"{HOST}/uncaptured", LINKED) is None
    assert _detect(drift_bed, f"{HOST}/removed", LINKED) is None  # the live page is a 404


def test_a_live_page_that_fails_is_an_error_not_a_stable_page(drift_bed):
    """A server error after the retries is no comparison: raised, so the answer names it,
    never read as "not drifted"."""
    from pagetrail.tools.errors import FetchFailed

    with pytest.raises(FetchFailed, match="503 after retries: drift not checked"):
        _detect(drift_bed, f"{HOST}/failing", LINKED)


def test_check_reports_drift_when_asked(drift_bed):
    from pagetrail.tools import api

    settings = drift_bed.settings()
    drifted = asyncio.run(api.check_link(f"{HOST}/drifted", settings=settings, drift=True,
                                         since=LINKED))
    assert drifted.verdict == "ok" and drifted.drifted
    assert drifted.drift is not None and drifted.drift.memento.datetime.year == 2019
    stable = asyncio.run(api.check_link(f"{HOST}/stable", settings=settings, drift=True))
    assert stable.drift is not None and not stable.drifted
    plain = asyncio.run(api.check_link(f"{HOST}/drifted", settings=settings))
    assert plain.drift is None and not plain.drifted  # only when asked: it costs archive calls


def test_recover_reports_a_working_drifted_link(drift_bed):
    from pagetrail.tools.recovery.pipeline import recover

    settings = drift_bed.settings()
    recovery = asyncio.run(recover(f"{HOST}/drifted", link_date=LINKED, settings=settings,
                                   use_cache=False))
    assert recovery.answer == "alive" and recovery.drifted
    assert recovery.reason.startswith("the link works but the page changed")
    assert recovery.memento is not None and recovery.memento.datetime.year == 2019
    assert json.loads(recovery.model_dump_json())["drifted"] is True
    stable = asyncio.run(recover(f"{HOST}/stable", link_date=LINKED, settings=settings,
                                 use_cache=False))
    assert stable.answer == "alive" and stable.drift is not None and not stable.drifted
