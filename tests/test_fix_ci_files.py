"""The GitHub Action and the pre-commit hook: their structure (the hook file through
pre-commit's own manifest schema), and the exact commands they run, run here. (`pre-commit
try-repo` and the Action's install step would pip-install pagetrail and its dependencies from
a package index into a fresh virtualenv: tests stay offline, so the commands are run with
this environment's pagetrail instead; scripts/wheel_test.sh runs the install step for real.)
GitHub itself is the internet: `gh` is a stand-in that records how it was called."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PAGETRAIL = str(BIN / "pagetrail")
GIT_ENV = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.org"}


def _action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def _step(key: str) -> dict:
    """The action's step whose id (or, without one, whose name) starts with `key`."""
    return next(step for step in _action()["runs"]["steps"]
                if step.get("id") == key or step.get("name", "").startswith(key))


def test_action_is_a_composite_action_running_fix():
    action = _action()
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert all(step.get("shell") == "bash" for step in steps if "run" in step)
    assert set(action["inputs"]) >= {"paths", "args", "format", "write", "pull-request-branch",
                                     "pull-request", "version", "cache", "summary", "token"}
    # Installed into a venv of its own, from the action's checkout unless a version is pinned.
    install = steps[0]
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert action["inputs"]["version"]["default"] == ""
    assert "python3 -m venv" in install["run"] and "GITHUB_PATH" in install["run"]
    assert "break-system-packages" not in install["run"] and "sudo" not in install["run"]
    # The store is where the cache step keeps it between runs.
    cache = _step("Restore the store")
    assert cache["uses"].startswith("actions/cache@")
    assert "PAGETRAIL_DATA_DIR=$RUNNER_TEMP/pagetrail-store" in install["run"]
    assert cache["with"]["path"] == "${{ runner.temp }}/pagetrail-store"
    assert "github.run_id" in cache["with"]["key"]
    assert cache["with"]["restore-keys"] in cache["with"]["key"]
    assert "pagetrail fix" in _step("fix")["run"] and "-- $FIX_PATHS" in _step("fix")["run"]
    assert "--force" not in _step("branch")["run"] and " -f " not in _step("branch")["run"]


def _run_step(step: dict, cwd: Path, env: dict[str, str],
              tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A step's script as the runner runs it: `bash -e`, this environment's pagetrail first on
    PATH, GitHub's files in `tmp_path`."""
    for name in ("github_output", "step_summary"):
        (tmp_path / name).touch()
    return subprocess.run(
        ["bash", "-ec", step["run"]], cwd=cwd, text=True, capture_output=True,
        env={**os.environ, **env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', os.environ['PATH'])}",
             "GITHUB_OUTPUT": str(tmp_path / "github_output"),
             "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary"),
             "RUNNER_TEMP": str(tmp_path)})


@pytest.mark.testbed
def test_action_step_runs_reports_and_summarises(tmp_path, tiny_world, testbed_env):
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.md").write_text(f"[gone]({tiny_world.nxdomain_url})\n"
                               f"[solar]({tiny_world.moved_from})\n")
    env = {**testbed_env, "FIX_PATHS": "a.md", "FIX_ARGS": "", "FIX_FORMAT": "github",
           "FIX_WRITE": "false", "FIX_SUMMARY": "true",
           "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'action.db'}"}
    done = _run_step(_step("fix"), work, env, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("::error file=a.md,line=1")
    assert lines[1].startswith("::warning file=a.md,line=2") and tiny_world.moved_to in lines[1]
    assert (tmp_path / "github_output").read_text() == "dead-left=1\n"
    summary = (tmp_path / "step_summary").read_text()
    assert summary.startswith("## pagetrail fix\n\n| file | alive | moved |")
    assert "| `a.md` | 0 | 1 | 0 | 0 | 1 |" in summary
    assert (f"| `a.md:2` | {tiny_world.moved_from} | moved (in the diff) | "
            f"{tiny_world.moved_to} |") in summary
    assert "2 dead link(s) left (dry run)." in summary
    # summary "false": the log only.
    (tmp_path / "step_summary").write_text("")
    done = _run_step(_step("fix"), work, {**env, "FIX_SUMMARY": "false"}, tmp_path)
    assert done.returncode == 0 and (tmp_path / "step_summary").read_text() == ""


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(work)], check=True,
                   capture_output=True)
    env = {**os.environ, **GIT_ENV}
    (work / "a.md").write_text("[x](https://old.example/)\n")
    subprocess.run(["git", "-C", str(work), "checkout", "-qb", "main"], check=True)
    subprocess.run(["git", "-C", str(work), "add", "a.md"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "docs"], check=True, env=env)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "main"], check=True,
                   capture_output=True)
    (work / "a.md").write_text("[x](https://new.example/)\n")  # what `fix --write` did
    return origin, work


def _fake_gh(tmp_path: Path) -> Path:
    """`gh` that records its arguments and the body it was given (GitHub is not reached)."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    gh = bindir / "gh"
    gh.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$GH_LOG"\n'
                  'while [ "$#" -gt 0 ]; do [ "$1" = --body-file ] && cp "$2" "$GH_LOG.body";'
                  ' shift; done\n')
    gh.chmod(0o755)
    return bindir


def _fix_report(tmp_path: Path) -> None:
    """The JSON report the fix step leaves for the pull request's body."""
    from pagetrail import FixReport

    (tmp_path / "pagetrail-fix.json").write_text(FixReport(written=True).model_dump_json())


def _show(origin: Path, ref: str) -> str:
    return subprocess.run(["git", "-C", str(origin), "show", f"{ref}:a.md"], text=True,
                          capture_output=True, check=True).stdout


def test_action_pushes_a_branch_and_opens_a_pull_request(tmp_path):
    step = _step("branch")
    assert "pull-request-branch" in step["if"] and "write" in step["if"]
    origin, work = _repository(tmp_path)
    _fix_report(tmp_path)
    env = {"BRANCH": "fix-links", "OPEN_PR": "true", "BASE": "main", "GH_TOKEN": "t",
           "GH_LOG": str(tmp_path / "gh.log"), "GITHUB_RUN_ID": "77",
           "PATH": f"{_fake_gh(tmp_path)}{os.pathsep}{os.environ['PATH']}"}
    done = _run_step(step, work, env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _show(origin, "fix-links") == "[x](https://new.example/)\n"
    assert _show(origin, "main") == "[x](https://old.example/)\n"
    assert (tmp_path / "github_output").read_text() == "branch=fix-links\n"
    called = (tmp_path / "gh.log").read_text().split("\n")
    assert called[:2] == ["pr", "create"]
    assert called[called.index("--base") + 1] == "main"
    assert called[called.index("--head") + 1] == "fix-links"
    body = (tmp_path / "gh.log.body").read_text()
    assert "| file | alive | moved |" in body and "Review each change" in body


def test_action_never_pushes_over_an_existing_branch(tmp_path):
    origin, work = _repository(tmp_path)
    _fix_report(tmp_path)
    # Someone's branch of that name, with work of theirs on it.
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "main:fix-links"],
                   check=True, capture_output=True)
    env = {"BRANCH": "fix-links", "OPEN_PR": "false", "BASE": "main", "GITHUB_RUN_ID": "77",
           "GH_LOG": str(tmp_path / "gh.log"),
           "PATH": f"{_fake_gh(tmp_path)}{os.pathsep}{os.environ['PATH']}"}
    done = _run_step(_step("branch"), work, env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _show(origin, "fix-links") == "[x](https://old.example/)\n"  # theirs, untouched
    assert _show(origin, "fix-links-77") == "[x](https://new.example/)\n"
    assert (tmp_path / "github_output").read_text() == "branch=fix-links-77\n"
    assert "the branch exists already" in done.stdout
    assert not (tmp_path / "gh.log").exists()  # pull-request "false": the branch only


def test_action_without_changes_pushes_nothing(tmp_path):
    origin, work = _repository(tmp_path)
    subprocess.run(["git", "-C", str(work), "checkout", "-q", "a.md"], check=True)
    done = _run_step(_step("branch"), work, {"BRANCH": "fix-links", "OPEN_PR": "true"},
                     tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "no changes"
    heads = subprocess.run(["git", "-C", str(origin), "branch", "--list"], text=True,
                           capture_output=True, check=True).stdout
    assert "fix-links" not in heads


def _hooks() -> list[dict]:
    from pre_commit.clientlib import load_manifest

    return load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))  # InvalidManifestError


@pytest.mark.slow
@pytest.mark.testbed
def test_pre_commit_hook_entry(tmp_path, tiny_world, testbed_env):
    from pagetrail.tools.fix.extract import FORMATS

    hooks = {hook["id"]: hook for hook in _hooks()}
    assert set(hooks) == {"pagetrail-fix", "pagetrail-fix-write"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        # pre-commit installs the repository itself: the core, no extra.
        assert hook["additional_dependencies"] == []
        # pre-commit appends the file names: `--` keeps them file names.
        assert shlex.split(hook["entry"])[-1] == "--"
        # The hook is given exactly the documents `fix` reads (never code: a URL in a .py
        # file is not a link to rewrite).
        files = re.compile(hook["files"])
        for suffix in FORMATS:
            assert files.search(f"docs/a{suffix}") and files.search(f"A{suffix.upper()}"), suffix
        for other in ("a.py", "a.md.bak", "mdx", "a.json"):
            assert not files.search(other), other
    (tmp_path / "ok.md").write_text(f"[x]({tiny_world.moved_to})\n")
    (tmp_path / "dead.md").write_text(f"[x]({tiny_world.nxdomain_url})\n")
    command = shlex.split(hooks["pagetrail-fix"]["entry"])
    command[0] = PAGETRAIL
    env = {**os.environ, **testbed_env, "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}"}
    assert subprocess.run([*command, "ok.md"], cwd=tmp_path, env=env).returncode == 0
    assert subprocess.run([*command, "ok.md", "dead.md"], cwd=tmp_path, env=env,
                          capture_output=True).returncode == 1


@pytest.mark.testbed
def test_pre_commit_hook_file_named_like_an_option(tmp_path, tiny_world, testbed_env):
    """A committed file named `--include=zz.md` is a file to check, not an option that
    would skip every other file (and pass)."""
    (tmp_path / "--include=zz.md").write_text(f"[x]({tiny_world.nxdomain_url})\n")
    (tmp_path / "dead.md").write_text(f"[x]({tiny_world.nxdomain_url})\n")
    env = {**os.environ, **testbed_env, "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}"}
    for hook in _hooks():
        command = shlex.split(hook["entry"])
        command[0] = PAGETRAIL
        done = subprocess.run([*command, "--include=zz.md", "dead.md"], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        assert "--include=zz.md" in done.stdout and "dead.md" in done.stdout


@pytest.mark.testbed
def test_pre_commit_write_hook_applies_the_fix(tmp_path, tiny_world, testbed_env):
    (tmp_path / "a.md").write_text(f"[solar]({tiny_world.moved_from})\n")
    hook = next(h for h in _hooks() if h["id"] == "pagetrail-fix-write")
    command = shlex.split(hook["entry"])
    command[0] = PAGETRAIL
    env = {**os.environ, **testbed_env, "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}"}
    done = subprocess.run([*command, "a.md"], cwd=tmp_path, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr + done.stdout
    assert (tmp_path / "a.md").read_text() == f"[solar]({tiny_world.moved_to})\n"


def test_markdown_report_escapes_cells():
    from pagetrail import FixReport, render_fix_report

    report = FixReport.model_validate({"links": [{
        "path": "a|b.md", "line": 3, "url": "https://x.example/a|b", "verdict": "unfixable",
        "form": "inline", "date": "2020-01-01T00:00:00Z", "date_source": "git"}],
        "files": [{"path": "a|b.md", "counts": {"unfixable": 1}}]})
    text = render_fix_report(report, "markdown")
    assert "| `a\\|b.md` | 0 | 0 | 0 | 0 | 1 | 0 | 0 |" in text
    assert "| `a\\|b.md:3` | https://x.example/a\\|b | unfixable |  |" in text
    assert json.loads(render_fix_report(report, "json"))["dead_left"] == 1
