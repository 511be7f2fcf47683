"""pagetrail.lab — the command line's own tools, apart from the library API.

Evaluating the engine on testbed worlds, serving a testbed (and building its pywb archive),
training and evaluating the URL topic classifier, and evaluating site aliases on FABLE's
dataset: what `pagetrail eval`, `testbed`, `subset`, `demo`, `classify` and `aliases` use.
And what the other commands need beside the library API: the one-line summaries, the site
scanner and the digest builders and writers (`scan`, `digest`), batch files and the job
dispatcher (`batch`, `worker`), `fix`'s lychee input and repository configuration,
`doctor`, `config show`, log redaction and the missing-extra hint. A library user needs none of
it; `import pagetrail` stays the API (tests/test_public_api.py keeps both lists equal to what
docs/INTERFACES.md documents).

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
    "stopped_at_budget": "pagetrail.tools.eval.multiworld",
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

    # The command line's summaries of a check and a recovery
    "check_summary": "pagetrail.tools.linkcheck.check:summary_line",
    "recovery_summary": "pagetrail.tools.recovery.output:summary_line",

    # Site scans and digests as the command line runs and writes them
    "scan_site": "pagetrail.tools.scan.scanner:scan",
    "ScanOptions": "pagetrail.tools.scan.scanner",
    "ScanProgressFn": "pagetrail.tools.scan.scanner:ProgressFn",
    "ScanDigest": "pagetrail.tools.scan.digest",
    "build_digest": "pagetrail.tools.scan.digest",
    "recover_confirmed": "pagetrail.tools.scan.digest",
    "recovery_plan": "pagetrail.tools.scan.digest",
    "digest_html": "pagetrail.tools.scan.digest:to_html",
    "digest_json": "pagetrail.tools.scan.digest:to_json",
    "digest_markdown": "pagetrail.tools.scan.digest:to_markdown",
    "Trend": "pagetrail.tools.scan.trend",
    "render_trend_chart": "pagetrail.tools.scan.trend:render_chart",

    # Jobs: batch files, the dispatcher, the workers
    "batch_format": "pagetrail.tools.workers.batch",
    "read_batch": "pagetrail.tools.workers.batch",
    "write_answers": "pagetrail.tools.workers.batch",
    "failed_jobs": "pagetrail.tools.workers.batch:failed",
    "get_dispatcher": "pagetrail.tools.workers.dispatch",
    "scan_on_workers": "pagetrail.tools.workers.dispatch",
    "prepare_distributed": "pagetrail.tools.workers.dispatch",

    # URL topics and site aliases (`classify`, `aliases`) and the moves a site is known for
    "classify_url": "pagetrail.tools.learning.classify",
    "infer_aliases": "pagetrail.tools.learning.aliases",
    "KnownMove": "pagetrail.tools.learning.aliases",
    "AliasThresholds": "pagetrail.tools.learning.aliases:Thresholds",
    "DEFAULT_ALIAS_THRESHOLDS": "pagetrail.tools.learning.aliases:DEFAULT_THRESHOLDS",
    "moves_for_site": "pagetrail.tools.recovery.memory",

    # `pagetrail fix`'s lychee input and repository configuration
    "read_lychee_report": "pagetrail.tools.fix.lychee:read_lychee",
    "lychee_report_inputs": "pagetrail.tools.fix.lychee:report_inputs",
    "LycheeReportError": "pagetrail.tools.fix.lychee",
    "FixConfig": "pagetrail.tools.fix.config",
    "load_fix_config": "pagetrail.tools.fix.config",

    # Health (`pagetrail doctor`), settings shown (`config show`), logging, missing extras
    "run_doctor": "pagetrail.tools.doctor",
    "DoctorCheck": "pagetrail.tools.doctor:Check",
    "doctor_healthy": "pagetrail.tools.doctor:healthy",
    "config_file": "pagetrail.tools.settings",
    "mask_url": "pagetrail.tools.settings",
    "setting_sources": "pagetrail.tools.provenance",
    "install_log_redaction": "pagetrail.tools.net.logsafe",
    "missing_extra": "pagetrail.tools.extras",

    # User URLs as the command line takes them
    "same_url": "pagetrail.tools.net.urls",
    "ensure_fetchable": "pagetrail.tools.net.netguard",
}

__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS

__getattr__ = lazy_getattr("pagetrail.lab", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
