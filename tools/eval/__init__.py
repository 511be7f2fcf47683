"""Measuring the engine on testbed worlds and datasets.

Owns running the engine on every case of a world, scoring recoveries against the world's
truth, and the offline alias-inference evaluation. Imports evidence/, recovery/ (by name, so a
broken engine is reported, not fatal), content/, net/ and the tools/ top level.

Modules: alias_eval, costs (where a recovery's requests go), eval_runner, evaluate,
multiworld (several worlds: each, mean, worst), recording (the runner's recording Fetcher).
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "CaseResult": "pagetrail.tools.eval.evaluate",
    "EVAL_METHODS": "pagetrail.tools.eval.eval_runner",
    "EngineChoice": "pagetrail.tools.eval.eval_runner",
    "SWEEP_GRID": "pagetrail.tools.eval.alias_eval",
    "SWEEP_MIN_PRECISION": "pagetrail.tools.eval.alias_eval",
    "best_swept": "pagetrail.tools.eval.alias_eval",
    "build_report": "pagetrail.tools.eval.evaluate",
    "evaluate_aliases": "pagetrail.tools.eval.alias_eval",
    "expand_methods": "pagetrail.tools.eval.eval_runner",
    "load_fable_dataset": "pagetrail.tools.eval.alias_eval",
    "resolve_engine": "pagetrail.tools.eval.eval_runner",
    "run_evaluation": "pagetrail.tools.eval.eval_runner",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
