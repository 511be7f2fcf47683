"""The recovery pipeline: check, archives, evidence, the chain of stages, answer, learn.

Owns `recover_link()` (the faces' one route) and `recover()`, and the formats of a
Recovery. What is learnt beside it — site-level alias inference (FABLE), the URL topic
classifier, related archived pages — is `tools.learning`'s, called through that package.
Imports every lower stage (ranking/, engines/, evidence/, linkcheck/, archive/, content/,
net/) and the tools/ top level.

Modules: route (recover_link), pipeline (recover), chain (the order and the stop rule),
stages/ (one module a stage), context (Context, Findings, Budget, DeadURL, Ask), asking,
candidates, link_evidence, answer, learn, memory (the store), homes, output, siblings,
sibling_redirects.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "Budget": "pagetrail.tools.recovery.context",
    "ProgressFn": "pagetrail.tools.recovery.context",
    "add_watch": "pagetrail.tools.recovery.memory",
    "list_watches": "pagetrail.tools.recovery.memory",
    "moves_for_site": "pagetrail.tools.recovery.memory",
    "record_pick": "pagetrail.tools.recovery.memory",
    "recover": "pagetrail.tools.recovery.pipeline",
    "recover_link": "pagetrail.tools.recovery.route",
    "remove_watch": "pagetrail.tools.recovery.memory",
    "robust_anchor": "pagetrail.tools.recovery.output",
    "robust_link": "pagetrail.tools.recovery.output",
    "summary_line": "pagetrail.tools.recovery.output",
    "watched_channels": "pagetrail.tools.recovery.memory",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
