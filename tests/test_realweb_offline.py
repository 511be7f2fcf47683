"""pagetrail's own network is not the web, in a scan and a search (#26 item 8).

A scan: when a link fails the way
a machine without network fails and the probe (tools/net/netcheck.py) fails the same way, the
scan stops and raises NetworkDown (`network_down`): the failing link gets no verdict, nothing
is recorded as dead, the scan stays unfinished (resumable). When the probe answers, the same
link is the host's own fault: unreachable, recorded. The site is on loopback; the lost host
and the offline probe are names under .invalid, which never resolve (RFC 6761).

A search: when no engine answered and their failures are a machine's without network, and the
probe fails too, `pagetrail search` says network_down (exit 3) instead of naming each engine
"unavailable"; with the probe answering, each engine's failure is named as before."""

from __future__ import annotations

import json

import pytest
from loopback import Loopback, QuietHandler
from sqlalchemy import select
from test_scanner import Site, fast_settings, page

from pagetrail.cli.main import main
from pagetrail.store.models import LinkCheck
from pagetrail.store.scans import Scan
from pagetrail.tools.net.netcheck import NetworkDown
from pagetrail.tools.scan.scanner import ScanOptions, scan

GONE = "http://gone-host.invalid/2019/article"
NO_DNS_PROBE = "http://probe-host.invalid/"


class Probe(QuietHandler):
    def do_HEAD(self) -> None:
        self.send_response(204)
        self.end_headers()


def site_linking_to_gone() -> Site:
    return Site({"/": page("Home", ("/about.html", "About"), (GONE, "an old article")),
                 "/about.html": page("About")})


def verdicts(store) -> dict[str, str]:  # type: ignore[no-untyped-def]
    with store.session() as session:
        return {row.url: row.verdict for row in session.scalars(select(LinkCheck))}


async def test_a_scan_stops_at_network_down_and_records_no_verdict(store) -> None:
    with site_linking_to_gone() as site:
        settings = fast_settings(network_probe_url=NO_DNS_PROBE, concurrency=1)
        with pytest.raises(NetworkDown) as raised:
            await scan(site.url("/"), store=store, settings=settings,
                       options=ScanOptions(depth=1))
    assert raised.value.code == "network_down" and "probe-host.invalid" in str(raised.value)
    recorded = verdicts(store)
    assert GONE not in recorded  # no "unreachable", nothing that could turn into dead
    assert not {"dead", "unreachable"} & set(recorded.values())
    with store.session() as session:
        [row] = session.scalars(select(Scan)).all()
    assert row.finished_at is None  # not finished: a later run resumes it


async def test_with_the_network_up_the_lost_host_is_unreachable(store) -> None:
    probe = Loopback(Probe)
    try:
        with site_linking_to_gone() as site:
            settings = fast_settings(network_probe_url=probe.base + "/")
            result = await scan(site.url("/"), store=store, settings=settings,
                                options=ScanOptions(depth=1))
    finally:
        probe.close()
    assert verdicts(store)[GONE] == "unreachable"
    assert result.verdicts.get("unreachable") == 1


@pytest.fixture
def engines_behind_no_dns(monkeypatch):  # type: ignore[no-untyped-def]
    for name, value in {"SEARCH_ENGINES": "google,brave", "GOOGLE_API_KEY": "k-offline-1",
                        "GOOGLE_CX": "cx1", "GOOGLE_BASE_URL": "http://google-api.invalid",
                        "BRAVE_API_KEY": "k-offline-2",
                        "BRAVE_BASE_URL": "http://brave-api.invalid", "RETRIES": "0",
                        "SEARCH_RPS": "100"}.items():
        monkeypatch.setenv(f"PAGETRAIL_{name}", value)


def test_search_offline_is_network_down_not_each_engine(engines_behind_no_dns, store,
                                                         monkeypatch, capsys) -> None:
    monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", NO_DNS_PROBE)
    assert main(["search", "solar farms", "--json"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("pagetrail: network_down:")
    assert "probe-host.invalid" in captured.err


def test_search_with_the_network_up_names_each_engine(engines_behind_no_dns, store,
                                                      monkeypatch, capsys) -> None:
    probe = Loopback(Probe)
    try:
        monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", probe.base + "/")
        assert main(["search", "solar farms", "--json"]) == 1
    finally:
        probe.close()
    answer = json.loads(capsys.readouterr().out)
    assert sorted(f["engine"] for f in answer["failures"]) == ["brave", "google"]
    assert all("cannot resolve" in f["error"] and f["kind"] == "unavailable"
               for f in answer["failures"])


def test_scan_command_offline_exits_3_like_check_and_recover(store, monkeypatch,
                                                             capsys) -> None:
    """`pagetrail scan` ends on network down as `check`, `recover` and `search` do: one
    line, exit 3, no report printed as if the links had been checked."""
    monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", NO_DNS_PROBE)
    monkeypatch.setenv("PAGETRAIL_RETRIES", "0")
    with site_linking_to_gone() as site:
        monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", site.url("/").split("/")[2])
        status = main(["scan", site.url("/"), "--depth", "1", "--quiet"])
    captured = capsys.readouterr()
    assert status == 3, captured.err
    assert captured.err.startswith("pagetrail: network_down:")
    assert captured.out == ""
