"""Load a script of bench/ as a module, for the tests of its functions (bench/ is no package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(script: str, name: str | None = None) -> ModuleType:
    """bench/`script`.py as the module `name` (default `pagetrail_bench_<script>`), registered
    in sys.modules: dataclasses resolve their module by name."""
    module_name = name or f"pagetrail_bench_{script}"
    spec = importlib.util.spec_from_file_location(module_name, BENCH / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
