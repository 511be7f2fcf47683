"""Recovery policy: every threshold, clamp, margin and budget default, in one place.

A recovery turns evidence into an answer through numbers that are choices, not facts: when
a candidate is sure enough to recommend, when the search may stop, how sure an archived copy
is, how much a person's pick weighs. They are all here, each named and with where its value
came from, so that fitting them across worlds changes one module (and one data file).

Two kinds of value:

- **hand-set** constants below (from the seed papers or from development worlds' figures);
- **fitted** values: the ranking's confidence calibration, written by `bench/calibrate.py`
  into `FITTED_FILE` and read by `fitted()`.

Who uses what: `ranking.rank.decide` turns a candidate's features into its confidence (the
fitted calibration and the direct-evidence floors below); the recovery's answer step
(`recovery.answer`) applies the answer-level rules (`weak_anchor_confidence`,
`archived_confidence`, `recommends`); the evaluator judges "confidently wrong" with
`CONFIDENT`. Nothing else owns confidence policy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pagetrail.tools.settings import Settings

# ------------------------------------------------------------------ answering (confidence)

# Confidence from which the top live candidate is the answer (below it: the archived copy,
# else "none"). Hand-set in the first pipeline (3d6c5b2): the calibration's midpoint
# (log-odds 0).
RECOMMEND_AT = 0.5

# What the evaluator calls a confident answer ("confidently wrong" when it is not expected):
# the same line the pipeline recommends from, so the two can never disagree (the evaluator
# had its own 0.5 since 7305e3f; bench/calibrate.py reads this one).
CONFIDENT = RECOMMEND_AT

# Fig. 8 of Martinez-Romo & Araujo: an anchor that is neither a stop anchor nor usable alone
# (one common word), with no archived copy to verify against, is not enough to recommend
# anything: every live candidate's confidence is clamped below RECOMMEND_AT (hand-set,
# 3d6c5b2).
WEAK_ANCHOR_CLAMP = 0.3

# The archived copy's confidence in the list of candidates: the answer itself when no live
# page is recommended, else a fallback beside it (hand-set, 3d6c5b2).
ARCHIVED_AS_ANSWER = 1.0
ARCHIVED_AS_FALLBACK = 0.5

# A permanent live redirect of the dead URL: the server itself names the new address; not
# 1.0, the target may be a generic page (hand-set, 3d6c5b2).
LIVE_REDIRECT = 0.97

# Floors under the confidence of a live, non-junk candidate for evidence a development world
# rarely holds, so a fitted calibration cannot weigh it (`rank.direct_evidence_floor`;
# hand-set with the first fitted calibration, edaab7c).
PICK_FLOOR = 0.95  # a person's pick (× the pick's weight)
REDIRECT_FLOOR = 0.85  # the site's own archived redirect to it
RULE_FLOOR = 0.5  # the site's inferred rewrite rule: RULE_FLOOR + RULE_SUPPORT × support
RULE_SUPPORT = 0.4  # (a rule seen on every known move of the site: 0.9)

# A listing page (tag, section, category, a roundup: a page whose main text is mostly its
# links' texts, `content.document.link_share`) is rarely what a deep link pointed to; it
# only wins when nothing else does. Its listing degree (0–1) rises from LISTING_SHARE_FROM
# to LISTING_SHARE_FULL of the main text in links (articles with a related-links block stay
# under ~0.15 in the development worlds, tag/section pages are at 0.24–0.42), counted from
# LISTING_ITEMS distinct linked headlines; the candidate's confidence is multiplied by
# 1 − LISTING_PENALTY × degree (hand-set on dev3's misses, measured on dev, dev2, dev3).
LISTING_SHARE_FROM = 0.12
LISTING_SHARE_FULL = 0.24
LISTING_ITEMS = 5
LISTING_PENALTY = 0.8


def listing_degree(share: float, items: int) -> float:
    """How much a page is a list of links (0–1), from `link_share`'s figures."""
    if items < LISTING_ITEMS:
        return 0.0
    span = LISTING_SHARE_FULL - LISTING_SHARE_FROM
    return max(0.0, min(1.0, (share - LISTING_SHARE_FROM) / span))


def listing_confidence(confidence: float, degree: float) -> float:
    """A candidate's confidence once its listing degree is weighed (see LISTING_PENALTY)."""
    return confidence * (1.0 - LISTING_PENALTY * degree)


# Without an archived copy, a candidate's main text is compared with the link's own words
# (`ranking.textref`, docs/evaluation.md proposal 1): a look-alike copies the dead URL's
# slug and title, not the article's text. Reference weights by source: the anchor counts
# most, the context and linking page less, the dead URL's words only weakly (a look-alike
# repeats them: with the URL's words as the main reference dev3 lost four URL-only moves).
# Hand-set from the first measured variants (dev3, dev2; docs/evaluation.md).
TEXT_REF_WEIGHTS = {"anchor": 2.0, "context": 1.0, "linking": 0.5, "url": 0.25}
# A term's rarity weight is −log10(p) − 2 (p: general-language frequency), clipped to
# 1..TEXT_RARITY_CAP: a name weighs up to 4 common words (hand-set).
TEXT_RARITY_CAP = 4.0
# A list of links (listing degree ≥ TEXT_COMPARE_LISTING) quotes its items' headlines and
# leads: like a page linking to the dead URL itself, it is ranked but never the candidate the
# others are compared with (dev3 c0247: a section page made the article look 0.41 behind).
TEXT_COMPARE_LISTING = 0.5
# Words most of a site's *candidates* share are not down-weighted: the candidates were found
# by the link's words, so they share exactly those (dev2 c0165, c0177 lost to that rule).
# A candidate whose text match is more than TEXT_SHORTFALL_FROM behind the best other
# candidate's has its confidence multiplied by exp(−TEXT_SHORTFALL_SLOPE × (shortfall −
# TEXT_SHORTFALL_FROM)): 0.2 behind → × 0.55, 0.4 behind → × 0.17. Values of the variant
# measured on dev3 (0.866 → 0.883) and dev2 (0.946 → 0.946) before this implementation.
TEXT_SHORTFALL_FROM = 0.1
TEXT_SHORTFALL_SLOPE = 6.0


def text_shortfall_factor(shortfall: float) -> float:
    """The factor on a candidate's confidence for being `shortfall` behind the best other
    candidate's text match (see TEXT_SHORTFALL_FROM)."""
    if shortfall <= TEXT_SHORTFALL_FROM:
        return 1.0
    return math.exp(-TEXT_SHORTFALL_SLOPE * (shortfall - TEXT_SHORTFALL_FROM))


# ------------------------------------------------------------------ stopping the search

# The search stops once the top candidate is a verified move (`rank.is_moved`) with a title
# this similar to the lost page's (hand-set with the stricter "moved", e758d02).
CONFIRM_TITLE = 0.8
# ... or once the calibrated ranking is this sure and the runner-up is CONFIRM_MARGIN behind
# (hand-set with the early stop on a sure answer, 34e02b0). A moved candidate this sure is
# also a learnt move (FABLE: `recovery.learn.learned_moves`).
CONFIRM_CONFIDENCE = 0.9
CONFIRM_MARGIN = 0.3

# ------------------------------------------------------------------ where answers live

# An answer this sure teaches where answers live (store.elsewhere): below RECOMMEND_AT,
# because a replacement rarely scores high; a site is only read once it held answers for two
# other sites (store side). Hand-set with the copies below (c5476a7).
ANSWER_SITE_EVIDENCE = 0.3
# A page on another site with the lost page's title (or the anchor's words) is a copy of it,
COPY_TITLE = 0.8
# and so is one whose address keeps the lost page's words (hand-set, c5476a7).
COPY_URL = 0.7

# ------------------------------------------------------------------ budget defaults

# A recovery's limits: the request budget (queries, candidates fetched, seconds) defaults to
# the product's settings (PAGETRAIL_MAX_QUERIES, _MAX_CANDIDATES, _RECOVERY_SECONDS), read
# here from Settings' own defaults so the numbers live once.
MAX_QUERIES: int = Settings.model_fields["max_queries"].default
MAX_CANDIDATES: int = Settings.model_fields["max_candidates"].default
RECOVERY_SECONDS: float = Settings.model_fields["recovery_seconds"].default
HITS_PER_QUERY = 10  # hits kept of each engine's answer to a query (a first result page)
FETCH_PER_QUERY = 5  # only the top of each query's list is worth fetching (requests per case)

# ------------------------------------------------------------------ fitted values

# The ranking's confidence calibration fitted on the development worlds (package data):
# written by `bench/calibrate.py --out`, read once a process by `rank.default_calibration`.
FITTED_FILE = Path(__file__).parent / "ranking" / "data" / "rank_calibration.json"


def fitted(path: Path = FITTED_FILE) -> dict[str, Any] | None:
    """The fitted values as written by the calibration tooling, or None when there are none
    (the hand-set `rank.DEFAULT_CALIBRATION` applies). Raises OSError/ValueError for a file
    that exists but cannot be read (the caller names it)."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


# ------------------------------------------------------------------ answer-level rules


def recommends(confidence: float) -> bool:
    """A live candidate this sure is the answer."""
    return confidence >= RECOMMEND_AT


def weak_anchor_confidence(confidence: float) -> float:
    """A candidate's confidence when the only evidence is a weak anchor (see
    WEAK_ANCHOR_CLAMP)."""
    return min(confidence, WEAK_ANCHOR_CLAMP)


def archived_confidence(top_live: float | None) -> float:
    """The archived copy's confidence, given the top live candidate's (None: there is none)."""
    return ARCHIVED_AS_ANSWER if top_live is None or not recommends(top_live) \
        else ARCHIVED_AS_FALLBACK


def confirmed_by_confidence(top: float, runner_up: float | None) -> bool:
    """The calibrated ranking is sure and nothing else comes close (a stop rule)."""
    return top >= CONFIRM_CONFIDENCE and (runner_up is None or runner_up < top - CONFIRM_MARGIN)
