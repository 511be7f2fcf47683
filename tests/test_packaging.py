"""The distribution installs under one namespace, as a wheel and in editable mode."""

from __future__ import annotations

import importlib.util
import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FACE_FOLDERS = ("tools", "server", "bot", "store", "cli")


def test_no_generic_top_level_packages_importable() -> None:
    for name in FACE_FOLDERS:
        spec = importlib.util.find_spec(name)
        assert spec is None or "site-packages" not in str(spec.origin or ""), name


def test_top_level_package_reports_the_installed_version(capsys) -> None:
    from importlib.metadata import version

    import pagetrail
    from pagetrail.cli.main import main

    assert pagetrail.__version__ == version("pagetrail")
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"pagetrail {version('pagetrail')}"
    # The checkout's root (on sys.path under `python -m pytest`) must not shadow the mapping.
    assert not (REPO / "pagetrail").exists()


def test_installed_namespace_maps_repository_folders() -> None:
    import pagetrail.store
    import pagetrail.tools

    origin = Path(pagetrail.tools.__file__).resolve()
    if REPO in origin.parents:  # editable install: the repository folders themselves
        assert origin.parent == REPO / "tools"
        assert Path(pagetrail.store.__file__).resolve().parent == REPO / "store"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        check=True, capture_output=True, timeout=300,
    )
    return next(out.glob("pagetrail-*.whl"))


def test_wheel_contains_only_the_pagetrail_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops <= {"pagetrail", next(t for t in tops if t.endswith(".dist-info"))}
    assert "pagetrail/store/migrations/versions/0001_initial_schema.py" in names
    assert "pagetrail/store/migrations/script.py.mako" in names
    assert "pagetrail/__init__.py" in names
    # Every package folder of the tree is in the wheel (pyproject lists them one by one).
    for folder in ("tools", "server", "bot", "store", "cli", "demo"):
        for init in (REPO / folder).rglob("__init__.py"):
            inside = init.relative_to(REPO).as_posix()
            assert f"pagetrail/{inside}" in names, inside
    assert "pagetrail/tools/ranking/data/rank_calibration.json" in names
    # PEP 561: typed, with the generated stubs of the lazy-export modules (gen_exports.py).
    assert "pagetrail/py.typed" in names
    for stub in [*REPO.glob("src/pagetrail/*.pyi"), *REPO.glob("tools/*/__init__.pyi"),
                 REPO / "store" / "__init__.pyi"]:
        inside = stub.relative_to(REPO).as_posix().removeprefix("src/pagetrail/")
        assert f"pagetrail/{inside}" in names, inside
    assert not any(n.startswith("pagetrail/tests/") for n in names)


def test_wheel_installs_and_runs(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = Path(sysconfig.get_path("purelib", vars={"base": str(venv)}))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)], check=True, capture_output=True, timeout=300,
    )
    assert sorted(p.name for p in target.iterdir() if not p.name.endswith(".dist-info")) in (
        ["pagetrail"], ["bin", "pagetrail"],
    )
    # Dependencies come from the test environment, after the fresh install on the path.
    deps = os.pathsep.join(site.getsitepackages())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), deps]),
           "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"}
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import pagetrail.tools, sys; print(pagetrail.tools.__file__, pagetrail.__version__);"
         "from pagetrail.cli.main import main; sys.exit(main(['db', 'upgrade']))"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert str(target) in run.stdout
    assert "0+unknown" not in run.stdout.split("\n")[0]
    assert "at revision" in run.stdout


# --- The light core: `pip install pagetrail` without extras --------------------------------
#
# Tests stay offline, so the core environment is not resolved from an index: it is a fresh
# virtualenv holding exactly the distributions the wheel's core requirements reach (their
# files linked from this test environment, their metadata too), and the wheel itself.
# scripts/wheel_test.sh does the same with a real `pip install` from the index and counts.


def _requirements(metadata_text: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in metadata_text.splitlines()
            if line.startswith("Requires-Dist:")]


def core_closure(wheel: Path, extras: tuple[str, ...] = ()) -> set[str]:
    """Canonical names of the distributions `pip install WHEEL[extras]` installs (itself
    excluded), resolved against what this environment has installed."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        own = _requirements(archive.read(meta).decode())
    wanted: dict[str, set[str]] = {}
    pending = [(Requirement(text), set(extras)) for text in own]
    while pending:
        requirement, active = pending.pop()
        if requirement.marker and not any(
                requirement.marker.evaluate({"extra": e}) for e in active | {""}):
            continue
        name = canonicalize_name(requirement.name)
        if name == "pagetrail":  # a self-reference: pagetrail[all] → its extras
            pending += [(Requirement(t), set(requirement.extras)) for t in own]
            continue
        if name in wanted and set(requirement.extras) <= wanted[name]:
            continue
        wanted[name] = wanted.get(name, set()) | set(requirement.extras)
        pending += [(Requirement(t), wanted[name])
                    for t in distribution(requirement.name).requires or []]
    return set(wanted)


def _link_distribution(name: str, site_packages: Path) -> None:
    from importlib.metadata import distribution

    dist = distribution(name)
    for file in dist.files or []:
        if file.parts[0] == ".." or "__pycache__" in file.parts:
            continue  # console scripts; bytecode is made again
        source = Path(dist.locate_file(file))
        target = site_packages / file
        if source.exists() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)


def _venv_with(wheel: Path, venv: Path, extras: tuple[str, ...] = ()) -> Path:
    """A virtualenv holding exactly what `pip install WHEEL[extras]` would; its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = Path(sysconfig.get_path("purelib", vars={"base": str(venv)}))
    for name in core_closure(wheel, extras):
        _link_distribution(name, target)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)], check=True, capture_output=True, timeout=300,
    )
    return venv / "bin" / "python"


@pytest.fixture(scope="module")
def core_python(wheel: Path, tmp_path_factory) -> Path:
    """The Python of a virtualenv holding only pagetrail's core (no extra)."""
    return _venv_with(wheel, tmp_path_factory.mktemp("core") / "venv")


# What each extra makes work: run in a virtualenv of the core plus that extra alone.
EXTRA_FACES = {
    "slack": "import pagetrail.bot.server, pagetrail.bot.scheduler, pagetrail.bot.digest_post",
    "workers": "import pagetrail.tools.workers.celery_app, psycopg",
    "postgres": "import psycopg, sqlalchemy; sqlalchemy.create_engine("
                "'postgresql+psycopg://u:p@127.0.0.1:9/d')",
    "charts": "from pagetrail.tools.scan.trend import SERIES, Trend, render_chart\n"
              "t = Trend('c', ['2026-W01'], {n: [1] for n in SERIES})\n"
              "assert render_chart(t)[:4] == b'\\x89PNG'",
    "testbed": "import pagetrail.tools.testbed.runner, pagetrail.tools.testbed.worldgen",
    "train": "from pagetrail.tools.ranking.rank import fit_calibration\n"
             "fit_calibration([({'content': 1.0}, True), ({'content': 0.0}, False)] * 3)",
}


@pytest.mark.slow
@pytest.mark.parametrize("extra", sorted(EXTRA_FACES))
def test_each_extra_adds_its_face(wheel: Path, core_python: Path, tmp_path: Path,
                                  extra: str) -> None:
    python = _venv_with(wheel, tmp_path / "venv", (extra,))
    run = subprocess.run([str(python), "-c", EXTRA_FACES[extra]], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # The same lines fail in the core alone: the extra is what made them work.
    core = subprocess.run([str(core_python), "-c", EXTRA_FACES[extra]], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert core.returncode != 0 and "ModuleNotFoundError" in core.stderr, extra


def _core_cli(core_python: Path, *args: str, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(core_python), "-m", "pagetrail.cli", *args], text=True,
                          capture_output=True, env=env, cwd=cwd, timeout=300)


def _extras_in_pyproject() -> dict[str, list[str]]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]


def test_each_extra_brings_what_the_table_names(wheel: Path) -> None:
    from pagetrail.lab import missing_extra
    from pagetrail.tools.extras import EXTRA_OF_MODULE

    extras = _extras_in_pyproject()
    assert {"slack", "workers", "postgres", "charts", "all", "dev"} <= set(extras)
    core = core_closure(wheel)
    for module, extra in EXTRA_OF_MODULE.items():
        assert extra in extras, (module, extra)
        from importlib.metadata import packages_distributions

        dists = {d.lower().replace("_", "-") for d in packages_distributions()[module]}
        assert dists & core_closure(wheel, (extra,)), (module, extra)
        assert not dists & core, f"{module} is in the core, not only in [{extra}]"
        named = missing_extra(ModuleNotFoundError(name=f"{module}.sub"), "`x`")
        assert named is not None and f"pagetrail[{extra}]" in str(named)
    # [all] is every extra but dev; [dev] has everything [all] has.
    assert core_closure(wheel, ("all",)) == set().union(
        *(core_closure(wheel, (e,)) for e in extras if e not in {"all", "dev"}))
    assert core_closure(wheel, ("all",)) <= core_closure(wheel, ("dev",))
    assert missing_extra(ModuleNotFoundError(name="not_an_extra")) is None


def test_core_leaves_out_the_heavy_packages(wheel: Path) -> None:
    core = core_closure(wheel)
    for heavy in ("matplotlib", "scipy", "scikit-learn", "celery", "redis", "psycopg-binary",
                  "slack-bolt", "slack-sdk", "trustme", "aiohttp", "apscheduler", "pytest"):
        assert heavy not in core, heavy
    # The counted figure (scripts/wheel_test.sh, README): keep it from creeping up unseen.
    assert len(core) + 1 <= 76, sorted(core)


def test_core_imports_everything_but_the_extras(core_python: Path) -> None:
    """Every module of the installed package imports in the core, except those that need an
    extra's package — and those fail only on a module an extra brings."""
    script = (
        "import importlib, pkgutil, json, pagetrail\n"
        "import pagetrail.cli, pagetrail.server, pagetrail.bot, pagetrail.store, pagetrail.tools\n"
        "out = {}\n"
        "for pkg in (pagetrail.cli, pagetrail.server, pagetrail.bot, pagetrail.store, pagetrail.tools):\n"
        "    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        if (info.name.startswith('pagetrail.store.migrations.')\n"
        "                or info.name.endswith('.__main__')):\n"
        "            continue  # run by alembic / as a program, not imported\n"
        "        try:\n"
        "            importlib.import_module(info.name)\n"
        "        except ModuleNotFoundError as exc:\n"
        "            out[info.name] = exc.name\n"
        "print(json.dumps(out))\n"
    )
    run = subprocess.run([str(core_python), "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    import json

    from pagetrail.tools.extras import EXTRA_OF_MODULE

    failed = json.loads(run.stdout)
    assert failed, "nothing needs an extra: is this the core environment?"
    for module, missing in failed.items():
        assert missing.partition(".")[0] in EXTRA_OF_MODULE, (module, missing)
    for needed in ("pagetrail.cli.fix_cmd", "pagetrail.cli.check_cmd", "pagetrail.cli.recover_cmd",
                   "pagetrail.cli.serve_cmd", "pagetrail.server.app", "pagetrail.server.http",
                   "pagetrail.tools.fix.run", "pagetrail.tools.recovery.pipeline",
                   "pagetrail.cli.demo_cmd", "pagetrail.cli.worker_cmd"):
        assert needed not in failed, needed


@pytest.mark.parametrize(("argv", "env", "extra"), [
    (["serve", "slack"], {}, "slack"),
    (["demo"], {}, "testbed"),
    (["testbed", "serve", "w"], {}, "testbed"),
    (["worker"], {"PAGETRAIL_BROKER_URL": "redis://127.0.0.1:9/0",
                  "PAGETRAIL_DATABASE_URL": "postgresql://u:p@127.0.0.1:9/d"}, "workers"),
    (["db", "upgrade"], {"PAGETRAIL_DATABASE_URL": "postgresql://u:p@127.0.0.1:9/d"}, "postgres"),
])
def test_core_names_the_missing_extra(core_python: Path, tmp_path: Path, argv: list[str],
                                      env: dict[str, str], extra: str) -> None:
    environ = {**os.environ, "PAGETRAIL_DATA_DIR": str(tmp_path), **env}
    run = _core_cli(core_python, *argv, env=environ, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert f"install pagetrail[{extra}]" in run.stderr
    assert run.stderr.startswith("pagetrail: missing_extra: `pagetrail ")


def test_core_help_lists_the_core_commands(core_python: Path, tmp_path: Path) -> None:
    run = _core_cli(core_python, "--help", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    for command in ("fix", "check", "recover", "scan", "serve", "demo", "doctor"):
        assert f"    {command}" in run.stdout, command


@pytest.mark.testbed
def test_core_fixes_checks_and_recovers(core_python: Path, tmp_path: Path, tiny_world,
                                        testbed_env) -> None:
    env = {**os.environ, **testbed_env,
           "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'core.db'}"}
    check = _core_cli(core_python, "check", tiny_world.moved_from, "--json", env=env,
                      cwd=tmp_path)
    assert check.returncode in (0, 1), check.stderr
    assert '"dead"' in check.stdout
    (tmp_path / "a.md").write_text(f"[solar]({tiny_world.moved_from})\n")
    fix = _core_cli(core_python, "fix", "--write", "--format", "github", "a.md", env=env,
                    cwd=tmp_path)
    assert fix.returncode == 0, fix.stderr + fix.stdout
    assert (tmp_path / "a.md").read_text() == f"[solar]({tiny_world.moved_to})\n"
    recover = _core_cli(core_python, "recover", tiny_world.moved_from, "--json", env=env,
                        cwd=tmp_path)
    assert recover.returncode == 0, recover.stderr
    assert tiny_world.moved_to in recover.stdout


@pytest.mark.testbed
async def test_core_serves_mcp(core_python: Path, tmp_path: Path, tiny_world,
                               testbed_env) -> None:
    from mcp import Client, StdioServerParameters

    env = {**testbed_env, "PAGETRAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'mcp.db'}"}
    params = StdioServerParameters(command=str(core_python),
                                   args=["-m", "pagetrail.cli", "serve", "mcp"], env=env)
    async with Client(params, read_timeout_seconds=60) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"recover_link", "check_link"} <= names
        answer = await client.call_tool("check_link", {"url": tiny_world.news_root})
        assert not answer.is_error, answer.content
        assert answer.structured_content["verdict"] == "ok"


def test_release_workflow_and_changelog_agree_with_the_version() -> None:
    import tomllib

    import yaml

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog and f"## [{version}] - " in changelog
    assert f"[{version}]: " in changelog  # the version's link (Keep a Changelog)
    workflow = yaml.safe_load((REPO / ".github/workflows/release.yml").read_text())
    trigger = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert trigger == {"push": {"tags": ["v*"]}}
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing, no token
    assert any(step.get("uses", "").startswith("pypa/gh-action-pypi-publish@")
               for step in publish["steps"])
    build = "\n".join(step.get("run", "") for step in workflow["jobs"]["build"]["steps"])
    assert "python -m build" in build and "twine check --strict" in build
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


# --- Containers: the image and the compose file ----------------------------------------------


def test_compose_file_follows_the_compose_specification() -> None:
    """compose.yaml against the Compose Specification's own schema (tests/fixtures/compose),
    and the pieces of "Running on several machines" in it."""
    import json

    import jsonschema
    import yaml

    schema = json.loads((REPO / "tests/fixtures/compose/compose-spec.json").read_text())
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    errors = [f"{list(e.path)}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(compose)]
    assert not errors, errors
    services = compose["services"]
    assert set(services) == {"redis", "postgres", "migrate", "worker", "mcp", "slack"}
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    for name in ("worker", "mcp", "slack"):
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"}, name
        assert services[name]["image"] == services["migrate"]["image"], name
        env = services[name]["environment"]
        assert env["PAGETRAIL_DATABASE_URL"].startswith("postgresql://"), name
        assert env["PAGETRAIL_BROKER_URL"].startswith("redis://"), name
    assert services["worker"]["command"][0] == "worker"
    assert services["mcp"]["command"][:3] == ["serve", "mcp", "--http"]
    assert "PAGETRAIL_MCP_TOKEN" in services["mcp"]["environment"]  # bound beyond loopback
    assert services["slack"]["command"][:2] == ["serve", "slack"]
    # Published on the host's loopback only; a reverse proxy goes in front.
    for name in ("mcp", "slack"):
        assert all(port.startswith("127.0.0.1:") for port in services[name]["ports"]), name
    # No password in the file: each comes from the environment, required.
    text = (REPO / "compose.yaml").read_text()
    assert "${POSTGRES_PASSWORD:?" in text and "${REDIS_PASSWORD:?" in text


def test_dockerfile_is_multi_stage_non_root_with_every_extra() -> None:
    lines = [line.strip() for line in (REPO / "Dockerfile").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    stages = [line for line in lines if line.startswith("FROM ")]
    assert len(stages) == 2 and stages[0].endswith(" AS build")
    text = "\n".join(lines)
    assert "COPY --from=build /opt/pagetrail /opt/pagetrail" in text
    assert '[all]"' in text and "pip wheel" in text
    user = [line for line in lines if line.startswith("USER ")]
    assert user and user[-1].split()[1].split(":")[0] not in ("root", "0")
    assert lines.index(user[-1]) > lines.index(stages[1])
    assert 'ENTRYPOINT ["pagetrail"]' in text
    ignored = (REPO / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored
