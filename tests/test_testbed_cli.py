"""`pagetrail testbed serve`: bad worlds fail fast; a served world answers, then shuts down clean."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from pagetrail.tools.testbed.worldgen import build_tiny_world

CLI = [sys.executable, "-m", "pagetrail.cli"]


def test_bad_world_is_one_line_and_exit_2(tmp_path):
    tiny = build_tiny_world(tmp_path / "w")
    with (tiny.path / "live.jsonl").open("a") as handle:
        handle.write(json.dumps({"url": "https://www.news.example/x", "status": 200,
                                 "headers": {}, "blob": "00/missing.html.gz"}) + "\n")
    done = subprocess.run([*CLI, "testbed", "serve", str(tiny.path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "live.jsonl:" in lines[0] and "blob missing" in lines[0]


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.testbed
def test_serve_answers_then_stops_cleanly(tmp_path):
    tiny = build_tiny_world(tmp_path / "w")
    ready, env_file = tmp_path / "ready", tmp_path / "testbed.env"
    process = subprocess.Popen(
        [*CLI, "testbed", "serve", str(tiny.path), "--ready-file", str(ready),
         "--env-file", str(env_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while not ready.exists():
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "testbed did not become ready"
            time.sleep(0.1)
        env = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
        assert env["PAGETRAIL_SEARCH_ENGINES"] == "site,cdx,searxng,local"
        context = ssl.create_default_context(cafile=env["PAGETRAIL_CA_BUNDLE"])
        with httpx.Client(proxy=env["PAGETRAIL_PROXY"], verify=context, trust_env=False,
                          timeout=10) as client:
            assert client.get(tiny.moved_to).status_code == 200
        with httpx.Client(trust_env=False, timeout=10) as client:
            timemap = client.get(f"{env['PAGETRAIL_ARCHIVES']}/timemap/link/{tiny.moved_from}")
            assert 'rel="memento"' in timemap.text
        workdir = str(Path(env["PAGETRAIL_CA_BUNDLE"]).parent)
        assert _processes_mentioning(workdir), "pywb should run from the work directory"
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    output = process.stdout.read().decode()
    assert code == 0
    assert "PAGETRAIL_PROXY=http://127.0.0.1:" in output
    assert not ready.exists()
    assert not Path(workdir).exists()
    assert _processes_mentioning(workdir) == []
