"""The GitHub Action and the pre-commit hook: their structure (the hook file through
pre-commit's own manifest schema), and the exact command they run, run here. (`pre-commit
try-repo` would pip-install pagetrail and its dependencies from a package index into a fresh
virtualenv: tests stay offline, so the hook's command is run directly instead.)"""

from __future__ import annotations

import re
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


@pytest.mark.slow
@pytest.mark.testbed
def test_pre_commit_hook_entry(tmp_path, tiny_world, testbed_env):
    import os

    from pre_commit.clientlib import load_manifest

    from pagetrail.tools.fix.extract import FORMATS

    hook = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))[0]  # InvalidManifestError
    assert hook["id"] == "pagetrail-fix" and hook["language"] == "python"
    # The hook is given exactly the documents `fix` reads (never code: a URL in a .py file
    # is not a link to rewrite).
    files = re.compile(hook["files"])
    for suffix in FORMATS:
        assert files.search(f"docs/a{suffix}") and files.search(f"A{suffix.upper()}"), suffix
    for other in ("a.py", "a.md.bak", "mdx", "a.json"):
        assert not files.search(other), other
    (tmp_path / "ok.md").write_text(f"[x]({tiny_world.moved_to})\n")
    (tmp_path / "dead.md").write_text(f"[x]({tiny_world.nxdomain_url})\n")
    command = shlex.split(hook["entry"])
    command[0] = PAGETRAIL
    env = {**os.environ, **testbed_env}
    assert subprocess.run([*command, "ok.md"], cwd=tmp_path, env=env).returncode == 0
    assert subprocess.run([*command, "ok.md", "dead.md"], cwd=tmp_path, env=env,
                          capture_output=True).returncode == 1


def test_action_pushes_a_branch_with_the_fixes(tmp_path):
    import os

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    step = action["runs"]["steps"][2]
    assert "pull-request-branch" in step["if"] and "write" in step["if"]
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.org"}
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(work)], check=True,
                   capture_output=True)
    (work / "a.md").write_text("[x](https://old.example/)\n")
    subprocess.run(["git", "-C", str(work), "add", "a.md"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "docs"], check=True, env=env)
    (work / "a.md").write_text("[x](https://new.example/)\n")  # what `fix --write` did
    done = subprocess.run(["bash", "-ec", step["run"]], cwd=work, text=True,
                          capture_output=True, env={**os.environ, "BRANCH": "fix-links"})
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(["git", "-C", str(origin), "show", "fix-links:a.md"], text=True,
                           capture_output=True, check=True).stdout
    assert shown == "[x](https://new.example/)\n"
