"""Scans are bounded and never silent (#20): links per page and per scan are capped by
settings, and what was skipped (and why) is in the report of the CLI and of MCP; a page
over the byte cap is a failed scan, not "0 pages, 0 links". A loopback site, real faces."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from loopback import Loopback, QuietHandler
from mcp import Client

from pagetrail.cli.main import main
from pagetrail.server.app import build_server
from pagetrail.tools.settings import Settings, get_settings

LINKS = 200


class Site(Loopback):
    def __init__(self) -> None:
        class Handler(QuietHandler):
            def do_GET(self) -> None:
                if self.path == "/":
                    links = "".join(f'<li><a href="/p/{i}">page {i}</a></li>'
                                    for i in range(LINKS))
                    body = f"<html><head><title>Hub</title></head><body><ul>{links}</ul>"
                    self._send(200, body.encode())
                elif self.path == "/huge":
                    filler = "<p>" + "lorem ipsum " * 50 + "</p>"
                    self._send(200, ("<html><body>" + filler * 600 + "</body></html>").encode())
                elif self.path.startswith("/p/"):
                    self._send(200, b"<html><head><title>leaf</title></head><body>ok</body>")
                else:
                    self._send(404, b"not here")

            def do_HEAD(self) -> None:
                self.do_GET()

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        super().__init__(Handler)


@pytest.fixture
def site(monkeypatch, tmp_path) -> Iterator[Site]:
    served = Site()
    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'p.db'}")
    monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("PAGETRAIL_PER_HOST_RPS", "1000")
    monkeypatch.setenv("PAGETRAIL_PER_HOST_CONCURRENCY", "16")
    monkeypatch.setenv("PAGETRAIL_ARCHIVES", f"{served.base}/web")
    monkeypatch.setenv("PAGETRAIL_MAX_BYTES", "100000")
    get_settings.cache_clear()
    try:
        yield served
    finally:
        served.close()


def _scan(site: Site, capsys, *extra: str) -> tuple[int, dict]:
    status = main(["scan", f"{site.base}/", "--depth", "0", "--quiet", "--json", *extra])
    return status, json.loads(capsys.readouterr().out)


def test_links_beyond_the_page_cap_are_skipped_and_reported(site, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_SCAN_MAX_LINKS_PER_PAGE", "50")
    status, report = _scan(site, capsys)
    assert status == 0
    assert report["urls_checked"] == 51  # the page and its first 50 links
    assert report["skipped"]["links_beyond_page_cap"] == LINKS - 50
    assert report["limits"]["links_per_page"] == 50


def test_links_beyond_the_scan_cap_are_skipped_and_reported(site, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_SCAN_MAX_LINKS", "30")
    status, report = _scan(site, capsys)
    assert status == 0
    assert report["urls_checked"] == 30
    assert report["skipped"]["links_beyond_scan_cap"] == LINKS + 1 - 30


def test_markdown_says_what_was_not_checked(site, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_SCAN_MAX_LINKS_PER_PAGE", "20")
    assert main(["scan", f"{site.base}/", "--depth", "0", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Not checked:" in out and "180 links beyond the per-page cap (20 links)" in out


def test_a_page_over_the_byte_cap_is_a_failed_scan(site, capsys) -> None:
    status = main(["scan", f"{site.base}/huge", "--depth", "0", "--quiet", "--json"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert status == 1
    assert report["error"].startswith("body_too_large")
    assert report["unreadable"][0]["code"] == "body_too_large"
    assert "body_too_large" in captured.err


async def test_mcp_scan_page_uses_the_same_cap(site, monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_SCAN_MAX_LINKS_PER_PAGE", "15")
    server = build_server(Settings())
    async with Client(server) as client:
        result = await client.call_tool("scan_page", {"url": f"{site.base}/", "limit": 0,
                                                      "max_links": 1000})
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer["links_checked"] == 15 and answer["max_links"] == 15
    assert answer["links_skipped"] == LINKS - 15 and answer["truncated"]
