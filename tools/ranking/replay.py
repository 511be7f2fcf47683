"""Re-rank a recovery's stored live candidates as `rank.rank_candidates` would (pure).

Calibration tooling (bench/calibrate.py, bench/sweep_factors.py) keeps the candidates a
recovery ranked (`Candidate` with its `Scores`, which carry what is weighed after the
calibration: listing degree, offshoot, text shortfall) and re-ranks them under another
calibration or other after-calibration factors, without serving a world again. The order and
confidences are the pipeline's own when the values are the shipped ones (same features, same
direct-evidence floors, same factors and roundings, same tie-breaks); what a re-sort cannot
redo is how the ranking steered the search (the stop rule, which pages were read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pagetrail.tools.models import Candidate
from pagetrail.tools.ranking.after import AfterFactors
from pagetrail.tools.ranking.rank import (
    DROPPED_JUNK,
    Calibration,
    direct_evidence_floor,
    features,
    ranking_features,
)

# Evidence weighed after the calibration, offered to a fit as features of their own (a
# calibration without coefficients for them ignores them).
AFTER_FEATURES: tuple[str, ...] = ("listing", "offshoot", "text_shortfall")


def case_has_memento(candidates: Sequence[Candidate]) -> bool:
    """Whether the ranking had an archived copy to compare with: some candidate has a
    content score (a ranking of unread pages only cannot tell; then it counts as none)."""
    return any(c.scores.content_cosine is not None for c in candidates)


def values_of(candidates: Sequence[Candidate], has_memento: bool) -> list[dict[str, float]]:
    """The calibration features of each candidate within its ranking (`ranking_features`),
    with AFTER_FEATURES added."""
    rows = ranking_features([features(c.scores, has_memento) for c in candidates])
    return [{**row, "listing": c.scores.listing, "offshoot": float(c.scores.offshoot),
             "text_shortfall": c.scores.text_shortfall}
            for row, c in zip(rows, candidates, strict=True)]


def calibrated(candidates: Sequence[Candidate], calibration: Calibration,
               values: Sequence[Mapping[str, float]]) -> list[float]:
    """Each candidate's confidence before the after-calibration factors: the calibration of
    its `values`, floored by direct evidence (`rank.direct_evidence_floor`) unless junk."""
    out: list[float] = []
    for row, candidate in zip(values, candidates, strict=True):
        confidence = calibration.confidence(row)
        if not candidate.scores.junk:
            confidence = max(confidence, direct_evidence_floor(candidate.scores))
        out.append(round(confidence, 4))
    return out


def order(candidates: Sequence[Candidate], base: Sequence[float],
          factors: AfterFactors) -> list[tuple[float, Candidate]]:
    """(confidence, candidate) once `factors` weigh the `calibrated` confidences, in
    `rank_candidates`' order (confidence, then final score, RRF, URL)."""
    keyed = []
    for confidence, candidate in zip(base, candidates, strict=True):
        scores = candidate.scores
        confidence = factors.apply(confidence, scores)
        keyed.append(((-confidence, -scores.final, -scores.rrf), candidate.url, confidence,
                      candidate))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [(confidence, candidate) for _key, _url, confidence, candidate in keyed]


def live(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates a ranking keeps (dropped junk left out)."""
    return [c for c in candidates if c.scores.junk not in DROPPED_JUNK]


def rerank(candidates: Sequence[Candidate], calibration: Calibration,
           factors: AfterFactors | None = None, *, has_memento: bool | None = None,
           values: Sequence[Mapping[str, float]] | None = None) -> list[tuple[float, Candidate]]:
    """(confidence, candidate) of the live candidates, in the order `rank_candidates` gives
    them under `calibration` and `factors` (default: the shipped ones). `values`: the
    candidates' `values_of` when the caller has them already (of `live(candidates)`)."""
    kept = live(candidates)
    if has_memento is None:
        has_memento = case_has_memento(kept)
    rows = list(values) if values is not None else values_of(kept, has_memento)
    return order(kept, calibrated(kept, calibration, rows), factors or AfterFactors())
