"""The GitHub Action and the pre-commit hook: their structure, and the exact command they
run, run here (pre-commit itself would install pagetrail from an index into a fresh venv,
which this offline machine cannot do)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGETRAIL = str(Path(sys.executable).with_name("pagetrail"))


def test_action_is_a_composite_action_running_fix():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert all(step.get("shell") == "bash" for step in steps if "run" in step)
    assert "pip install" in steps[0]["run"]
    assert "pagetrail fix" in steps[1]["run"]
    assert set(action["inputs"]) >= {"paths", "args", "format", "write", "pull-request-branch"}


def _action_script(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    script = action["runs"]["steps"][1]["run"].replace("pagetrail fix", f"{PAGETRAIL} fix")
    output = tmp_path / "github_output"
    output.write_text("")
    return subprocess.run(["bash", "-ec", script], cwd=tmp_path, text=True,
                          capture_output=True, env={**env, "GITHUB_OUTPUT": str(output)})


@pytest.mark.testbed
def test_action_step_runs_and_reports(tmp_path, tiny_world, testbed_env):
    import os

    (tmp_path / "a.md").write_text(f"[gone]({tiny_world.nxdomain_url})\n")
    env = {**os.environ, **testbed_env, "FIX_PATHS": "a.md", "FIX_ARGS": "",
           "FIX_FORMAT": "github", "FIX_WRITE": "false"}
    done = _action_script(tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("::error file=a.md,line=1")
    assert (tmp_path / "github_output").read_text() == "dead-left=1\n"


@pytest.mark.testbed
def test_pre_commit_hook_entry(tmp_path, tiny_world, testbed_env):
    import os

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = hooks[0]
    assert hook["id"] == "pagetrail-fix" and hook["language"] == "python"
    assert set(hook) <= {"id", "name", "description", "entry", "language", "types_or",
                         "require_serial", "args", "files", "exclude", "pass_filenames"}
    (tmp_path / "ok.md").write_text(f"[x]({tiny_world.moved_to})\n")
    (tmp_path / "dead.md").write_text(f"[x]({tiny_world.nxdomain_url})\n")
    command = shlex.split(hook["entry"])
    command[0] = PAGETRAIL
    env = {**os.environ, **testbed_env}
    assert subprocess.run([*command, "ok.md"], cwd=tmp_path, env=env).returncode == 0
    assert subprocess.run([*command, "ok.md", "dead.md"], cwd=tmp_path, env=env,
                          capture_output=True).returncode == 1
