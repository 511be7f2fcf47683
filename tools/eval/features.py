"""Per-candidate feature rows of an evaluation, labelled with the world's truth (pure, no I/O).

Each live candidate a recovery ranked becomes one row: the case's facts (category, what the
truth expects, whether an archive copy was found, whether the linking page is known), the
candidate's place (rank, confidence, margin over the next one, whether it was the recommended
answer), every component score the ranker reports (`models.Scores`, under ``scores``) and the
label ``right``: the candidate is one of the case's ``expect.urls`` (URL-normalised). Rows of
``gone`` cases are all ``right: false``: every live page is wrong there. These are what a
learned ranking and confidence are trained on (`pagetrail eval --features FILE.jsonl`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pagetrail.tools.eval.answered import LIVE_KINDS, recommended
from pagetrail.tools.eval.evaluate import CaseResult
from pagetrail.tools.models import Candidate
from pagetrail.tools.net.urls import normalize_url

FEATURES_FORMAT = 1


def candidate_record(candidate: Candidate) -> dict[str, Any]:
    """What a result keeps of one live candidate (the ranker's view of it)."""
    return {"url": candidate.url, "title": candidate.title, "kind": candidate.kind,
            "confidence": float(candidate.confidence), "methods": list(candidate.methods),
            "scores": candidate.scores.model_dump(mode="json")}


def live_records(candidates: Sequence[Candidate]) -> list[dict[str, Any]]:
    return [candidate_record(c) for c in candidates if c.kind in LIVE_KINDS]


def case_rows(world: str, case: Mapping[str, Any], result: CaseResult) -> list[dict[str, Any]]:
    """One row per live candidate of `result`, in the engine's order."""
    if result.error:
        return []
    expect = case.get("expect") or {}
    wanted = {normalize_url(u) for u in expect.get("urls") or []}
    source = case.get("source") or {}
    answer = recommended(result)
    told = normalize_url(answer.url) if answer is not None else None
    found = result.candidates
    rows = []
    for index, candidate in enumerate(found):
        following = found[index + 1]["confidence"] if index + 1 < len(found) else 0.0
        key = normalize_url(candidate["url"])
        rows.append({
            "format": FEATURES_FORMAT, "world": world, "case": case["id"],
            "method": result.method, "dead_url": case["url"],
            "category": case.get("category"), "expect_kind": expect.get("kind"),
            "expect_archived": bool(expect.get("archived")),
            "archived_copy_found": result.archived_copy is not None,
            "source_known": bool(source.get("url")), "anchor_known": bool(source.get("anchor")),
            "answer": result.answer, "weak_anchor": result.weak_anchor,
            "rank": index + 1, "n_candidates": len(found),
            "url": candidate["url"], "title": candidate["title"], "kind": candidate["kind"],
            "confidence": candidate["confidence"],
            "margin": round(candidate["confidence"] - following, 6),
            "methods": candidate["methods"], "recommended": index == 0 and told == key,
            "scores": candidate["scores"], "right": key in wanted,
        })
    return rows


def feature_rows(world: str, cases: Sequence[Mapping[str, Any]],
                 results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """Every case's rows (every method's runs), in case order."""
    by_case: dict[str, list[CaseResult]] = {}
    for result in results:
        by_case.setdefault(result.id, []).append(result)
    return [row for case in cases for result in by_case.get(case["id"], [])
            for row in case_rows(world, case, result)]
