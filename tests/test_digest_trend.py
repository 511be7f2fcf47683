"""Weekly digests over a testbed world, three simulated weeks: content drift found and shown
("content changed" with the archived copy and a Robust Link), the link-health chart drawn
from the stored digests, uploaded to (loopback) Slack with files upload v2, written by
`pagetrail digest chart`, and its data equal to the digests' counts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from slack_fake import FakeSlack

from pagetrail.bot import blocks
from pagetrail.bot.digest_post import digest_view, post_due_digests
from pagetrail.bot.posting import SlackPoster, web_client
from pagetrail.store import DigestRun, open_store
from pagetrail.tools.recovery.memory import add_watch
from pagetrail.tools.scan.digest import stored_digest, to_html, to_markdown
from pagetrail.tools.scan.scanner import ScanOptions
from pagetrail.tools.scan.trend import health_counts, render_chart, stored_trend
from pagetrail.tools.testbed.runner import TestbedThread, start_in_thread
from pagetrail.tools.testbed.worldgen import WorldBuilder

SOURCE = "https://source.example/reading"
CHANGED = "https://target.example/changed"
RESTYLED = "https://target.example/restyled"
MISSING = "https://target.example/missing"
WEEKS = [datetime(2030, 3, 4, 9, 0, tzinfo=UTC) + timedelta(days=7 * i) for i in range(3)]
OLD_TEXT = ("The city council approved the new cycling network plan on Tuesday. Twelve "
            "kilometres of protected lanes will connect the harbour, the university and the "
            "central station, with work starting in spring and finishing within two years.")
NEW_TEXT = ("Our bakery offers sourdough loaves, croissants and seasonal fruit tarts. Order "
            "online before noon for same-day pickup, or visit the shop on Market Street for "
            "fresh coffee and pastries every morning except Sunday.")


def _page(title: str, text: str, *, links: str = "", nav: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
            f"<header>{nav}</header><main><article><h1>{title}</h1><p>{text}</p>"
            f"<p>{text}</p></article>{links}</main><footer>© Target</footer></body></html>")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("drift-world") / "w"
    b = WorldBuilder(root, name="drift")
    b.host("source.example")
    b.host("target.example")
    links = "".join(f'<a href="{u}">{name}</a> ' for u, name in
                    ((CHANGED, "cycling plan"), (RESTYLED, "cycling plan, restyled"),
                     (MISSING, "old report")))
    b.page("https://source.example/", _page("Source", "Home."))
    b.page(SOURCE, _page("Reading list", "Links we cite.", links=links))
    b.page("https://target.example/", _page("Target", "Home."))
    # Archived in 2029: the page that was linked. Live now: another page at the same URL.
    b.capture(CHANGED, "20290601000000", html=_page("Cycling network approved", OLD_TEXT))
    b.page(CHANGED, _page("Fresh bread daily", NEW_TEXT,
                          nav="<nav><a href='/'>Home</a> <a href='/shop'>Shop</a></nav>"))
    # Same article, new template (navigation, footer): not drifted.
    b.capture(RESTYLED, "20290601000000", html=_page("Cycling network approved", OLD_TEXT))
    b.page(RESTYLED, _page("Cycling network approved", OLD_TEXT,
                           nav="<nav><a href='/'>Home</a> <a href='/news'>News</a> "
                               "<a href='/about'>About us</a></nav>"))
    b.write()
    return root


@pytest.fixture(scope="module")
def testbed(world: Path) -> Iterator[TestbedThread]:
    handle = start_in_thread(world)
    yield handle
    handle.stop()


@pytest.mark.slow
def test_three_weeks_of_digests_with_drift_and_chart(testbed: TestbedThread, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeSlack().start()
    try:
        database = f"sqlite:///{tmp_path / 'digest.db'}"
        settings = testbed.settings(confirm_failures=2, confirm_days=3, retries=0,
                                    database_url=database)
        store = open_store(database)
        poster = SlackPoster(web_client("xoxb-test", fake.api_url))
        add_watch(store, "C1", SOURCE, by="U1")
        for week in WEEKS:
            outcomes = asyncio.run(post_due_digests(
                store, settings, poster, clock=lambda week=week: week,
                options=ScanOptions(depth=0, max_pages=3), recover=False))
            assert [o.status for o in outcomes] == ["posted"]
    finally:
        fake.stop()

    with store.session() as s:
        runs = s.query(DigestRun).filter(DigestRun.channel == "C1").order_by(DigestRun.id).all()
        summaries = [dict(r.summary) for r in runs]
    digests = [stored_digest(summary) for summary in summaries]
    assert all(d is not None for d in digests)

    # Drift: the page that became a bakery is found, the restyled article is not.
    first_scan = digests[0].scans[0]
    assert [d.url for d in first_scan.drifted] == [CHANGED]
    drift = first_scan.drifted[0]
    assert drift.similarity < 0.5 and drift.archived_title == "Cycling network approved"
    assert drift.live_title == "Fresh bread daily"
    assert "/20290601000000/" in drift.memento_url
    assert drift.robust_link == (f'<a href="{CHANGED}" data-versionurl="{drift.memento_url}" '
                                 f'data-versiondate="2029-06-01">cycling plan</a>')
    assert first_scan.drift_checked == 2  # the two working outbound links
    markdown = to_markdown(digests[0])
    assert "### Content changed" in markdown and drift.memento_url in markdown

    # Slack: the digest says so, with the archived copy to link instead.
    main = [m for m in _messages(fake) if "Link-rot digest" in m.get("text", "")]
    assert len(main) == 3
    text = json.dumps(main[0]["blocks"])
    assert "Content changed" in text and drift.memento_url in text
    assert "*1* content changed" in text
    assert blocks.validate_blocks(main[0]["blocks"]) == []

    # The chart: one upload per digest (files upload v2), a PNG drawn from the stored runs.
    completes = fake.posts("/api/files.completeUploadExternal")
    assert len(completes) == 3 and all(c.body.get("channel_id") == "C1" for c in completes)
    assert len(fake.uploads) == 3
    last_upload = fake.uploads[sorted(fake.uploads)[-1]]
    assert last_upload.startswith(b"\x89PNG\r\n\x1a\n")
    trend = stored_trend(store, "C1")
    assert render_chart(trend) == last_upload  # drawn from exactly this stored history

    # Its data are the digests' counts, week by week.
    assert trend.periods == ["2030-W10", "2030-W11", "2030-W12"]
    for index, digest in enumerate(digests):
        counts = health_counts(digest)
        assert {name: values[index] for name, values in trend.series.items()} == counts
        view = digest_view(digest)
        assert counts["confirmed"] == view.confirmed_dead
        assert counts["drifted"] == len(view.drifted)
        assert counts["fixed"] == view.fixed
    assert trend.series["suspect"] == [1, 0, 0]  # the missing page: suspect, then confirmed
    assert trend.series["confirmed"] == [0, 1, 1]
    assert trend.series["drifted"] == [1, 1, 1]
    assert trend.series["alive"][0] >= 2  # source pages and the restyled article
    assert summaries[-1]["chart"]["series"] == trend.to_dict()

    # `pagetrail digest chart` writes the same picture.
    from pagetrail.cli.main import main
    from pagetrail.tools.settings import get_settings

    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", database)
    get_settings.cache_clear()
    out = tmp_path / "chart.png"
    assert main(["digest", "chart", "--channel", "C1", "--out", str(out)]) == 0
    assert out.read_bytes() == last_upload
    assert "3 weeks" in capsys.readouterr().out
    assert main(["digest", "chart", "--channel", "C-none", "--out", str(out)]) == 2

    # The HTML report embeds the chart and the Robust Link; page text is escaped.
    page = to_html(digests[0], chart_png=last_upload)
    assert "data:image/png;base64," in page and drift.robust_link in page
    assert "“Fresh bread daily”" in page
    # `digest run --report-dir`: chart, Markdown showing it, HTML embedding it.
    for key, value in testbed.env.items():
        if key != "PAGETRAIL_DATABASE_URL":
            monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    reports = tmp_path / "reports"
    assert main(["digest", "run", "--no-recover", "--report-dir", str(reports)]) == 0
    names = sorted(path.name for path in reports.iterdir())
    assert [n.split("-C1-")[0] for n in names] == ["digest", "digest", "link-health"]
    markdown_file = next(reports.glob("digest-*.md")).read_text()
    png = next(reports.glob("link-health-*.png"))
    assert f"![Link health over the last weeks]({png.name})" in markdown_file
    assert "data:image/png;base64," in next(reports.glob("digest-*.html")).read_text()


def _messages(fake: FakeSlack) -> list[dict]:
    return [m for m in fake.messages("C1") if not m.get("thread_ts")]


def test_recover_link_and_fixlink_say_the_page_changed(testbed: TestbedThread,
                                                       tmp_path: Path) -> None:
    from pagetrail.tools import api

    database = f"sqlite:///{tmp_path / 'recover.db'}"
    settings = testbed.settings(database_url=database, retries=0)
    store = open_store(database)
    link_date = datetime(2029, 7, 1, tzinfo=UTC)

    async def run() -> tuple[object, object]:
        changed = await api.recover_link(CHANGED, link_date=link_date, settings=settings,
                                         store=store)
        restyled = await api.recover_link(RESTYLED, link_date=link_date, settings=settings,
                                          store=store)
        return changed, restyled

    changed, restyled = asyncio.run(run())
    assert changed.answer == "alive" and changed.drifted
    assert changed.reason.startswith("the link works but the page changed")
    assert changed.memento is not None and "/20290601000000/" in changed.memento.memento_url
    assert changed.drift.archived_title == "Cycling network approved"
    assert restyled.answer == "alive" and not restyled.drifted
    assert restyled.drift is not None and restyled.drift.similarity > 0.9
    # /fixlink's answer: the header says it, the archived copy is offered.
    payload = blocks.recovery_blocks(changed)
    assert blocks.validate_blocks(payload["blocks"]) == []
    assert payload["blocks"][0]["text"]["text"] == "The link works but the page changed"
    drift_block = next(b for b in payload["blocks"] if b.get("block_id") == "drift")
    assert json.loads(drift_block["accessory"]["value"])["c"] == changed.memento.memento_url
    assert "Fresh bread daily" in drift_block["text"]["text"]
    assert blocks.recovery_blocks(restyled)["blocks"][0]["text"]["text"] == "This link works"
