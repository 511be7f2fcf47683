"""Evidence about a dead link beyond its memento, and the queries made of it.

Owns anchor-text quality, tags (meta keywords, social sources) and the query plan (which
queries, in which order). Imports content/, net/ and the tools/ top level.

Modules: anchor, queryplan, tags.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "METHOD_ALIASES": "pagetrail.tools.evidence.queryplan",
    "QueryEvidence": "pagetrail.tools.evidence.queryplan",
    "anchor_info": "pagetrail.tools.evidence.anchor",
    "get_tags": "pagetrail.tools.evidence.tags",
    "plan_queries": "pagetrail.tools.evidence.queryplan",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
