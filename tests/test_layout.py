"""tools/ by stage: each sub-package's public surface (its `__all__`) resolves, lazily."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
STAGES = ("net", "content", "archive", "linkcheck", "evidence", "ranking", "recovery", "scan",
          "workers", "eval")


def test_the_stages_exist() -> None:
    assert {p.parent.name for p in TOOLS.glob("*/__init__.py")} >= set(STAGES)


@pytest.mark.parametrize("stage", STAGES)
def test_every_public_name_resolves_to_its_module(stage: str) -> None:
    package = importlib.import_module(f"pagetrail.tools.{stage}")
    assert package.__all__, stage
    assert package.__doc__ and package.__doc__.strip(), stage
    for name in package.__all__:
        value = getattr(package, name)
        module = importlib.import_module(package._EXPORTS[name])
        assert value is getattr(module, name), f"{stage}.{name}"
        assert module.__name__.startswith(f"pagetrail.tools.{stage}."), f"{stage}.{name}"
    with pytest.raises(AttributeError):
        _ = package.no_such_name


@pytest.mark.parametrize("stage", STAGES)
def test_importing_a_stage_imports_none_of_its_modules(stage: str) -> None:
    # The surface is lazy: a stage's package never drags in its modules (nor the stages they
    # import), so the stages' cross imports cannot become cycles through an __init__.
    code = (f"import sys, pagetrail.tools.{stage} as p; "
            f"print(sorted(m for m in sys.modules if m.startswith('pagetrail.tools.{stage}.')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=60).stdout.strip()
    assert out == "[]", out
