"""A capture listing from several archives, one of which failed or refused while the others
answered (#26 item 6: one archive down never sinks the answer): the listing keeps the answering
archive's captures and names the one that did not answer — through `list_captures`
(`unavailable`) to `pagetrail memento --list` (a note on stderr; `unavailable` in --json).
The refusing archive replays the recorded "Blocked Site Error" 403 on CDX; the failing one
answers every request 503 without Memento-Datetime (handmade here: the archive speaking, not a
capture)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from archive_replay import ArchiveReplay, cdx_rows, recorded

from pagetrail.tools.settings import get_settings

STAMP = "20190601120000"


@pytest.fixture(params=["refused", "down"])
def two_archives(request, monkeypatch) -> Iterator[tuple[str, str, str]]:
    answering = ArchiveReplay(routes=lambda key: cdx_rows(
        (STAMP, "https://example.org/report", "200", "text/html"))
        if key.startswith("/cdx/") else None)

    def failing_route(key: str):
        if request.param == "refused":
            return recorded("wayback_cdx_blocked_site") if key.startswith("/cdx/") else None
        # down: CDX and TimeMap alike (a CDX 503 with a TimeMap 404 is an archive that
        # answered it has no capture)
        return 503, {"content-type": "text/html"}, b"<title>503 Service Unavailable</title>"

    failing = ArchiveReplay(routes=failing_route)
    try:
        for name, value in {"ARCHIVES": f"{answering.prefix},{failing.prefix}",
                            "ALLOW_HOSTS": "127.0.0.1", "NO_PROXY": "127.0.0.1",
                            "RETRIES": "0"}.items():
            monkeypatch.setenv(f"PAGETRAIL_{name}", value)
        get_settings.cache_clear()
        kind = "archive_excluded" if request.param == "refused" else "archive_unavailable"
        yield answering.base, failing.base, kind
    finally:
        answering.close()
        failing.close()
        get_settings.cache_clear()


async def test_list_captures_names_the_archive_that_did_not_answer(two_archives) -> None:
    from pagetrail import list_captures

    answering, failing, kind = two_archives
    unavailable: list[str] = []
    captures = await list_captures("https://example.org/report", settings=get_settings(),
                                   unavailable=unavailable)
    assert [c.memento_url.startswith(answering) for c in captures] == [True]
    [note] = unavailable
    assert note.startswith(f"{failing}/web: {kind}: ")


def test_cli_memento_list_notes_the_partial_listing(two_archives, capsys) -> None:
    from pagetrail.cli.main import main

    answering, failing, kind = two_archives
    assert main(["memento", "--list", "https://example.org/report"]) == 0
    captured = capsys.readouterr()
    assert f"{answering}/web/{STAMP}" in captured.out
    assert f"note: not listed: {failing}/web: {kind}: " in captured.err

    assert main(["memento", "--list", "--json", "https://example.org/report"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert len(answer["captures"]) == 1
    assert [n.split(": ")[1] for n in answer["unavailable"]] == [kind]
