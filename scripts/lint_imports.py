"""Check the import contract (pyproject `[tool.importlinter]`) with import-linter.

The checker finds a package's modules by walking its directory, but `pagetrail`'s
sub-packages live beside it (pyproject `[tool.setuptools.package-dir]`: tools/ installs as
pagetrail.tools, …). So the installed layout is laid out first, as symbolic links in a
temporary directory, and `lint-imports` runs on that tree with this checkout's config.

    python scripts/lint_imports.py [--root DIR]

Exits with lint-imports' status (0: every contract kept).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lay_out(root: Path, into: Path) -> Path:
    """Link `root`'s mapped packages into `into` as the tree an install has; the top
    package's directory is returned."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    top = next(name for name in mapping if "." not in name)
    package = into / top
    package.mkdir()
    for entry in (root / mapping[top]).iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry.resolve())
    for name, folder in mapping.items():
        parts = name.split(".")
        # Nested mappings (pagetrail.tools.engines) come with their parent's link.
        if len(parts) == 2 and parts[0] == top:
            (package / parts[1]).symlink_to((root / folder).resolve())
    return package


def run_lint_imports(tree: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with `config` on the packages laid out in `tree`; output captured."""
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or \
        shutil.which("lint-imports")
    if command is None:
        raise SystemExit("lint-imports not found: pip install import-linter (the dev extra)")
    # The tree comes first on the path, ahead of an editable install's finder; a cache
    # would go stale between differently laid-out trees, so none is kept.
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([command, "--config", str(config), "--no-cache"], cwd=tree,
                          env=environment, capture_output=True, text=True, timeout=300,
                          check=False)


def lint_imports(root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The contract of `root`'s pyproject checked on `root`'s packages."""
    with tempfile.TemporaryDirectory(prefix="pagetrail-imports-") as tree:
        lay_out(root, Path(tree))
        return run_lint_imports(Path(tree), root / "pyproject.toml")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    result = lint_imports(args.root.resolve())
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
