"""Several worlds in one evaluation: each world, the mean and the worst (pure, no I/O).

`pagetrail eval W1 W2 W3 [--with-noweb]` evaluates each world (with web search, and with
`--with-noweb` once more with the engines of `NOWEB_ENGINES`), each run giving a
`build_report` report. `build_multiworld_report` puts them together:

- ``runs[mode][world]``: each run's full report (``mode``: ``web`` | ``noweb``);
- ``summary[mode]``: ``per_world`` figures (`figures`), their ``mean`` over the worlds, and the
  ``worst`` value of each figure with the world that has it (lowest for success figures,
  highest for mistakes and cost), plus ``worst_world``: the world with the lowest
  success@1 (then success@10);
- ``cost_by_purpose[mode]`` / ``seconds_by_purpose[mode]``: requests and seconds per
  recovery (mean) by purpose in each world, so that a world that costs more shows where
  (tools.eval.costs);
- ``failed``: every run that is void, with why — a crash or a testbed that did not start
  (`WorldRun.failure`), runs that failed for reasons other than the world's behaviour
  (``errors.not_behaviour``, or every run failed), a service of the evaluation that failed
  on most recoveries (`service_outages`), or a machine too loaded to give recoveries their
  time (`budget_overruns`: BUDGET_SHARE of them, BUDGET_MIN at least, stopped at the time
  budget). ``complete`` is false when any run is void: then the mean and worst are over the
  runs that completed and must not be quoted as the worlds'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MODES = ("web", "noweb")
NOWEB_ENGINES = ("site", "cdx", "local")  # every engine of the testbed but web search
SCORED_CATEGORIES = ("moved_same_host", "moved_new_host", "replaced")
SUCCESS = ("success_at_1", "success_at_10", "mrr")
# Failures a recovery records about the world itself (its hosts, its pages, its budget):
# misses, not a broken evaluation. Any other source (a search service, the archive, the
# store) failing on most recoveries means the evaluation's own services were down.
WORLD_FAILURE_SOURCES = frozenset({"site", "source", "elsewhere", "drift", "related", "budget"})
OUTAGE_SHARE = 0.5
# A recovery out of its time budget is a world's slow host now and then (0–2 of ~300
# recoveries on an idle machine: ten fresh worlds); on a tenth of them it is the machine
# running the evaluation: an overloaded run of dev3-m923 stopped 129 of 260 recoveries at
# the budget and scored success@1 0.497 (0.922 idle) with no error at all. At least
# BUDGET_MIN of them: two slow hosts in a small world are still the world's.
BUDGET_SHARE = 0.1
BUDGET_MIN = 3
# Figures where a larger value is worse (the rest: larger is better).
LOWER_IS_BETTER = frozenset({"answered_wrong", "dead", "confident_wrong", "called_dead", "drift_false_alarms",
                             "requests_median", "requests_p90", "seconds_median", "seconds_p90"})


@dataclass
class WorldRun:
    """One world evaluated in one mode: its report, or why there is none."""

    world: str
    mode: str = "web"
    report: dict[str, Any] | None = None
    failure: str | None = None  # the run crashed or its testbed did not start
    engines: list[str] | None = field(default=None)


def figures(report: Mapping[str, Any]) -> dict[str, float]:
    """The figures of one world's report that the multi-world summary compares."""
    out: dict[str, float] = {key: float(report["overall"][key]) for key in SUCCESS}
    out["n"] = float(report["overall"]["n"])
    for category in SCORED_CATEGORIES:
        summary = report["by_category"].get(category)
        if summary and summary.get("n"):
            for key in SUCCESS:
                out[f"{category}.{key}"] = float(summary[key])
    out.update(answered_figures(report))
    out["confident_wrong"] = float(report["abstention"]["confident_wrong"])
    out["called_dead"] = float(report["alive"]["called_dead"])
    drift = report.get("drift")
    if drift and drift.get("n"):
        out["drift_detected"] = drift["detected"] / drift["n"]
        out["drift_false_alarms"] = float(drift["false_alarms"])
    for key in ("requests_median", "requests_p90", "seconds_median", "seconds_p90"):
        out[key] = float(report["cost"][key])
    return out


def answered_figures(report: Mapping[str, Any]) -> dict[str, float]:
    """Answered right (share of moved/replaced cases), answered wrong (dead cases told a
    wrong live page) and dead cases, success@1 and answered right with and without an
    archived copy, and the share of moved/replaced cases answered right at confidence ≥ 0.9
    (absent from reports written before they were computed)."""
    answered = report.get("answered")
    if not answered:
        return {}
    overall = answered["overall"]
    out = {"answered_right": float(overall["answered_right"]),
           "answered_wrong": float(overall["wrong"]), "dead": float(overall["dead"])}
    for key in ("with_copy", "without_copy"):
        success = (report.get("by_archived") or {}).get(key) or {}
        tally = answered["by_archived"][key]
        if success.get("n"):
            out[f"{key}.success_at_1"] = float(success["success_at_1"])
        if tally["n"]:
            out[f"{key}.answered_right"] = float(tally["answered_right"])
    high = [b for b in answered["bands"] if b["low"] >= 0.9]
    if overall["n"]:
        # right answers in the top band, over every moved/replaced case (as issue #39 counts)
        out["right_at_0.9"] = round(sum(b["answers_right"] for b in high) / overall["n"], 4)
    return out


def service_outages(report: Mapping[str, Any]) -> list[str]:
    """Services of the evaluation (not the world's hosts) that failed on at least
    OUTAGE_SHARE of the primary run's recoveries, as 'searxng failed on 40 of 50'."""
    lines = [r for r in report.get("results", []) if r.get("method") == _primary(report)]
    if not lines:
        return []
    counts: dict[str, int] = {}
    for line in lines:
        for source in line.get("failures") or {}:
            if source not in WORLD_FAILURE_SOURCES:
                counts[source] = counts.get(source, 0) + 1
    return [f"{source} failed on {n} of {len(lines)} recoveries"
            for source, n in sorted(counts.items()) if n >= OUTAGE_SHARE * len(lines)]


def stopped_at_budget(report: Mapping[str, Any]) -> tuple[int, int]:
    """(recoveries of the primary run ranked at their time budget's deadline, recoveries)."""
    lines = [r for r in report.get("results", []) if r.get("method") == _primary(report)]
    return sum(1 for r in lines if "budget" in (r.get("failures") or {})), len(lines)


def budget_overruns(report: Mapping[str, Any]) -> str | None:
    """'the time budget ran out on N of M recoveries …' when BUDGET_SHARE of the primary
    run's recoveries (BUDGET_MIN at least) stopped at the time budget; None otherwise."""
    stopped, recoveries = stopped_at_budget(report)
    if stopped < max(BUDGET_MIN, BUDGET_SHARE * recoveries):
        return None
    return (f"the time budget ran out on {stopped} of {recoveries} recoveries (a loaded "
            "machine: run fewer evaluations at once, or a lower --concurrency)")


def _primary(report: Mapping[str, Any]) -> str | None:
    methods = list(report.get("by_method") or {})
    return "full" if "full" in methods else (methods[0] if methods else None)


def void_reason(run: WorldRun) -> str | None:
    """Why a run's figures are not pagetrail's (None: they are)."""
    if run.failure:
        return run.failure
    report = run.report
    if report is None:
        return "no report"
    errors = report.get("errors") or {}
    if errors.get("not_behaviour"):
        return ("cases failed for reasons other than the world's behaviour: "
                + ", ".join(errors["not_behaviour"]))
    results = report.get("results") or []
    if not results or all(r.get("error") for r in results):
        return "every case failed"
    outages = service_outages(report)
    if outages:
        return "services down: " + "; ".join(outages)
    return budget_overruns(report)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def summarize(per_world: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Mean and worst (with its world) of each figure over the worlds that have it."""
    names = list(dict.fromkeys(key for row in per_world.values() for key in row))
    mean: dict[str, float] = {}
    worst: dict[str, dict[str, Any]] = {}
    for key in names:
        have = [(world, row[key]) for world, row in per_world.items() if key in row]
        mean[key] = _mean([value for _world, value in have])
        pick = max if key in LOWER_IS_BETTER else min
        world, value = pick(have, key=lambda item: item[1])
        worst[key] = {"value": value, "world": world}
    worst_world = min(per_world, key=lambda w: (per_world[w]["success_at_1"],
                                                per_world[w]["success_at_10"]),
                      default=None)
    return {"per_world": {w: dict(row) for w, row in per_world.items()}, "mean": mean,
            "worst": worst, "worst_world": worst_world}


def cost_by_purpose(reports: Mapping[str, Mapping[str, Any]], figure: str = "requests_mean"
                    ) -> dict[str, dict[str, float]]:
    """{purpose: {world: `figure` (mean requests, or `seconds_mean`, per recovery)}} over the
    worlds' cost breakdowns, largest purposes (summed over the worlds) first."""
    table: dict[str, dict[str, float]] = {}
    for world, report in reports.items():
        by_purpose = (report.get("cost_breakdown") or {}).get("by_purpose") or {}
        for purpose, row in by_purpose.items():
            table.setdefault(purpose, {})[world] = row[figure]
    return dict(sorted(table.items(), key=lambda item: (-sum(item[1].values()), item[0])))


def build_multiworld_report(runs: Sequence[WorldRun]) -> dict[str, Any]:
    """The multi-world report (module docstring) of every world's runs."""
    worlds = list(dict.fromkeys(run.world for run in runs))
    modes = [m for m in MODES if any(run.mode == m for run in runs)]
    failed = [{"world": run.world, "mode": run.mode, "reason": reason}
              for run in runs if (reason := void_reason(run)) is not None]
    void = {(f["world"], f["mode"]) for f in failed}
    out: dict[str, Any] = {"format": 1, "kind": "multiworld", "worlds": worlds, "modes": modes,
                           "complete": not failed, "failed": failed,
                           "engines": {run.mode: run.engines for run in runs},
                           "summary": {}, "cost_by_purpose": {}, "seconds_by_purpose": {},
                           "runs": {}}
    for mode in modes:
        done = {run.world: run.report for run in runs
                if run.mode == mode and run.report is not None and (run.world, mode) not in void}
        out["summary"][mode] = summarize({w: figures(r) for w, r in done.items()})
        out["cost_by_purpose"][mode] = cost_by_purpose(done)
        out["seconds_by_purpose"][mode] = cost_by_purpose(done, "seconds_mean")
        out["runs"][mode] = {run.world: run.report for run in runs
                             if run.mode == mode and run.report is not None}
    return out
