"""`import pagetrail`: the public API — every name resolves, loads lazily, and type checkers
see the same names as the runtime."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
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


DOCS = INIT.parent.parent.parent / "docs" / "INTERFACES.md"


def documented(package: str) -> set[str]:
    """The names docs/INTERFACES.md lists under "### `package`" of its Public API section."""
    text = DOCS.read_text()
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    block = section.split(f"### `{package}`\n", 1)[1].split("\n### ", 1)[0]
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", block))


@pytest.mark.parametrize("package", ["pagetrail", "pagetrail.lab"])
def test_exported_members_are_the_documented_ones(package: str) -> None:
    """As httpx's test_exported_members: what a package exports is what its docs list, and
    every public member of the package's namespace is exported."""
    module = importlib.import_module(package)
    exported = set(module.__all__) - {"__version__"}
    assert exported == documented(package)
    members = {name for name in dir(module) if not name.startswith("_")
               and not inspect.ismodule(getattr(module, name))}
    assert members - {"annotations", "version", "PackageNotFoundError", "lazy_getattr",
                      "TYPE_CHECKING"} == exported


def test_cli_only_tools_are_not_the_library_api() -> None:
    import pagetrail.lab

    assert not set(pagetrail.lab.__all__) & set(pagetrail.__all__)
    for name in ("run_evaluation", "Testbed", "train_classifier", "ensure_pywb_venv",
                 "evaluate_aliases"):
        assert name in pagetrail.lab.__all__ and not hasattr(pagetrail, name)


def test_lab_loads_lazily_and_type_checkers_see_its_names() -> None:
    import pagetrail.lab

    probe = ("import sys, pagetrail.lab; "
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, timeout=120).stdout.split()
    assert loaded == []
    tree = ast.parse(Path(pagetrail.lab.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    seen = {(alias.asname or alias.name): (node.module if not alias.asname
                                           else f"{node.module}:{alias.name}")
            for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}
    assert seen == pagetrail.lab._EXPORTS
    for name in pagetrail.lab.__all__:
        module_name, _, attribute = pagetrail.lab._EXPORTS[name].partition(":")
        assert getattr(pagetrail.lab, name) is getattr(importlib.import_module(module_name),
                                                       attribute or name)
