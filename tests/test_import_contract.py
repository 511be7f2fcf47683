"""The import contract (pyproject [tool.importlinter]) holds, and the check can fail."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "lint_imports.py"

def load_script():
    spec = importlib.util.spec_from_file_location("lint_imports", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tree_keeps_the_import_contract() -> None:
    result = load_script().lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]
    assert len(contracts) >= 3
    for contract in contracts:
        assert f"{contract['name']} KEPT" in result.stdout
    # Every module was laid out and read: a tree that lost a package would keep the
    # contract vacuously.
    analyzed = int(result.stdout.split("Analyzed ")[1].split(" files")[0])
    assert analyzed == len(package_files())


def package_files() -> list[Path]:
    """The .py files an install has under `pagetrail` (pyproject's package-dir mapping)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    files: list[Path] = []
    for name, folder in mapping.items():
        if name == "pagetrail":
            files += (ROOT / folder).glob("*.py")
        elif name.count(".") == 1:  # a sub-package: its nested mappings lie inside it
            files += [path for path in (ROOT / folder).rglob("*.py")
                      if "__pycache__" not in path.parts]
    return files


def with_module(tree: Path, package: str, name: str, source: str) -> None:
    """Add `name`.py to the laid-out `package` (a link to the real folder becomes a folder
    of links, so the checkout itself is never written)."""
    folder = tree / "pagetrail" / package
    real = folder.resolve()
    folder.unlink()
    folder.mkdir()
    for entry in real.iterdir():
        if entry.name != "__pycache__":
            (folder / entry.name).symlink_to(entry)
    (folder / f"{name}.py").write_text(source)


@pytest.mark.parametrize(("package", "source", "contract"), [
    ("cli", "from pagetrail.tools.net.fetch import Fetcher\n",
     "faces import the engine only through `pagetrail`"),
    ("bot", "from pagetrail.store import open_store\n",
     "faces import the engine only through `pagetrail`"),
    ("tools", "from pagetrail.cli.common import UsageError\n",
     "the engine and the store never import a face"),
    ("server", "from pagetrail.bot import blocks\n", "no face imports another"),
])
def test_a_module_that_breaks_the_contract_fails_the_check(
        tmp_path: Path, package: str, source: str, contract: str) -> None:
    script = load_script()
    script.lay_out(ROOT, tmp_path)
    with_module(tmp_path, package, "intruder", source)

    result = script.run_lint_imports(tmp_path, ROOT / "pyproject.toml")

    assert result.returncode != 0
    assert f"{contract} BROKEN" in result.stdout, result.stdout + result.stderr
    assert f"pagetrail.{package}.intruder" in result.stdout
