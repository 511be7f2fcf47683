"""pagetrail.lab — the command line's own tools, apart from the library API.

Evaluating the engine on testbed worlds, serving a testbed (and building its pywb archive),
training and evaluating the URL topic classifier, and evaluating site aliases on FABLE's
dataset: what `pagetrail eval`, `testbed`, `subset`, `demo`, `classify` and `aliases` use.
A library user needs none of it; `import pagetrail` stays the API (tests/test_public_api.py
keeps both lists equal to what docs/INTERFACES.md documents).

Names load lazily (PEP 562), as in `pagetrail`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagetrail._lazy import lazy_getattr

if TYPE_CHECKING:  # what type checkers and IDEs see; kept equal to _EXPORTS by a test
    from pagetrail.tools.content.uritokens import VARIANTS as URI_TOKEN_VARIANTS
    from pagetrail.tools.eval.alias_eval import (
        SWEEP_GRID as ALIAS_SWEEP_GRID,
    )
    from pagetrail.tools.eval.alias_eval import (
        SWEEP_MIN_PRECISION as ALIAS_SWEEP_MIN_PRECISION,
    )
    from pagetrail.tools.eval.alias_eval import (
        best_swept,
        evaluate_aliases,
        load_fable_dataset,
    )
    from pagetrail.tools.eval.eval_runner import (
        EVAL_METHODS,
        EngineChoice,
        expand_methods,
        run_evaluation,
    )
    from pagetrail.tools.eval.eval_runner import (
        resolve_engine as resolve_eval_engine,
    )
    from pagetrail.tools.eval.evaluate import CaseResult
    from pagetrail.tools.eval.evaluate import build_report as build_eval_report
    from pagetrail.tools.eval.features import feature_rows as eval_feature_rows
    from pagetrail.tools.eval.multiworld import (
        NOWEB_ENGINES,
        WorldRun,
        build_multiworld_report,
        void_reason,
    )
    from pagetrail.tools.recovery.classify import (
        DEFAULT_KIND as DEFAULT_CLASSIFIER_KIND,
    )
    from pagetrail.tools.recovery.classify import (
        DEFAULT_VARIANT as DEFAULT_CLASSIFIER_VARIANT,
    )
    from pagetrail.tools.recovery.classify import (
        MODEL_KINDS as CLASSIFIER_KINDS,
    )
    from pagetrail.tools.recovery.classify import (
        PAPER_TABLE6 as CLASSIFIER_PAPER_TABLE6,
    )
    from pagetrail.tools.recovery.classify import (
        evaluate as evaluate_classifier,
    )
    from pagetrail.tools.recovery.classify import (
        load_candidates as load_classifier_candidates,
    )
    from pagetrail.tools.recovery.classify import (
        load_examples as load_classifier_examples,
    )
    from pagetrail.tools.recovery.classify import (
        load_model as load_classifier,
    )
    from pagetrail.tools.recovery.classify import (
        train as train_classifier,
    )
    from pagetrail.tools.testbed.archive import ensure_pywb_venv, pywb_venv_path
    from pagetrail.tools.testbed.runner import Testbed
    from pagetrail.tools.testbed.subset import SubsetOptions, make_subset
    from pagetrail.tools.testbed.world import World, load_world

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
    "CLASSIFIER_KINDS": "pagetrail.tools.recovery.classify:MODEL_KINDS",
    "DEFAULT_CLASSIFIER_KIND": "pagetrail.tools.recovery.classify:DEFAULT_KIND",
    "DEFAULT_CLASSIFIER_VARIANT": "pagetrail.tools.recovery.classify:DEFAULT_VARIANT",
    "CLASSIFIER_PAPER_TABLE6": "pagetrail.tools.recovery.classify:PAPER_TABLE6",
    "evaluate_classifier": "pagetrail.tools.recovery.classify:evaluate",
    "load_classifier_candidates": "pagetrail.tools.recovery.classify:load_candidates",
    "load_classifier_examples": "pagetrail.tools.recovery.classify:load_examples",
    "load_classifier": "pagetrail.tools.recovery.classify:load_model",
    "train_classifier": "pagetrail.tools.recovery.classify:train",
    "URI_TOKEN_VARIANTS": "pagetrail.tools.content.uritokens:VARIANTS",

    # Site aliases evaluated on FABLE's dataset
    "evaluate_aliases": "pagetrail.tools.eval.alias_eval",
    "load_fable_dataset": "pagetrail.tools.eval.alias_eval",
    "best_swept": "pagetrail.tools.eval.alias_eval",
    "ALIAS_SWEEP_GRID": "pagetrail.tools.eval.alias_eval:SWEEP_GRID",
    "ALIAS_SWEEP_MIN_PRECISION": "pagetrail.tools.eval.alias_eval:SWEEP_MIN_PRECISION",
}

__all__ = [
    "ALIAS_SWEEP_GRID",
    "ALIAS_SWEEP_MIN_PRECISION",
    "CLASSIFIER_KINDS",
    "CLASSIFIER_PAPER_TABLE6",
    "DEFAULT_CLASSIFIER_KIND",
    "DEFAULT_CLASSIFIER_VARIANT",
    "EVAL_METHODS",
    "NOWEB_ENGINES",
    "URI_TOKEN_VARIANTS",
    "CaseResult",
    "EngineChoice",
    "SubsetOptions",
    "Testbed",
    "World",
    "WorldRun",
    "best_swept",
    "build_eval_report",
    "build_multiworld_report",
    "ensure_pywb_venv",
    "eval_feature_rows",
    "evaluate_aliases",
    "evaluate_classifier",
    "expand_methods",
    "load_classifier",
    "load_classifier_candidates",
    "load_classifier_examples",
    "load_fable_dataset",
    "load_world",
    "make_subset",
    "pywb_venv_path",
    "resolve_eval_engine",
    "run_evaluation",
    "train_classifier",
    "void_reason",
]

__getattr__ = lazy_getattr("pagetrail.lab", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
