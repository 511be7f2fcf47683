"""Candidates scored and classified (pure: no network, no store).

Owns the scores of a candidate page, the kind and confidence that follow from them, and the
calibration data. Imports content/, net/ and the tools/ top level.

Modules: rank, textref (the page's text against the link's own words).
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "CALIBRATION_FILE": "pagetrail.tools.ranking.rank",
    "Calibration": "pagetrail.tools.ranking.rank",
    "CandidateEvidence": "pagetrail.tools.ranking.rank",
    "Reference": "pagetrail.tools.ranking.rank",
    "exact_url_key": "pagetrail.tools.ranking.rank",
    "features": "pagetrail.tools.ranking.rank",
    "fit_calibration": "pagetrail.tools.ranking.rank",
    "is_moved": "pagetrail.tools.ranking.rank",
    "rank_candidates": "pagetrail.tools.ranking.rank",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
