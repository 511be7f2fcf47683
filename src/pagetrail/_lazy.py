"""PEP 562 lazy exports, shared by `pagetrail`, `pagetrail.lab`, the store and tools/' stages.

A package lists its public names as ``name → "module"`` (same attribute name) or
``"module:attribute"``; a name is imported on first use and then cached in the package,
so importing the package stays cheap (no SQLAlchemy, no engine) until a name is used.
Imports nothing from pagetrail, so the store may use it without depending on the engine.
The dict is the one list of a package's names: `__all__ = [*_EXPORTS]`, and the type stub
beside the package (`__init__.pyi`) is generated from it by scripts/gen_exports.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str],
                 namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module-level ``__getattr__`` of `package`, loading `exports` into `namespace`."""

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        value = getattr(import_module(module_name), attribute or name)
        namespace[name] = value
        return value

    return __getattr__
