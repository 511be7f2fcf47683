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
