"""What is weighed after the calibration, in one place (pure): a list of links, a page grown
out of the dead address, a main text behind another page's against the link's own words.

`rank.rank_candidates` applies the shipped factors (`AfterFactors()`); `ranking.replay` and
the calibration tooling apply others to stored candidates, by the same arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pagetrail.tools import policy
from pagetrail.tools.models import Scores


@dataclass(frozen=True)
class AfterFactors:
    """The hand-set factors applied after the calibration (policy.LISTING_PENALTY,
    OFFSHOOT_FACTOR, TEXT_SHORTFALL_FROM/SLOPE); `neutral()` applies none."""

    listing_penalty: float = policy.LISTING_PENALTY
    offshoot_factor: float = policy.OFFSHOOT_FACTOR
    shortfall_from: float = policy.TEXT_SHORTFALL_FROM
    shortfall_slope: float = policy.TEXT_SHORTFALL_SLOPE

    @classmethod
    def neutral(cls) -> AfterFactors:
        return cls(listing_penalty=0.0, offshoot_factor=1.0, shortfall_from=1.0,
                   shortfall_slope=0.0)

    def shortfall_factor(self, shortfall: float) -> float:
        if shortfall <= self.shortfall_from:
            return 1.0
        return math.exp(-self.shortfall_slope * (shortfall - self.shortfall_from))

    def apply(self, confidence: float, scores: Scores) -> float:
        """The confidence once the after-calibration evidence is weighed, rounded at each
        step as `rank_candidates` rounds."""
        # (`rank_candidates` sets `listing` to 0 for the junk it drops)
        if scores.listing > 0:
            confidence = round(confidence * (1.0 - self.listing_penalty * scores.listing), 4)
        if scores.offshoot:
            confidence = round(confidence * self.offshoot_factor, 4)
        factor = self.shortfall_factor(scores.text_shortfall)
        if factor < 1.0:
            confidence = round(confidence * factor, 4)
        return confidence
