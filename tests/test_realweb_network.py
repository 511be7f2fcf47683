"""pagetrail's own network is not the web (#26 item 8): a host's NXDOMAIN is the link's
fault (unreachable) when the probe answers; when the probe fails the same local way, the
network is down — no verdict, nothing recorded, exit 3 (check, recover), a named tool error
(MCP). The probe is pointed at loopback (network up) or at an unresolvable name (no DNS:
every name under .invalid fails to resolve, RFC 6761), through the real fetch layer."""

from __future__ import annotations

import errno
import json
import os

import pytest
from sqlalchemy import func, select
from test_realweb_walls import replay, settings

from pagetrail.cli.main import main
from pagetrail.store.models import LinkCheck, RecoveryRow
from pagetrail.tools.linkcheck.check import check_link
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.netcheck import NetworkDown, local_fault, probe_url

GONE = "http://gone-host.invalid/2019/article"
NO_DNS_PROBE = "http://probe-host.invalid/"


async def test_one_host_nxdomain_is_unreachable_when_the_probe_answers(monkeypatch) -> None:
    with replay({"/": (200, [("Content-Type", "text/html")], b"<title>probe</title>")}) as probe:
        monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", probe.base + "/")
        async with Fetcher(settings()) as fetcher:
            first = await check_link(GONE, fetcher)
            second = await check_link("http://other-gone.invalid/x", fetcher)
    assert first.verdict == "unreachable" and first.evidence["error"]["kind"] == "dns"
    assert second.verdict == "unreachable"
    assert probe.methods == [("HEAD", "/")]  # asked once for the run, not for each link


async def test_no_dns_at_all_is_network_down_not_a_verdict(monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", NO_DNS_PROBE)
    async with Fetcher(settings()) as fetcher:
        with pytest.raises(NetworkDown) as raised:
            await check_link(GONE, fetcher)
    assert raised.value.code == "network_down"
    assert "probe-host.invalid" in str(raised.value) and "dns" in str(raised.value)


async def test_an_answering_link_never_asks_the_probe(monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", NO_DNS_PROBE)
    with replay({"/gone": (404, [("Content-Type", "text/html")], b"<title>404</title>")}) as srv:
        async with Fetcher(settings()) as fetcher:
            result = await check_link(srv.base + "/gone", fetcher)
    assert result.verdict == "dead"


def test_cli_check_offline_exits_3_with_no_verdict(monkeypatch, capsys) -> None:
    monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", NO_DNS_PROBE)
    assert main(["check", GONE, "--json"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("pagetrail: network_down:")


def test_cli_recover_offline_exits_3_and_records_nothing(monkeypatch, capsys, store) -> None:
    monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", NO_DNS_PROBE)
    monkeypatch.setenv("PAGETRAIL_SEARCH_ENGINES", "")
    assert main(["recover", GONE, "--json"]) == 3
    captured = capsys.readouterr()
    assert captured.out == "" and "network_down" in captured.err
    with store.session() as session:
        assert session.scalar(select(func.count()).select_from(RecoveryRow)) == 0
        assert session.scalar(select(func.count()).select_from(LinkCheck)) == 0


def test_cli_recover_of_an_nxdomain_host_still_answers(monkeypatch, capsys, store) -> None:
    with replay({"/": (200, [("Content-Type", "text/html")], b"<title>probe</title>")}) as probe:
        monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", probe.base + "/")
        monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
        monkeypatch.setenv("PAGETRAIL_ARCHIVES", probe.base + "/web")
        monkeypatch.setenv("PAGETRAIL_SEARCH_ENGINES", "")
        monkeypatch.setenv("PAGETRAIL_RETRIES", "0")
        code = main(["recover", GONE, "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["check"]["verdict"] == "unreachable"


async def test_mcp_check_link_offline_is_a_named_tool_error(monkeypatch, store) -> None:
    from mcp import Client

    from pagetrail.server.app import build_server

    monkeypatch.setenv("PAGETRAIL_NETWORK_PROBE_URL", NO_DNS_PROBE)
    server = build_server(settings(), store)
    async with Client(server) as client:
        checked = await client.call_tool("check_link", {"url": GONE})
        recovered = await client.call_tool("recover_link", {"url": GONE, "fresh": True})
    for result in (checked, recovered):
        assert result.is_error
        assert "network_down" in result.content[0].text


def test_local_fault_reads_the_operating_systems_own_messages() -> None:
    unreachable = str(OSError(errno.ENETUNREACH, os.strerror(errno.ENETUNREACH)))
    no_route = str(OSError(errno.EHOSTUNREACH, os.strerror(errno.EHOSTUNREACH)))
    assert local_fault("other", f"other: {unreachable}") == "no_route"
    assert local_fault("other", f"other: {no_route}") == "no_route"
    assert local_fault("dns", "dns: [Errno -2] Name or service not known") == "dns"
    assert local_fault("refused", "refused: [Errno 111] Connection refused") is None
    assert local_fault("timeout", "timeout: ReadTimeout") is None


def test_the_probe_defaults_to_the_first_archive_origin_without_credentials() -> None:
    assert probe_url(["https://user:secret@archive.example/web"]) == "https://archive.example/"
    assert probe_url(["https://web.archive.org/web"], "http://127.0.0.1:9/") == \
        "http://127.0.0.1:9/"
    assert probe_url([]) is None
