"""What the user is told: the recommended answer of each case, right or wrong (pure, no I/O).

success@k asks whether the right page is *in the list*; an assistant calling `recover_link`,
`/fixlink` or `fix` acts on the *answer* instead — the top live candidate when its confidence
reaches `policy.RECOMMEND_AT` (tools/recovery/answer.for_dead), a permanent redirect, else
"archived" or "none". These figures measure that answer:

- ``answered_right``: over ``moved``/``replacement`` cases, the recommended answer is one of
  ``expect.urls`` (URL-normalised);
- ``answered_wrong``: over every *dead* case (every kind but ``alive``, ``gone`` ones
  included), a live page was recommended that is not one of ``expect.urls`` (for ``none``
  and ``archived`` cases any live page is wrong). Saying "archived" or "none" is silence,
  not a wrong answer;
- per category, with and without an archived copy (``expect.archived``), and by confidence
  band of the top live candidate (how many top candidates and recommended answers fall in
  each band, how many of them are right) — the calibration the recommend line is read from.

A result without an ``answer`` (reports written before it was recorded) is read the way
for_dead decides: the first live answer recommended when `policy.recommends` its confidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pagetrail.tools import policy
from pagetrail.tools.net.urls import normalize_url

if TYPE_CHECKING:
    from pagetrail.tools.eval.evaluate import Answer, CaseResult

LIVE_KINDS = frozenset({"moved", "replacement"})
SCORED_KINDS = frozenset({"moved", "replacement"})
# Recovery.answer values that recommend the top live candidate (a permanent redirect's target
# is that candidate too); "archived", "none", "alive", "unverified" recommend no live page.
RECOMMENDING_ANSWERS = frozenset({"moved", "replacement", "redirected"})
# Confidence bands: [low, high) each, the last one closed ([0.9, 1]).
BANDS: tuple[tuple[float, float], ...] = (
    (0.0, 0.1), (0.1, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0))


@dataclass(frozen=True)
class Outcome:
    """One case's answer as the user meets it."""

    scored: bool  # expect.kind moved/replacement: a right live page exists
    dead: bool  # every kind but alive
    told: str  # "right" | "wrong" | "archived" | "none" | "other" (alive, unverified, failed)
    top_confidence: float | None  # the top live candidate's confidence (None: no live one)
    top_right: bool


def top_live(answers: Sequence[Answer]) -> Answer | None:
    return next((a for a in answers if a.kind in LIVE_KINDS), None)


def recommended(result: CaseResult) -> Answer | None:
    """The live page the result recommends, or None (it said archived, none, alive …)."""
    if result.error:
        return None
    top = top_live(result.answers)
    if result.answer is not None:
        return top if result.answer in RECOMMENDING_ANSWERS else None
    return top if top is not None and policy.recommends(top.confidence) else None


def _silence(result: CaseResult | None) -> str:
    if result is None or result.error:
        return "other"
    if result.answer is not None:
        return result.answer if result.answer in ("archived", "none") else "other"
    if result.archived_copy or any(a.kind == "archived" for a in result.answers):
        return "archived"
    return "none" if result.verdict is not None else "other"


def outcome(case: Mapping[str, Any], result: CaseResult | None) -> Outcome:
    expect = case.get("expect") or {}
    kind = str(expect.get("kind", ""))
    wanted = {normalize_url(u) for u in expect.get("urls") or []}
    top = top_live(result.answers) if result is not None and not result.error else None
    top_right = top is not None and normalize_url(top.url) in wanted
    answer = recommended(result) if result is not None else None
    if answer is None:
        told = _silence(result)
    else:
        told = "right" if normalize_url(answer.url) in wanted else "wrong"
    return Outcome(scored=kind in SCORED_KINDS, dead=kind != "alive", told=told,
                   top_confidence=None if top is None else float(top.confidence),
                   top_right=top_right)


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def tally(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    """Answered right (of scored cases) and wrong (of dead cases), and what the rest were told."""
    items = list(outcomes)
    scored = [o for o in items if o.scored]
    dead = [o for o in items if o.dead]
    right = sum(1 for o in scored if o.told == "right")
    wrong = sum(1 for o in dead if o.told == "wrong")
    return {
        "cases": len(items), "n": len(scored), "right": right, "answered_right": _rate(right, len(scored)),
        "dead": len(dead), "wrong": wrong, "answered_wrong": _rate(wrong, len(dead)),
        "told": {told: sum(1 for o in dead if o.told == told)
                 for told in ("right", "wrong", "archived", "none", "other")},
    }


def band_of(confidence: float) -> int:
    for index, (_low, high) in enumerate(BANDS):
        if confidence < high:
            return index
    return len(BANDS) - 1  # 1.0 (and anything above) in the last, closed band


def band_label(index: int) -> str:
    low, high = BANDS[index]
    return f"[{low:g},{high:g}]" if index == len(BANDS) - 1 else f"[{low:g},{high:g})"


def bands(outcomes: Iterable[Outcome]) -> list[dict[str, Any]]:
    """Over dead cases with a live candidate: per band of the top candidate's confidence,
    how many top candidates and how many recommended answers, and how many were right."""
    rows = [{"band": band_label(i), "low": low, "high": high, "top": 0, "top_right": 0,
             "answers": 0, "answers_right": 0} for i, (low, high) in enumerate(BANDS)]
    for o in outcomes:
        if not o.dead or o.top_confidence is None:
            continue
        row = rows[band_of(o.top_confidence)]
        row["top"] += 1
        row["top_right"] += o.top_right
        if o.told in ("right", "wrong"):
            row["answers"] += 1
            row["answers_right"] += o.told == "right"
    return rows


def recommend_line() -> dict[str, Any]:
    """What an answer is recommended from: the learned ranking's answer probability at the
    model's line (policy.LEARNED_ANSWER), else the hand ranking's confidence at RECOMMEND_AT
    (also when the model cannot be read: the pipeline falls back the same way)."""
    if policy.LEARNED_ANSWER:
        from pagetrail.tools.errors import ModelMissing
        from pagetrail.tools.ranking import learned

        try:
            return {"recommended_by": "learned ranking's answer probability",
                    "recommend_at": learned.shipped_model().recommend_at}
        except ModelMissing as exc:  # the report says so, as each answer's failures do
            return {"recommended_by": f"ranked confidence ({exc.code}: {exc})",
                    "recommend_at": policy.RECOMMEND_AT}
    return {"recommended_by": "ranked confidence", "recommend_at": policy.RECOMMEND_AT}


def answered_report(cases: Sequence[Mapping[str, Any]],
                    by_id: Mapping[str, CaseResult]) -> dict[str, Any]:
    """The report's ``answered`` block (module docstring)."""
    pairs = [(case, outcome(case, by_id.get(case["id"]))) for case in cases]
    categories = list(dict.fromkeys(str(c.get("category")) for c, _o in pairs))
    with_copy = [o for c, o in pairs if (c.get("expect") or {}).get("archived")]
    without = [o for c, o in pairs if not (c.get("expect") or {}).get("archived")]
    return {
        **recommend_line(),
        "overall": tally(o for _c, o in pairs),
        "by_category": {cat: tally(o for c, o in pairs if str(c.get("category")) == cat)
                        for cat in categories},
        "by_archived": {"with_copy": tally(with_copy), "without_copy": tally(without)},
        "bands": bands(o for _c, o in pairs),
    }
