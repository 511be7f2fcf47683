"""pagetrail.lab — the command line's own tools, apart from the library API.

Evaluating the engine on testbed worlds, serving a testbed (and building its pywb archive),
training and evaluating the URL topic classifier, and evaluating site aliases on FABLE's
dataset: what `pagetrail eval`, `testbed`, `subset`, `demo`, `classify` and `aliases` use.
A library user needs none of it; `import pagetrail` stays the API (tests/test_public_api.py
keeps both lists equal to what docs/INTERFACES.md documents).

Names load lazily (PEP 562), as in `pagetrail`.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# Public name → "module" (same attribute name) or "module:attribute".
_EXPORTS: dict[str, str] = {
    # Evaluation on testbed worlds
    "EVAL_METHODS": "pagetrail.tools.eval.eval_runner",
    "EngineChoice": "pagetrail.tools.eval.eval_runner",
    "expand_methods": "pagetrail.tools.eval.eval_runner",
    "resolve_eval_engine": "pagetrail.tools.eval.eval_runner:resolve_engine",
    "run_evaluation": "pagetrail.tools.eval.eval_runner",
    "CaseResult": "pagetrail.tools.eval.evaluate",
    "build_eval_report": "pagetrail.tools.eval.evaluate:build_report",
    "eval_feature_rows": "pagetrail.tools.eval.features:feature_rows",
    "NOWEB_ENGINES": "pagetrail.tools.eval.multiworld",
    "WorldRun": "pagetrail.tools.eval.multiworld",
    "build_multiworld_report": "pagetrail.tools.eval.multiworld",
    "void_reason": "pagetrail.tools.eval.multiworld",

    # The testbed (a loopback web, archive and search engine) and its pywb archive
    "Testbed": "pagetrail.tools.testbed.runner",
    "World": "pagetrail.tools.testbed.world",
    "load_world": "pagetrail.tools.testbed.world",
    "ensure_pywb_venv": "pagetrail.tools.testbed.archive",
    "pywb_venv_path": "pagetrail.tools.testbed.archive",
    "SubsetOptions": "pagetrail.tools.testbed.subset",
    "make_subset": "pagetrail.tools.testbed.subset",

    # Training and evaluating the URL topic classifier
    "CLASSIFIER_KINDS": "pagetrail.tools.learning.classify:MODEL_KINDS",
    "DEFAULT_CLASSIFIER_KIND": "pagetrail.tools.learning.classify:DEFAULT_KIND",
    "DEFAULT_CLASSIFIER_VARIANT": "pagetrail.tools.learning.classify:DEFAULT_VARIANT",
    "CLASSIFIER_PAPER_TABLE6": "pagetrail.tools.learning.classify:PAPER_TABLE6",
    "evaluate_classifier": "pagetrail.tools.learning.classify:evaluate",
    "load_classifier_candidates": "pagetrail.tools.learning.classify:load_candidates",
    "load_classifier_examples": "pagetrail.tools.learning.classify:load_examples",
    "load_classifier": "pagetrail.tools.learning.classify:load_model",
    "train_classifier": "pagetrail.tools.learning.classify:train",
    "URI_TOKEN_VARIANTS": "pagetrail.tools.content.uritokens:VARIANTS",

    # Site aliases evaluated on FABLE's dataset
    "evaluate_aliases": "pagetrail.tools.eval.alias_eval",
    "load_fable_dataset": "pagetrail.tools.eval.alias_eval",
    "best_swept": "pagetrail.tools.eval.alias_eval",
    "ALIAS_SWEEP_GRID": "pagetrail.tools.eval.alias_eval:SWEEP_GRID",
    "ALIAS_SWEEP_MIN_PRECISION": "pagetrail.tools.eval.alias_eval:SWEEP_MIN_PRECISION",
}

__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS

__getattr__ = lazy_getattr("pagetrail.lab", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
