"""The store boundary (issue #16): store/ is the only package that knows SQL, and it imports
nothing from the engine.

Walks the source with `ast` (imports inside functions count too): outside store/, no module
imports SQLAlchemy, pagetrail.store.models or any ORM class from a store module; inside
store/, no module imports pagetrail.tools (or a face)."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.orm import DeclarativeBase

REPO = Path(__file__).resolve().parent.parent
ENGINE_AND_FACES = ("tools", "server", "bot", "cli")



def imported_modules(tree: ast.AST) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names imported from it) for every import in the tree, in line order."""
    for node in sorted(ast.walk(tree), key=lambda n: getattr(n, "lineno", 0)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, tuple(a.name for a in node.names)


def _is_orm_class(module: str, name: str) -> bool:
    if f"{module}.{name}" == "pagetrail.store.models":  # from pagetrail.store import models
        return True
    value = getattr(importlib.import_module(module), name, None)
    return isinstance(value, type) and issubclass(value, DeclarativeBase)


def sql_violations(source: str, where: str) -> list[str]:
    """Imports of SQL outside store/: SQLAlchemy, the models module, an ORM class."""
    found = []
    for line, module, names in imported_modules(ast.parse(source)):
        if module.split(".")[0] == "sqlalchemy" or module.startswith("pagetrail.store.models"):
            found.append(f"{where}:{line} imports {module}")
        elif module == "pagetrail.store" or module.startswith("pagetrail.store."):
            found += [f"{where}:{line} imports the ORM class {module}.{name}"
                      for name in names if _is_orm_class(module, name)]
    return found


def engine_violations(source: str, where: str) -> list[str]:
    """Imports of the engine or a face from inside store/."""
    return [f"{where}:{line} imports {module}"
            for line, module, _names in imported_modules(ast.parse(source))
            if module.split(".")[:2] in (["pagetrail", p] for p in ENGINE_AND_FACES)]


def _sources(package: str) -> Iterator[tuple[str, str]]:
    for path in sorted((REPO / package).rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        yield where, path.read_text(encoding="utf-8")


def test_no_sql_outside_the_store() -> None:
    found = [v for package in ENGINE_AND_FACES for where, source in _sources(package)
             for v in sql_violations(source, where)]
    assert found == []


def test_the_store_imports_nothing_from_the_engine_or_the_faces() -> None:
    found = [v for where, source in _sources("store") for v in engine_violations(source, where)]
    assert found == []


def test_the_walker_catches_planted_violations() -> None:
    planted = (
        "import sqlalchemy.orm\n"
        "def f():\n"
        "    from sqlalchemy import select\n"
        "    from pagetrail.store.models import Pick\n"
        "    from pagetrail.store import RecoveryRow, open_store\n"
        "    from pagetrail.store.pages import LocalPage\n"
        "    from pagetrail.store import models\n"
    )
    found = sql_violations(planted, "tools/planted.py")
    assert found == [
        "tools/planted.py:1 imports sqlalchemy.orm",
        "tools/planted.py:3 imports sqlalchemy",
        "tools/planted.py:4 imports pagetrail.store.models",
        "tools/planted.py:5 imports the ORM class pagetrail.store.RecoveryRow",
        "tools/planted.py:6 imports the ORM class pagetrail.store.pages.LocalPage",
        "tools/planted.py:7 imports the ORM class pagetrail.store.models",
    ]
    # The store's own typed functions are the allowed way in.
    assert sql_violations("from pagetrail.store.picks import insert_pick\n", "tools/x.py") == []
    planted_store = "def g():\n    from pagetrail.tools.net.urls import site_of\n"
    assert engine_violations(planted_store, "store/planted.py") == [
        "store/planted.py:2 imports pagetrail.tools.net.urls"]
    assert engine_violations("import pagetrail.bot.app\n", "store/x.py") == [
        "store/x.py:1 imports pagetrail.bot.app"]
