"""A repository whose links fail `pagetrail fix` passes once its pagetrail.toml excludes a
pattern and accepts a status (and an ignore file and an inline marker accept the rest): run
as a person runs it, as the pre-commit hook runs it, and as the Action's step runs it, against
the loopback testbed (plugin_testbed.py's tiny world)."""

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

from pagetrail.cli.main import main

pytestmark = pytest.mark.testbed
ROOT = Path(__file__).resolve().parent.parent
PAGETRAIL = str(Path(sys.executable).with_name("pagetrail"))
RETIRED = "http://blog.example.org/2017/retired-announcement"  # the host answers 410
NEVER = "https://www.news.example/2031/never-written-story"  # 404, never archived
CONFIG = (
    "# links this repository accepts as they are\n"
    "exclude = [\"^https?://gone\\\\.example/\"]\n"
    "accept = [\"410\"]\n"
)


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.org",
           "GIT_COMMITTER_NAME": "Ann", "GIT_COMMITTER_EMAIL": "ann@example.org"}
    subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


def make_repo(root: Path, world, *, configured: bool) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    (root / "docs").mkdir()
    (root / "docs" / "links.md").write_text(
        "# Links\n\n"
        f"- The new page: [solar]({world.moved_to})\n"
        f"- An intranet host that outsiders never reach: <{world.nxdomain_url}>\n"
        f"- Retired on purpose, answers 410 Gone: [old post]({RETIRED})\n"
        + ("<!-- pagetrail-ignore -->\n" if configured else "")
        + f"- A story that was never written: [story]({NEVER})\n"
        f"- A host that refuses: <{world.refused_url}>\n")
    if configured:
        (root / "pagetrail.toml").write_text(CONFIG)
        (root / ".lycheeignore").write_text("# shared with lychee\nrefused\\.example\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "docs")
    return root


@pytest.fixture
def repos(tmp_path, tiny_world):
    return (make_repo(tmp_path / "plain", tiny_world, configured=False),
            make_repo(tmp_path / "configured", tiny_world, configured=True))


def _fix_json(repo: Path, monkeypatch, capsys) -> tuple[int, dict]:
    monkeypatch.chdir(repo)
    code = main(["fix", "--quiet", "--format", "json", "docs"])
    return code, json.loads(capsys.readouterr().out)


def test_the_configuration_makes_failing_links_pass(repos, tiny_world, testbed_env,
                                                    monkeypatch, capsys):
    plain, configured = repos
    code, report = _fix_json(plain, monkeypatch, capsys)
    verdicts = {link["url"]: link for link in report["links"]}
    assert code == 1
    for url in (tiny_world.nxdomain_url, RETIRED, NEVER, tiny_world.refused_url):
        assert verdicts[url]["verdict"] in ("unfixable", "skipped"), verdicts[url]
    assert verdicts[RETIRED]["verdict"] == verdicts[NEVER]["verdict"] == "unfixable"
    assert report["dead_left"] >= 3

    code, report = _fix_json(configured, monkeypatch, capsys)
    verdicts = {link["url"]: link for link in report["links"]}
    assert code == 0, verdicts
    assert report["dead_left"] == 0
    assert verdicts[tiny_world.moved_to]["verdict"] == "alive"
    gone = verdicts[tiny_world.nxdomain_url]
    assert gone["verdict"] == "excluded"
    assert gone["reason"] == (f"matches '^https?://gone\\\\.example/' "
                              f"({(configured / 'pagetrail.toml').resolve()}:2)")
    retired = verdicts[RETIRED]
    assert retired["verdict"] == "alive" and retired["reason"].startswith(
        "HTTP 410 is accepted (") and retired["reason"].endswith("pagetrail.toml:3)")
    assert verdicts[NEVER]["verdict"] == "excluded"
    assert verdicts[NEVER]["reason"] == "pagetrail-ignore on line 6"
    assert verdicts[tiny_world.refused_url]["verdict"] == "excluded"
    assert verdicts[tiny_world.refused_url]["reason"].endswith("(.lycheeignore:2)")
    # Excluded links are not even recovered: two distinct URLs were (alive, retired).
    assert report["distinct_urls"] == 2
    assert report["counts"]["excluded"] == 3

    # --no-config: the file and the ignore file are not read, so the repository fails
    # again; the inline marker is part of the document and still holds.
    monkeypatch.chdir(configured)
    assert main(["fix", "--quiet", "--format", "json", "--no-config", "docs"]) == 1
    again = {link["url"]: link for link in json.loads(capsys.readouterr().out)["links"]}
    assert again[NEVER]["verdict"] == "excluded"
    assert again[RETIRED]["verdict"] not in ("alive", "excluded")


def test_the_pre_commit_hook_passes_with_the_configuration(repos, testbed_env):
    from pre_commit.clientlib import load_manifest

    hook = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))[0]
    command = shlex.split(hook["entry"])
    command[0] = PAGETRAIL
    files = re.compile(hook["files"])
    plain, configured = repos
    env = {**os.environ, **testbed_env}
    for repo, expected in ((plain, 1), (configured, 0)):
        # pre-commit runs the hook at the repository's root with the staged files' paths.
        staged = [name for name in subprocess.run(
            ["git", "-C", str(repo), "ls-files"], capture_output=True, text=True,
            check=True).stdout.split() if files.search(name)]
        assert staged == ["docs/links.md"]
        done = subprocess.run([*command, *staged], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == expected, (repo.name, done.stdout, done.stderr)


def _fix_step(action: dict) -> dict:
    steps = action["runs"]["steps"]
    return next(step for step in steps if step.get("id") == "fix")


def test_the_action_step_passes_with_the_configuration(repos, testbed_env, tmp_path):
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    # The step's own script, with this checkout's pagetrail first on PATH in place of the one
    # the Action installs.
    script = _fix_step(action)["run"]
    plain, configured = repos
    for repo, dead_left in ((plain, "1"), (configured, "0")):
        output = tmp_path / f"{repo.name}-output"
        output.write_text("")
        env = {**os.environ, **testbed_env, "FIX_PATHS": "docs", "FIX_ARGS": "",
               "FIX_FORMAT": "github", "FIX_WRITE": "false", "FIX_SUMMARY": "true",
               "GITHUB_OUTPUT": str(output), "RUNNER_TEMP": str(tmp_path),
               "GITHUB_STEP_SUMMARY": str(tmp_path / f"{repo.name}-summary.md"),
               "PATH": f"{Path(PAGETRAIL).parent}{os.pathsep}{os.environ['PATH']}"}
        done = subprocess.run(["bash", "-ec", script], cwd=repo, env=env, text=True,
                              capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert f"dead-left={dead_left}" in output.read_text(), (repo.name, done.stdout)
        if dead_left == "0":
            assert "::error" not in done.stdout and "::warning" not in done.stdout
