"""`import pagetrail`: the public API — every name resolves, loads lazily, and type checkers
see the same names as the runtime."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import pagetrail

INIT = Path(pagetrail.__file__)
HEAVY = ("sqlalchemy", "sklearn", "trafilatura", "pagetrail.tools", "pagetrail.store", "httpx")


def test_importing_pagetrail_loads_no_engine_module() -> None:
    probe = ("import sys, pagetrail; "
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, timeout=120).stdout.split()
    assert loaded == []


def test_a_name_loads_only_its_module() -> None:
    probe = ("import sys, pagetrail; pagetrail.parse_date; "
             "print(' '.join(m for m in ('sqlalchemy', 'sklearn', 'trafilatura') "
             "if m in sys.modules), 'dates' if 'pagetrail.tools.content.dates' in sys.modules else '')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["dates"]


def test_every_public_name_resolves_to_its_module_object() -> None:
    for name in pagetrail.__all__:
        value = getattr(pagetrail, name)
        assert value is not None, name
        if name == "__version__":
            continue
        module_name, _, attribute = pagetrail._EXPORTS[name].partition(":")
        module = sys.modules[module_name]
        assert value is getattr(module, attribute or name), name


def test_all_lists_exactly_the_exports() -> None:
    assert set(pagetrail.__all__) == {"__version__", *pagetrail._EXPORTS}
    assert len(pagetrail.__all__) == len(set(pagetrail.__all__))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'recovr_link'"):
        _ = pagetrail.recovr_link  # type: ignore[attr-defined]
    assert not hasattr(pagetrail, "Fetcher")  # an engine internal, not public


def type_checking_imports() -> dict[str, str]:
    """Public name → "module:attribute" as the TYPE_CHECKING block imports it."""
    tree = ast.parse(INIT.read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            public = alias.asname or alias.name
            seen[public] = (node.module if public == alias.name
                            else f"{node.module}:{alias.name}")
    return seen


def test_type_checkers_see_the_runtime_names() -> None:
    assert type_checking_imports() == pagetrail._EXPORTS


def test_the_facade_and_errors_are_documented() -> None:
    undocumented = [name for name in pagetrail.__all__ if name != "__version__"
                    and (inspect.isclass(getattr(pagetrail, name))
                         or inspect.isfunction(getattr(pagetrail, name)))
                    and not (getattr(pagetrail, name).__doc__ or "").strip()]
    assert undocumented == []
