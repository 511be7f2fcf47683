"""Credentials never in logs (#20): `pagetrail -vv …` with a password in the archive URL and a
token in the SearXNG URL, against a loopback recorder; every byte of output is searched for
the secrets. The recorder checks the secrets were really used (sent to the endpoints)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest
from heavy_archive import HeavyArchive
from test_endpoint_paths import Recorder

PASSWORD = "ArchPassw0rd-9f3c"
TOKEN = "SearxT0ken-77ab"
HN_KEY = "HnK3y-1d2e"


@pytest.fixture
def recorder():
    rec = Recorder()
    try:
        yield rec
    finally:
        rec.close()


@pytest.mark.parametrize("command", [
    ["memento", "https://8.8.8.8/page"],
    ["memento", "--list", "https://8.8.8.8/page"],
    ["search", "solar farms"],
    ["tags", "https://8.8.8.8/page"],
    ["signature", "https://8.8.8.8/page"],
], ids=lambda c: c[0] + ("-list" if "--list" in c else ""))
def test_verbose_output_never_shows_endpoint_secrets(recorder: Recorder, tmp_path,
                                                     command) -> None:
    host = recorder.base.removeprefix("http://")
    env = {**os.environ,
           "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'p.db'}",
           "PAGETRAIL_ARCHIVES": f"http://archuser:{PASSWORD}@{host}/web",
           "PAGETRAIL_SEARXNG_URL": f"http://{host}/sx?token={TOKEN}",
           "PAGETRAIL_HN_API_URL": f"http://{host}/hn/v1?key={HN_KEY}",
           "PAGETRAIL_SEARCH_ENGINES": "searxng",
           "PAGETRAIL_PROXY": recorder.base, "PAGETRAIL_RETRIES": "0"}
    done = subprocess.run([sys.executable, "-m", "pagetrail.cli", "-vv", *command], env=env,
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert "HTTP Request" in output  # the client's request log was on
    for secret in (PASSWORD, TOKEN, HN_KEY, base64.b64encode(f"archuser:{PASSWORD}".encode()
                                                             ).decode()):
        assert secret not in output, [line for line in output.splitlines() if secret in line]
    assert recorder.paths()  # the endpoints were really asked
    if command[0] == "search":
        assert TOKEN in "\n".join(recorder.lines)  # the token was in play, not absent


@pytest.mark.parametrize("command", [["memento"], ["memento", "--list"], ["signature"]],
                         ids=lambda c: "-".join(c))
def test_answers_carry_no_archive_password_and_the_archive_still_gets_it(tmp_path,
                                                                          command) -> None:
    archive = HeavyArchive(links=10).start()
    host = archive.base.removeprefix("http://")
    env = {**os.environ, "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'p.db'}",
           "PAGETRAIL_ARCHIVES": f"http://archuser:{PASSWORD}@{host}/web",
           "PAGETRAIL_RETRIES": "0"}
    try:
        done = subprocess.run([sys.executable, "-m", "pagetrail.cli", "-vv", *command,
                               "https://8.8.8.8/small/page"], env=env, capture_output=True,
                              text=True, timeout=120)
    finally:
        archive.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    shown = "A small archived page" if command == ["signature"] else f"{archive.base}/web/"
    assert shown in done.stdout  # the archived copy was found and shown
    assert PASSWORD not in done.stdout + done.stderr
    expected = "Basic " + base64.b64encode(f"archuser:{PASSWORD}".encode()).decode()
    assert archive.authorizations and set(archive.authorizations) == {expected}
