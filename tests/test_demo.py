"""`pagetrail demo` as a user runs it: progress from the start, and a non-zero exit that says
what failed when the world's own services die during the run (tiny world, plugin_testbed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.testbed


def _demo(world: Path, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}
    return subprocess.Popen(
        [sys.executable, "-m", "pagetrail.cli", "demo", "--world", str(world), "--jobs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def _children_running(pid: int, program: str) -> list[int]:
    """Processes whose parent is `pid` and whose command line runs `program`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # the process ended meanwhile
            continue
        parent = next(int(line.split()[1]) for line in status.splitlines()
                      if line.startswith("PPid:"))
        if parent == pid and any(Path(part.decode()).name == program for part in command[:2]):
            found.append(int(entry.name))
    return found


def test_demo_shows_progress_and_exits_zero_on_a_healthy_world(tiny_world, tmp_path):
    demo = _demo(tiny_world.path, tmp_path)
    first = demo.stdout.readline()
    assert "Serving the world" in first and "4 dead links" in first
    out, err = demo.communicate(timeout=300)
    assert demo.returncode == 0, err
    assert "1/4" in out and "4/4" in out
    assert "of 4 answers agree with the world's truth" in out


@pytest.mark.slow
def test_demo_fails_out_loud_when_the_archive_dies_mid_run(tiny_world, tmp_path):
    demo = _demo(tiny_world.path, tmp_path)
    seen = []
    try:
        for line in demo.stdout:  # wait for the first answer: the run is under way
            seen.append(line)
            if "1/4" in line:
                break
        assert any("1/4" in line for line in seen), "".join(seen)
        pywb = _children_running(demo.pid, "wayback")
        assert len(pywb) == 1
        os.killpg(pywb[0], signal.SIGKILL)  # pywb runs in its own session
        out, err = demo.communicate(timeout=300)
    finally:
        if demo.poll() is None:
            demo.kill()
    assert "4/4" in out  # every link still gets its (incomplete) answer
    assert demo.returncode == 1
    assert "the archive (pywb) at http://127.0.0.1:" in err
    assert "stopped answering" in err
