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


def stub_imports(stub: Path) -> dict[str, str]:
    """Public name → "module[:attribute]" as a generated stub re-exports it."""
    seen: dict[str, str] = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            assert node.module
            for alias in node.names:
                assert alias.asname, "a stub re-exports explicitly: from X import Y as Y"
                seen[alias.asname] = (node.module if alias.asname == alias.name
                                      else f"{node.module}:{alias.name}")
    return seen


def test_type_checkers_see_the_runtime_names() -> None:
    assert stub_imports(INIT.with_suffix(".pyi")) == pagetrail._EXPORTS


REPO = INIT.parent.parent.parent


def test_every_stub_is_generated_from_its_exports() -> None:
    """Each lazy-export module lists a name once (its _EXPORTS); the stubs type checkers read
    are generated from it, and a stale or missing stub fails here."""
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_exports.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_exports
    finally:
        sys.path.remove(str(REPO / "scripts"))
    modules = {path.relative_to(REPO).as_posix() for path in gen_exports.lazy_modules()}
    assert {"src/pagetrail/__init__.py", "src/pagetrail/lab.py", "store/__init__.py",
            "tools/scan/__init__.py"} <= modules
    for relative in modules:
        path = REPO / relative
        assert stub_imports(path.with_suffix(".pyi")) == gen_exports.exports_of(path), relative
        source = path.read_text()
        assert "TYPE_CHECKING" not in source and "__all__ = [" in source, relative


def test_a_stale_or_missing_stub_is_named(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_exports
    finally:
        sys.path.remove(str(REPO / "scripts"))
    module = tmp_path / "__init__.py"
    module.write_text((REPO / "tools" / "learning" / "__init__.py").read_text())
    assert gen_exports.stale_stubs([module], write=False) == [module.with_suffix(".pyi")]
    assert gen_exports.stale_stubs([module], write=True) == [module.with_suffix(".pyi")]
    assert gen_exports.stale_stubs([module], write=False) == []
    module.write_text(module.read_text().replace('"infer_aliases"', '"infer_alias"'))
    assert gen_exports.stale_stubs([module], write=False) == [module.with_suffix(".pyi")]
    assert "as infer_alias\n" in gen_exports.stub_text(module, gen_exports.exports_of(module))


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
    assert members - {"annotations", "version", "PackageNotFoundError", "lazy_getattr"} == exported


def test_cli_only_tools_are_not_the_library_api() -> None:
    import pagetrail.lab

    assert not set(pagetrail.lab.__all__) & set(pagetrail.__all__)
    for name in ("run_evaluation", "Testbed", "train_classifier", "ensure_pywb_venv",
                 "evaluate_aliases", "build_digest", "read_batch", "run_doctor", "check_summary"):
        assert name in pagetrail.lab.__all__ and not hasattr(pagetrail, name)


def test_lab_loads_lazily_and_type_checkers_see_its_names() -> None:
    import pagetrail.lab

    probe = ("import sys, pagetrail.lab; "
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, timeout=120).stdout.split()
    assert loaded == []
    assert stub_imports(Path(pagetrail.lab.__file__).with_suffix(".pyi")) == pagetrail.lab._EXPORTS
    for name in pagetrail.lab.__all__:
        module_name, _, attribute = pagetrail.lab._EXPORTS[name].partition(":")
        assert getattr(pagetrail.lab, name) is getattr(importlib.import_module(module_name),
                                                       attribute or name)
