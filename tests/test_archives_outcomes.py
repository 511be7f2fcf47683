"""The named outcome reaches every face: `pagetrail memento`, `recover` and the MCP tool, for
an archive that excludes the URL (the recorded "This URL has been excluded from the Wayback
Machine" page, served with 200 in place of the capture)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from archive_replay import ArchiveReplay, cdx_rows, recorded
from mcp import Client

from pagetrail.tools.settings import get_settings

STAMP = "20170929002712"  # the recorded capture's timestamp


@pytest.fixture
def excluded(monkeypatch) -> Iterator[tuple[ArchiveReplay, str]]:
    holder: dict[str, str] = {}

    def routes(key: str):
        dead = holder["dead"]
        if key == "/gone/page":
            return 404, {"content-type": "text/html"}, b"<title>Not Found</title>"
        if key.startswith("/cdx/search/cdx"):
            return cdx_rows((STAMP, dead, "200", "text/html"))
        if key.startswith(f"/web/{STAMP}id_/"):
            return recorded("wayback_excluded_url")  # the archive's words, for any URL
        return None

    with ArchiveReplay(routes=routes) as replay:
        holder["dead"] = f"{replay.base}/gone/page"
        for name, value in {"ARCHIVES": replay.prefix, "ALLOW_HOSTS": "127.0.0.1",
                            "NO_PROXY": "127.0.0.1", "RETRIES": "0",
                            "SEARCH_ENGINES": "cdx"}.items():
            monkeypatch.setenv(f"PAGETRAIL_{name}", value)
        get_settings.cache_clear()
        yield replay, holder["dead"]
    get_settings.cache_clear()


def test_cli_memento_names_the_exclusion(excluded, capsys):
    from pagetrail.cli.main import main

    _replay, dead = excluded
    assert main(["memento", dead]) != 0
    err = capsys.readouterr().err
    assert "archive_excluded" in err and "This URL has been excluded" in err
    assert "no usable archived copy" not in err


async def test_mcp_fetch_memento_is_a_named_tool_error(excluded, store):
    from pagetrail.server.app import build_server

    _replay, dead = excluded
    async with Client(build_server(get_settings(), store)) as client:
        result = await client.call_tool("fetch_memento", {"url": dead})
    assert result.is_error
    text = result.content[0].text
    assert "archive_excluded: " in text and "excluded from the Wayback Machine" in text


async def test_recover_reports_the_exclusion_and_takes_no_copy(excluded, store):
    from pagetrail import recover_link

    replay, dead = excluded
    recovery = await recover_link(dead, settings=get_settings(), store=store, fresh=True)
    assert recovery.memento is None
    archive_failures = [f.error for f in recovery.failures if f.engine == "archive"]
    assert any("archive_excluded" in e and "excluded from the Wayback Machine" in e
               for e in archive_failures), recovery.failures
    assert all(replay.base + "/web/" not in c.url for c in recovery.candidates)
