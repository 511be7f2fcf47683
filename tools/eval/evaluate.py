"""Scoring of recoveries against a testbed world's truth (pure functions, no I/O).

Given the world's cases (parsed ``cases.jsonl`` lines) and one result per case and method,
`build_report` returns the evaluation report of ``testbed/FORMAT.md`` (section "The
evaluation report"). Every figure can be recomputed from ``results`` and ``cases.jsonl``:

- success@1, success@10 and MRR over the cases whose ``expect.kind`` is ``moved`` or
  ``replacement``: the rank is the position of the first answer whose URL is one of
  ``expect.urls`` (URLs compared with `normalize_url`: http≡https, www., trailing slash).
  The engine's order is the ranking: answers of equal confidence are not reordered, and an
  answer repeating an earlier one (same normalised URL) does not take a rank of its own.
  A case without a result, or whose run failed, counts as a miss.
- ``archived.offered``: ``archived`` cases where a copy of the case URL itself was offered.
- ``abstention``: over ``none`` and ``archived`` cases, ``confident_wrong`` counts results
  that put a live URL first with confidence ≥ 0.5; precision = 1 − confident_wrong / n.
- ``alive.called_dead``: ``alive`` cases reported dead, soft-404 or unreachable.
- ``answered`` (tools/eval/answered.py): what the user is told — answered right (of
  ``moved``/``replacement`` cases), answered wrong (of every dead case), per category, with
  and without an archived copy, by confidence band. ``by_archived``: success figures of the
  cases whose archive holds a copy (``expect.archived``) and of those whose does not.
- ``cost``: median and 90th percentile (nearest rank) of requests and seconds per case.
- ``errors`` (every run, all methods): how many runs failed, grouped by error type (the
  code before the first ``:`` of ``error``), and which of those types are not the world's
  own behaviour (a bug, a missing module, an archive that died: the evaluation is void).
- Version-2 worlds add ``drift`` (over ``alive`` cases carrying ``expect.drifted``: drifted
  cases, those reported ``drifted``, false alarms among the stable ones) and ``search``
  (web-search queries sent, 429 answers received; median queries per recovery of a
  ``moved``/``replacement`` case).

The figures other than ``by_method`` describe the *primary* run: ``full`` when present,
otherwise the single method that was run.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pagetrail.tools import policy
from pagetrail.tools.eval.answered import answered_report
from pagetrail.tools.eval.costs import cost_breakdown
from pagetrail.tools.models import DEAD_VERDICTS
from pagetrail.tools.net.urls import normalize_url

REPORT_FORMAT = 1
# Error types that are the world's own behaviour (slow, refusing or broken hosts on purpose):
# a case lost to them is a miss, not a broken evaluation. Any other type (a Python exception
# such as ImportError, an archive that died, a configuration error) voids the run.
WORLD_BEHAVIOUR_ERRORS = frozenset({
    "timeout", "fetch_failed", "too_many_redirects", "redirect_loop", "body_too_large",
    "decompression_bomb", "unsupported_content", "rate_limited", "invalid_url",
})
FULL = "full"
SUCCESS_KINDS = frozenset({"moved", "replacement"})
ABSTAIN_KINDS = frozenset({"none", "archived"})
LIVE_ANSWER_KINDS = frozenset({"moved", "replacement"})
CONFIDENT = policy.CONFIDENT  # the one notion of a confident answer (tools/policy.py)
CATEGORIES = ("moved_same_host", "moved_new_host", "replaced", "gone", "alive")
# Wayback-style replay URL: <prefix>/<14-digit timestamp><optional mode like id_>/<original>.
_REPLAY_URL = re.compile(r"/(\d{4,14})(?:[a-z]{2}_)?/(https?:/?/?.+)$", re.I)


@dataclass(frozen=True)
class Answer:
    url: str
    kind: str
    confidence: float


@dataclass
class CaseResult:
    """What one run of one method said about one case (a line of the report's ``results``)."""

    id: str
    method: str = FULL
    verdict: str | None = None
    answers: list[Answer] = field(default_factory=list)
    archived_copy: str | None = None
    requests: int = 0
    seconds: float = 0.0
    error: str | None = None
    drifted: bool = False  # a working link reported as serving other content now
    search_queries: int = 0  # web-search queries sent (retries after a 429 included)
    rate_limited: int = 0  # 429 answers received from web-search engines
    # Requests and seconds by purpose and by recovery stage (tools.eval.costs): {name:
    # {"requests": n, "seconds": s}}; empty when the run's fetcher recorded nothing.
    purposes: dict[str, dict[str, float]] = field(default_factory=dict)
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)  # the recovery's failures by source
    # What the user is told (Recovery.answer: moved, replacement, redirected, archived, none,
    # alive, unverified); None in results recorded before it was (tools.eval.answered).
    answer: str | None = None
    # Every live candidate with the component scores the ranker reports (features.py): written
    # to the feature file, not to the report.
    candidates: list[dict[str, Any]] = field(default_factory=list)
    # The weak-anchor rule held (a one-common-word anchor, no archived copy: nothing said,
    # the learned ranking not asked): the feature rows say so, so a re-decision does too.
    weak_anchor: bool = False
    # Why the case was recovered a second time at the end of the run (recovery.revisit: the
    # store had learnt since what could answer it); its requests and seconds are both runs'.
    revisited: str | None = None

    @property
    def error_type(self) -> str | None:
        if not self.error:
            return None
        return self.error.split(":", 1)[0].strip() or "error"

    def to_dict(self) -> dict[str, Any]:
        line = asdict(self)
        del line["candidates"]
        for key in ("purposes", "stages", "failures", "weak_anchor", "revisited"):  # only when set
            if not line[key]:
                del line[key]
        return line

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        answers = [
            Answer(str(a["url"]), str(a.get("kind", "")), float(a.get("confidence", 0.0)))
            for a in data.get("answers") or []
        ]
        return cls(
            id=str(data["id"]),
            method=str(data.get("method") or FULL),
            verdict=data.get("verdict"),
            answers=answers,
            archived_copy=data.get("archived_copy"),
            requests=int(data.get("requests") or 0),
            seconds=float(data.get("seconds") or 0.0),
            error=data.get("error"),
            drifted=bool(data.get("drifted")),
            search_queries=int(data.get("search_queries") or 0),
            rate_limited=int(data.get("rate_limited") or 0),
            purposes=dict(data.get("purposes") or {}),
            stages=dict(data.get("stages") or {}),
            failures={str(k): int(v) for k, v in (data.get("failures") or {}).items()},
            weak_anchor=bool(data.get("weak_anchor")),
            answer=data.get("answer"),
            revisited=data.get("revisited"),
        )


# --- one case ------------------------------------------------------------------------------


def expected_kind(case: Mapping[str, Any]) -> str:
    return str((case.get("expect") or {}).get("kind", ""))


def rank_of_first_correct(answers: Sequence[Answer], expected_urls: Iterable[str]) -> int | None:
    """1-based rank of the first answer among `expected_urls`, None when none is."""
    wanted = {normalize_url(u) for u in expected_urls}
    seen: set[str] = set()
    for answer in answers:
        key = normalize_url(answer.url)
        if key in seen:
            continue  # a repeated URL is the same answer, not a new rank
        seen.add(key)
        if key in wanted:
            return len(seen)
    return None


def original_of_archived_copy(copy_url: str) -> str | None:
    """The original URL inside a Wayback-style replay URL (…/20190601000000id_/https://…)."""
    match = _REPLAY_URL.search(copy_url)
    if not match:
        return None
    original = match.group(2)
    # Some replayers collapse "https://" to "https:/"; restore it before comparing.
    return re.sub(r"^(https?):/+", r"\1://", original, flags=re.I)


def offered_archived_copy(result: CaseResult | None, url: str) -> bool:
    """Whether the result offered an archived copy of `url` itself (not of another page)."""
    if result is None or result.error:
        return False
    offered = [result.archived_copy] if result.archived_copy else []
    offered += [a.url for a in result.answers if a.kind == "archived"]
    target = normalize_url(url)
    for copy_url in offered:
        original = original_of_archived_copy(copy_url)
        if original is not None and normalize_url(original) == target:
            return True
    return False


def is_confident_wrong(result: CaseResult | None) -> bool:
    """A live URL put first with confidence ≥ 0.5 (for cases where no live URL is right)."""
    if result is None or result.error or not result.answers:
        return False
    first = result.answers[0]
    return first.kind in LIVE_ANSWER_KINDS and first.confidence >= CONFIDENT


def called_dead(result: CaseResult | None) -> bool:
    return result is not None and result.verdict in DEAD_VERDICTS


# --- aggregates ----------------------------------------------------------------------------


def success_summary(ranks: Sequence[int | None]) -> dict[str, Any]:
    """n, success@1, success@10, MRR of a list of ranks (None = not found)."""
    n = len(ranks)
    if n == 0:
        return {"n": 0, "success_at_1": 0.0, "success_at_10": 0.0, "mrr": 0.0}
    found = [r for r in ranks if r is not None]
    return {
        "n": n,
        "success_at_1": sum(1 for r in found if r == 1) / n,
        "success_at_10": sum(1 for r in found if r <= 10) / n,
        "mrr": sum(1.0 / r for r in found) / n,
    }


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: an observed value, 0 for no values."""
    if not values:
        return 0
    ordered = sorted(values)
    index = max(1, math.ceil(fraction * len(ordered)))
    return ordered[index - 1]


def cost_summary(results: Sequence[CaseResult]) -> dict[str, Any]:
    requests = [r.requests for r in results]
    seconds = [r.seconds for r in results]
    return {
        "requests_median": statistics.median(requests) if requests else 0,
        "requests_p90": percentile(requests, 0.9),
        "seconds_median": round(statistics.median(seconds), 3) if seconds else 0.0,
        "seconds_p90": round(float(percentile(seconds, 0.9)), 3),
    }


def error_summary(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Failed runs by error type; `not_behaviour`: the types that void the evaluation."""
    by_type: dict[str, int] = {}
    for result in results:
        kind = result.error_type
        if kind is not None:
            by_type[kind] = by_type.get(kind, 0) + 1
    ordered = dict(sorted(by_type.items(), key=lambda item: (-item[1], item[0])))
    return {"n": sum(by_type.values()), "by_type": ordered,
            "not_behaviour": [k for k in ordered if k not in WORLD_BEHAVIOUR_ERRORS]}


def drift_summary(cases: Sequence[Mapping[str, Any]],
                  by_id: Mapping[str, CaseResult]) -> dict[str, int]:
    """FORMAT.md v2 `drift`, over alive cases whose expect carries `drifted`."""
    def reported(case: Mapping[str, Any]) -> bool:
        result = by_id.get(case["id"])
        return result is not None and not result.error and result.drifted

    marked = [c for c in cases if expected_kind(c) == "alive"
              and isinstance((c.get("expect") or {}).get("drifted"), bool)]
    drifted = [c for c in marked if c["expect"]["drifted"]]
    stable = [c for c in marked if not c["expect"]["drifted"]]
    return {"n": len(drifted), "detected": sum(1 for c in drifted if reported(c)),
            "false_alarms": sum(1 for c in stable if reported(c)), "n_stable": len(stable)}


def search_summary(results: Sequence[CaseResult],
                   scored: Sequence[CaseResult] = ()) -> dict[str, Any]:
    """FORMAT.md v2 `search`: web-search queries sent and 429s received (summed over
    `results`), plus the median queries per recovery of a `moved`/`replacement` case
    (`scored`: the recoveries the success figures are about)."""
    per_recovery = [r.search_queries for r in scored]
    return {"queries": sum(r.search_queries for r in results),
            "rate_limited": sum(r.rate_limited for r in results),
            "queries_median": statistics.median(per_recovery) if per_recovery else 0}


def _ranks(cases: Sequence[Mapping[str, Any]], by_id: Mapping[str, CaseResult]) -> list[int | None]:
    ranks: list[int | None] = []
    for case in cases:
        result = by_id.get(case["id"])
        if result is None or result.error:
            ranks.append(None)
        else:
            ranks.append(rank_of_first_correct(result.answers, case["expect"].get("urls") or []))
    return ranks


def primary_method(methods: Iterable[str]) -> str | None:
    present = list(dict.fromkeys(methods))
    if FULL in present:
        return FULL
    return present[0] if present else None


def build_report(
    world_name: str,
    cases: Sequence[Mapping[str, Any]],
    results: Sequence[CaseResult],
    *,
    method_order: Sequence[str] = (),
    world_format: int = 1,
) -> dict[str, Any]:
    """The FORMAT.md evaluation report of `results` against `cases` (version-2 figures when
    `world_format` ≥ 2)."""
    by_method: dict[str, dict[str, CaseResult]] = {}
    for result in results:
        by_method.setdefault(result.method, {})[result.id] = result
    methods = _ordered_methods(by_method, method_order)
    primary = primary_method(methods)
    primary_results = by_method.get(primary, {}) if primary else {}

    scored = [c for c in cases if expected_kind(c) in SUCCESS_KINDS]
    categories = [c for c in CATEGORIES if any(x.get("category") == c for x in cases)]
    categories += sorted({str(x.get("category")) for x in cases} - set(categories))

    archived_cases = [c for c in cases if expected_kind(c) == "archived"]
    abstain_cases = [c for c in cases if expected_kind(c) in ABSTAIN_KINDS]
    alive_cases = [c for c in cases if expected_kind(c) == "alive"]
    confident_wrong = sum(1 for c in abstain_cases if is_confident_wrong(primary_results.get(c["id"])))
    case_index = {c["id"]: i for i, c in enumerate(cases)}
    method_index = {m: i for i, m in enumerate(methods)}
    ordered_results = sorted(
        (r for r in results if r.id in case_index),
        key=lambda r: (case_index[r.id], method_index.get(r.method, len(methods))),
    )
    report: dict[str, Any] = {
        "format": max(REPORT_FORMAT, world_format),
        "world": world_name,
        "cases": len(cases),
        "overall": success_summary(_ranks(scored, primary_results)),
        # What the user is told (tools.eval.answered): the figures people feel.
        "answered": answered_report(cases, primary_results),
        "by_category": {
            cat: success_summary(
                _ranks([c for c in scored if c.get("category") == cat], primary_results)
            )
            for cat in categories
        },
        "by_archived": {
            "with_copy": success_summary(_ranks(
                [c for c in scored if c["expect"].get("archived")], primary_results)),
            "without_copy": success_summary(_ranks(
                [c for c in scored if not c["expect"].get("archived")], primary_results)),
        },
        "by_method": {m: success_summary(_ranks(scored, by_method[m])) for m in methods},
        "archived": {
            "n": len(archived_cases),
            "offered": sum(
                1 for c in archived_cases
                if offered_archived_copy(primary_results.get(c["id"]), c["url"])
            ),
        },
        "abstention": {
            "n": len(abstain_cases),
            "confident_wrong": confident_wrong,
            "precision": (1 - confident_wrong / len(abstain_cases)) if abstain_cases else 0.0,
        },
        "alive": {
            "n": len(alive_cases),
            "called_dead": sum(1 for c in alive_cases if called_dead(primary_results.get(c["id"]))),
        },
        "cost": cost_summary([primary_results[c["id"]] for c in cases if c["id"] in primary_results]),
        "errors": error_summary(results),
    }
    primary_lines = [primary_results[c["id"]] for c in cases if c["id"] in primary_results]
    if any(r.purposes for r in primary_lines):  # runs whose fetcher recorded the breakdown
        report["cost_breakdown"] = cost_breakdown(primary_lines, cases)
    revisited = sum(1 for r in primary_lines if r.revisited)
    if revisited:  # cases recovered again at the end (eval_runner.revisits: both runs' cost)
        report["revisited"] = revisited
    if world_format >= 2:
        report["drift"] = drift_summary(cases, primary_results)
        report["search"] = search_summary(
            [primary_results[c["id"]] for c in cases if c["id"] in primary_results],
            [primary_results[c["id"]] for c in scored if c["id"] in primary_results])
    report["results"] = [r.to_dict() for r in ordered_results]
    return report


def _ordered_methods(by_method: Mapping[str, object], method_order: Sequence[str]) -> list[str]:
    """Methods in the caller's order, others after in order of appearance, `full` last."""
    ordered = [m for m in method_order if m in by_method and m != FULL]
    ordered += [m for m in by_method if m not in ordered and m != FULL]
    if FULL in by_method:
        ordered.append(FULL)
    return ordered
