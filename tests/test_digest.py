"""Digests: built from real scans of a local site, rendered, and run for watched channels."""

from __future__ import annotations

import json
import zlib
from datetime import timedelta

from sqlalchemy import select
from test_scanner import T0, Clock, Site, fast_settings, page

from pagetrail.cli.main import main
from pagetrail.store.models import DigestRun, Watch
from pagetrail.tools.scan.digest import build_digest, run_digests, to_json, to_markdown
from pagetrail.tools.scan.scanner import ScanOptions, scan


def _site() -> Site:
    return Site({"/": page("Home", ("/gone.html", "Annual report"), ("/ok.html", "Fine"))
                 , "/ok.html": page("Fine")})


async def test_digest_lists_changes_with_linking_pages(store) -> None:
    with _site() as site:
        settings = fast_settings(confirm_failures=2, confirm_days=3)
        clock = Clock(T0)
        first = await scan(site.url("/"), store=store, settings=settings,
                           options=ScanOptions(depth=0), clock=clock)
        digest = build_digest(store, first)
        assert [link.url for link in digest.suspect] == [site.url("/gone.html")]
        assert digest.newly_confirmed == []
        clock.now = T0 + timedelta(days=4)
        second = await scan(site.url("/"), store=store, settings=settings,
                            options=ScanOptions(depth=0), clock=clock)
        digest = build_digest(store, second)
    dead = digest.newly_confirmed
    assert [link.url for link in dead] == [site.url("/gone.html")]
    assert dead[0].found_on[0].anchor == "Annual report"
    assert dead[0].status == 404 and dead[0].failures == 2
    assert digest.counts == {"confirmed": 1, "newly_confirmed": 1, "suspect": 0, "fixed": 0,
                             "flapping": 0, "still_dead": 0,
                             "drifted": 0}
    markdown = to_markdown(digest)
    assert "Confirmed dead" in markdown and "(new)" in markdown
    assert "“Annual report”" in markdown
    data = json.loads(json.dumps(to_json(digest)))
    assert data["counts"]["newly_confirmed"] == 1
    assert data["verdicts"] == {"ok": 2, "dead": 1}


async def test_run_digests_scans_each_target_once_per_run(store) -> None:
    with _site() as site:
        with store.session() as s:
            s.add_all([Watch(channel="C1", target=site.url("/")),
                       Watch(channel="C2", target=site.url("/")),
                       Watch(channel="C2", target="ftp://not-a-site/")])
        digests = await run_digests(store, fast_settings(), clock=Clock(T0),
                                    options=ScanOptions(depth=0), recover=False)
        assert site.hits["/"] == 1  # two channels watch it: scanned once
    by_channel = {d.channel: d for d in digests}
    assert set(by_channel) == {"C1", "C2"}
    assert by_channel["C1"].scans[0].suspect[0].url == site.url("/gone.html")
    assert by_channel["C2"].scans[1].error  # a bad watch is reported, not fatal
    assert by_channel["C1"].period == "2026-W02"
    with store.session() as s:
        runs = s.scalars(select(DigestRun).order_by(DigestRun.id)).all()
        assert [(r.channel, r.status, r.posted) for r in runs] == [
            ("C1", "ready", False), ("C2", "ready", False)]
        assert runs[0].summary["scans"][0]["counts"]["suspect"] == 1


async def test_one_target_crashing_is_that_targets_error_only(store, monkeypatch,
                                                              caplog) -> None:
    import asyncio

    import pytest

    import pagetrail.tools.scan.digest as digest_module

    real_scan = digest_module.scan
    broken = "http://127.0.0.1:9/broken/"

    async def flaky_scan(target: str, **kwargs):
        if target == broken:
            raise zlib.error("zlib exploded")  # not a PagetrailError: a hostile site's bytes
        return await real_scan(target, **kwargs)

    monkeypatch.setattr(digest_module, "scan", flaky_scan)
    with _site() as site:
        with store.session() as s:
            s.add_all([Watch(channel="C1", target=broken),
                       Watch(channel="C1", target=site.url("/")),
                       Watch(channel="C2", target=site.url("/"))])
        digests = await run_digests(store, fast_settings(), clock=Clock(T0),
                                    options=ScanOptions(depth=0), recover=False)
    by_channel = {d.channel: d for d in digests}
    assert set(by_channel) == {"C1", "C2"}
    c1 = {scan.target: scan for scan in by_channel["C1"].scans}
    assert c1[broken].error == "zlib exploded"
    assert c1[site.url("/")].error == ""
    assert c1[site.url("/")].suspect[0].url == site.url("/gone.html")
    assert by_channel["C2"].scans[0].suspect[0].url == site.url("/gone.html")
    assert any(broken in r.getMessage() for r in caplog.records)  # logged with its target

    # A digest that fails after its scan keeps what the scan did, beside the error.
    monkeypatch.setattr(digest_module, "scan", real_scan)

    def broken_digest(_store, _result):
        raise ValueError("")  # an empty message: the error still says what it was

    monkeypatch.setattr(digest_module, "build_digest", broken_digest)
    with _site() as site:
        with store.session() as s:
            s.query(Watch).delete()
            s.add(Watch(channel="C3", target=site.url("/")))
        [failed] = await run_digests(store, fast_settings(), clock=Clock(T0),
                                     options=ScanOptions(depth=0), recover=False,
                                     channel="C3")
    assert failed.scans[0].error == "ValueError"
    assert failed.scans[0].scan_id and failed.scans[0].pages_crawled == 1

    # Ctrl-C and cancellation are not a target's error: they stop the run.
    for stop in (KeyboardInterrupt, asyncio.CancelledError):
        async def stopping_scan(target: str, stop=stop, **kwargs):
            raise stop()

        monkeypatch.setattr(digest_module, "scan", stopping_scan)
        with pytest.raises(stop):
            await run_digests(store, fast_settings(), clock=Clock(T0),
                              options=ScanOptions(depth=0), recover=False)


def test_cli_scan_prints_markdown_and_json(store, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("PAGETRAIL_PER_HOST_RPS", "0")
    with _site() as site:
        assert main(["scan", site.url("/"), "--depth", "0", "--quiet"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"## Link rot: {site.url('/')}") and "Suspect" in out
        assert main(["scan", site.url("/"), "--depth", "0", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
    assert data["urls_checked"] == 3 and data["states"]["suspect"] == 1
    assert main(["scan", "ftp://x/"]) == 2  # bad input: one line, exit 2


def test_cli_scan_recover_says_what_it_recovers_and_when(store, capsys, monkeypatch) -> None:
    from datetime import UTC, datetime

    monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("PAGETRAIL_PER_HOST_RPS", "0")
    before = datetime.now(UTC)
    with _site() as site:
        assert main(["scan", site.url("/"), "--depth", "0", "--quiet", "--recover"]) == 0
    err = capsys.readouterr().err
    assert "Recovering 0 of 0 confirmed dead link(s)." in err
    assert "1 suspect link(s) are pending confirmation and are not recovered yet" in err
    # The defaults: 3 failures at least 3 days apart, so two more, the last 6 days on.
    soonest = (before + timedelta(days=6)).strftime("%Y-%m-%d")
    assert f"the earliest can be confirmed from {soonest}" in err


async def test_scan_reports_show_every_links_state_with_since_when(store) -> None:
    """Over simulated scans (a clock), each report lists every link by its state — still
    suspect, still dead, still flapping included — not only the links that changed."""
    answers = {"/flap.html": [404, 200, 404, 200, 404], "/back.html": [404, 200, 200, 200, 200]}
    current = {"scan": 0}

    def scripted(path: str):
        status = answers[path][current["scan"]]
        return page("Back") if status == 200 else (404, {"Content-Type": "text/html"},
                                                   b"<html><title>Not Found</title></html>")

    site_routes = {"/": page("Home", ("/gone.html", "Gone"), ("/flap.html", "Flap"),
                             ("/back.html", "Back")),
                   "/flap.html": scripted, "/back.html": scripted}
    settings = fast_settings(confirm_failures=2, confirm_days=3)
    clock = Clock(T0)
    reports = []
    with Site(site_routes) as site:
        for number, day in enumerate((0, 1, 4, 5, 6)):
            current["scan"] = number
            clock.now = T0 + timedelta(days=day)
            result = await scan(site.url("/"), store=store, settings=settings,
                                options=ScanOptions(depth=0), clock=clock)
            digest = build_digest(store, result)
            reports.append({
                state: {link.url.rsplit("/", 1)[1]: (link.since[:10] if link.since else None)
                        for link in getattr(digest, state)}
                for state in ("confirmed", "suspect", "fixed", "flapping")} | {
                "counts": digest.counts, "earliest": digest.earliest_confirmation,
                "markdown": to_markdown(digest)})
    d = [str((T0 + timedelta(days=n)).date()) for n in range(7)]
    first, second, third, fourth, fifth = reports
    assert first["suspect"] == {"gone.html": d[0], "flap.html": d[0], "back.html": d[0]}
    assert first["earliest"][:10] == d[3]  # a second failure 3 days after the first
    # Day 1: too soon to count; gone.html is still suspect (not "suspect: 0"), since day 0.
    assert second["suspect"] == {"gone.html": d[0]}
    assert second["fixed"] == {"flap.html": d[1], "back.html": d[1]}
    assert second["counts"]["suspect"] == 1
    assert "can be confirmed from " + d[3] in second["markdown"]
    # Day 4: confirmed dead (new); flap.html fails again; back.html is plain ok: not listed.
    assert third["confirmed"] == {"gone.html": d[4]}
    assert third["counts"]["newly_confirmed"] == 1
    assert third["suspect"] == {"flap.html": d[4]}
    assert third["fixed"] == {}
    # Day 5: still dead (listed, not new); flap.html has switched three times: flapping.
    assert fourth["confirmed"] == {"gone.html": d[4]}
    assert fourth["counts"] == {"confirmed": 1, "newly_confirmed": 0, "suspect": 0,
                                "fixed": 0, "flapping": 1, "still_dead": 1, "drifted": 0}
    assert fourth["flapping"] == {"flap.html": d[5]}
    # Day 6: it keeps flapping: still reported, since day 5.
    assert fifth["flapping"] == {"flap.html": d[5]}
    assert "flapping since " + d[5] in fifth["markdown"]
    assert "confirmed since " + d[4] in fifth["markdown"]
