"""The recovery pipeline: check, archives, evidence, the chain of stages, answer, learn.

Owns `recover_link()` (the faces' one route) and `recover()`, site-level alias inference
(FABLE), related archived pages and URL topic classification, and the formats of a Recovery.
Imports every lower stage (ranking/, engines/, evidence/, linkcheck/, archive/, content/,
net/) and the tools/ top level.

Modules: route (recover_link), pipeline (recover), chain (the order and the stop rule),
stages/ (one module a stage), context (Context, Findings, Budget, DeadURL, Ask), asking,
candidates, link_evidence, answer, learn, memory (the store), aliases, classify, output,
related, siblings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagetrail._lazy import lazy_getattr

if TYPE_CHECKING:
    from pagetrail.tools.recovery.aliases import (
        DEFAULT_THRESHOLDS,
        KnownMove,
        Proposal,
        RuleBook,
        Thresholds,
        decide,
        infer_aliases,
        learn_rules,
        rank_proposals,
    )
    from pagetrail.tools.recovery.classify import (
        DEFAULT_KIND,
        DEFAULT_VARIANT,
        MODEL_KINDS,
        PAPER_TABLE6,
        classify_url,
        evaluate,
        load_candidates,
        load_examples,
        load_model,
        train,
    )
    from pagetrail.tools.recovery.context import Budget, ProgressFn
    from pagetrail.tools.recovery.memory import (
        add_watch,
        list_watches,
        moves_for_site,
        record_pick,
        remove_watch,
        watched_channels,
    )
    from pagetrail.tools.recovery.output import robust_anchor, robust_link, summary_line
    from pagetrail.tools.recovery.pipeline import recover
    from pagetrail.tools.recovery.related import recommend_archived
    from pagetrail.tools.recovery.route import recover_link

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "Budget": "pagetrail.tools.recovery.context",
    "DEFAULT_KIND": "pagetrail.tools.recovery.classify",
    "DEFAULT_THRESHOLDS": "pagetrail.tools.recovery.aliases",
    "DEFAULT_VARIANT": "pagetrail.tools.recovery.classify",
    "KnownMove": "pagetrail.tools.recovery.aliases",
    "MODEL_KINDS": "pagetrail.tools.recovery.classify",
    "PAPER_TABLE6": "pagetrail.tools.recovery.classify",
    "ProgressFn": "pagetrail.tools.recovery.context",
    "Proposal": "pagetrail.tools.recovery.aliases",
    "RuleBook": "pagetrail.tools.recovery.aliases",
    "Thresholds": "pagetrail.tools.recovery.aliases",
    "add_watch": "pagetrail.tools.recovery.memory",
    "classify_url": "pagetrail.tools.recovery.classify",
    "decide": "pagetrail.tools.recovery.aliases",
    "evaluate": "pagetrail.tools.recovery.classify",
    "infer_aliases": "pagetrail.tools.recovery.aliases",
    "learn_rules": "pagetrail.tools.recovery.aliases",
    "list_watches": "pagetrail.tools.recovery.memory",
    "load_candidates": "pagetrail.tools.recovery.classify",
    "load_examples": "pagetrail.tools.recovery.classify",
    "load_model": "pagetrail.tools.recovery.classify",
    "moves_for_site": "pagetrail.tools.recovery.memory",
    "rank_proposals": "pagetrail.tools.recovery.aliases",
    "recommend_archived": "pagetrail.tools.recovery.related",
    "record_pick": "pagetrail.tools.recovery.memory",
    "recover": "pagetrail.tools.recovery.pipeline",
    "recover_link": "pagetrail.tools.recovery.route",
    "remove_watch": "pagetrail.tools.recovery.memory",
    "robust_anchor": "pagetrail.tools.recovery.output",
    "robust_link": "pagetrail.tools.recovery.output",
    "summary_line": "pagetrail.tools.recovery.output",
    "train": "pagetrail.tools.recovery.classify",
    "watched_channels": "pagetrail.tools.recovery.memory",
}
__all__ = [
    "DEFAULT_KIND",
    "DEFAULT_THRESHOLDS",
    "DEFAULT_VARIANT",
    "MODEL_KINDS",
    "PAPER_TABLE6",
    "Budget",
    "KnownMove",
    "ProgressFn",
    "Proposal",
    "RuleBook",
    "Thresholds",
    "add_watch",
    "classify_url",
    "decide",
    "evaluate",
    "infer_aliases",
    "learn_rules",
    "list_watches",
    "load_candidates",
    "load_examples",
    "load_model",
    "moves_for_site",
    "rank_proposals",
    "recommend_archived",
    "record_pick",
    "recover",
    "recover_link",
    "remove_watch",
    "robust_anchor",
    "robust_link",
    "summary_line",
    "train",
    "watched_channels",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
