"""Recovery policy: every threshold, clamp, margin and budget default, in one place.

A recovery turns evidence into an answer through numbers that are choices, not facts: when
a candidate is sure enough to recommend, when the search may stop, how sure an archived copy
is, how much a person's pick weighs. They are all here, each named and with where its value
came from, so that fitting them across worlds changes one module (and one data file).

Two kinds of value:

- **hand-set** constants below (from the seed papers or from development worlds' figures);
- **fitted** values: the ranking's confidence calibration, written by `bench/calibrate.py`
  into `FITTED_FILE` and read by `fitted()`.

Where the scoring is (for a learned ranking built on it): the ranking's component scores
(`models.Scores`) are combined with `COMPONENT_WEIGHTS`; the link's words are weighed by
where they came from with `SOURCE_WEIGHTS`; the calibration's features are
`ranking.rank.FEATURES` and its hand-set coefficients `HAND_SET_CALIBRATION` (a fitted file,
`FITTED_FILE`, replaces them); what is weighed after it is `ranking.after.AfterFactors`
(the LISTING_*, OFFSHOOT_* and TEXT_SHORTFALL_* values below).

Who uses what: `ranking.rank.decide` turns a candidate's features into its confidence (the
fitted calibration and the direct-evidence floors below); the recovery's answer step
(`recovery.answer`) applies the answer-level rules (`weak_anchor_confidence`,
`archived_confidence`, `recommends`); the evaluator judges "confidently wrong" with
`CONFIDENT`. Nothing else owns confidence policy.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from pagetrail.tools.settings import Settings

# ------------------------------------------------------------------ ranking: scores and weights

# How much each component score counts in a candidate's final score (`rank.combine`).
# Components the reference has no data for (no archived copy, no usable anchor, no dead
# URL…) are left out and the rest renormalised; a component missing on the candidate's side
# (page not fetched) counts 0. Hand-set from Martinez-Romo & Araujo §8.3, Fig. 8.
COMPONENT_WEIGHTS: dict[str, dict[str, float]] = {
    # An archived copy exists: content similarity to it dominates (KLD first, §8.3).
    "memento": {
        "content_lm": 0.25, "content_cosine": 0.20, "content_resemblance": 0.05,
        "title_similarity": 0.15, "anchor_dice": 0.05, "context_similarity": 0.05,
        "url_similarity": 0.07, "same_site": 0.03, "fusion": 0.05, "pick": 0.05,
        "rule_support": 0.05,
    },
    # No archived copy: Dice(anchor, title) first, then context and URL terms (§8.3, Fig. 8).
    "no_memento": {
        "anchor_dice": 0.30, "context_similarity": 0.20, "url_similarity": 0.15,
        "same_site": 0.05, "fusion": 0.15, "pick": 0.08, "rule_support": 0.07,
        # only when an archived copy has a title but too little text to compare
        "title_similarity": 0.15,
    },
}

# The one table of the link's words by source (anchor, context, linking page, dead URL), one
# row per score that weighs them:
# - "context_similarity" (`rank.score_candidate`): the share of the link's words found on a
#   candidate (its text, title and URL); the dead URL's words count as much as the context's
#   (hand-set with the first ranking, 3d6c5b2).
# - "text_match" (`ranking.textref`): without an archived copy, a candidate's main text
#   against the link's own words (docs/evaluation.md proposal 1): the anchor counts most,
#   the context and linking page less, the dead URL's words only weakly (a look-alike
#   repeats them: with the URL's words as the main reference dev3 lost four URL-only
#   moves). Hand-set from the first measured variants (dev3, dev2; docs/evaluation.md).
SOURCE_WEIGHTS: dict[str, dict[str, float]] = {
    "context_similarity": {"anchor": 2.0, "context": 1.0, "url": 1.0, "linking": 0.5},
    "text_match": {"anchor": 2.0, "context": 1.0, "linking": 0.5, "url": 0.25},
}
MAX_LINKING_TERMS = 20  # the linking page's terms taken into the reference, strongest first

# Reciprocal-rank fusion constant (Cormack et al.): a candidate's votes from many queries.
RRF_K = 60
# An archived copy with fewer content terms than this cannot vouch for content similarity.
MIN_CONTENT_TERMS = 20
# A site's home page is rarely what a deep link pointed to: its final score × this.
SITE_ROOT_PENALTY = 0.3
# A not-found phrase only condemns a page this short (~150 words): a long article may say it.
SHORT_PAGE_CHARS = 1000
# Candidate titles are untrusted page text: clipped to this many characters.
TITLE_CHARS = 300

# "moved" — the same page at a new URL (`rank.is_moved`): with an archived copy, ≥ MOVED_COSINE
# cosine to it (Martinez-Romo & Araujo §4.2's validity threshold) and a title at least
# MOVED_TITLE alike (edited, not replaced); without one, the same title (TITLE_IDENTICAL) on
# the same site, or the site's own rewrite rule with MOVED_RULE_SUPPORT (hand-set).
MOVED_COSINE = 0.9
MOVED_TITLE = 0.5
TITLE_IDENTICAL = 0.999
MOVED_RULE_SUPPORT = 0.5

# The confidence calibration until one is fitted (`rank.DEFAULT_CALIBRATION`: logistic of
# intercept + Σ coefficient · feature): final 0.75 (a verified move) → 0.98; 0.5 → 0.5;
# 0.3 → 0.2; a confirmed move adds 2 to the log-odds (hand-set, 3d6c5b2).
HAND_SET_CALIBRATION: dict[str, Any] = {"intercept": -4.0,
                                        "coefficients": {"final": 8.0, "moved": 2.0}}

# What a candidate's one-line explanation (`rank.explain`) mentions: a title, anchor overlap,
# share of the link's words or URL at least this alike (wording only: no effect on ranking).
EXPLAIN_SIMILAR_TITLE = 0.5
EXPLAIN_ANCHOR_WORDS = 0.3
EXPLAIN_LINK_WORDS = 0.3
EXPLAIN_SIMILAR_URL = 0.5

# A page grown out of the dead address (`ranking.offshoots`) grows out of a page's name: a
# last segment this long, or a short number after one (`/story-slug/21`); hand-set.
OFFSHOOT_NAME_CHARS = 4

# ------------------------------------------------------------------ answering (confidence)

# Confidence from which the top live candidate is the answer (below it: the archived copy,
# else "none"). Hand-set in the first pipeline (3d6c5b2): the calibration's midpoint
# (log-odds 0).
RECOMMEND_AT = 0.5

# The learned ranking and answer (issue #39; `ranking.learned`, trained by
# bench/train_ranking.py across worlds): when on, the hand ranking's first LEARNED_DEPTH live
# candidates are re-ordered by the ranking model's probability that each is the right page, and
# the new first is recommended when the answer model's calibrated probability reaches the
# model's own line (`LEARNED_MODEL_FILE`'s recommend_at, chosen for an error target of 1 % of
# dead cases in every world — by the training out of fold, then again on worlds the model
# never saw: `bench/train_ranking.py line`), instead of its hand confidence reaching
# RECOMMEND_AT. Measured on mutated worlds made after the model: docs/evaluation.md. If the
# model cannot be read, the answer names it (failure "confidence") and the hand ranking decides.
LEARNED_ANSWER = True
# How many of the hand ranking's candidates the learned ranking re-orders: the hand list has
# the right page in its first 10 in 0.90–0.97 of cases (success@10), and the ranking model is
# trained on exactly those places.
LEARNED_DEPTH = 10
# Log-odds fed to the answer model are clipped here (a probability of 0 or 1 stays finite).
LEARNED_LOGIT_CLIP = 8.0
# The model file's format version (`ranking.learned` refuses a file of another): 2 holds the
# ranking and the answer model (1 held an answer confidence alone).
LEARNED_MODEL_FORMAT = 2
LEARNED_MODEL_FILE = Path(__file__).parent / "ranking" / "data" / "answer_model.json"

# What the evaluator calls a confident answer ("confidently wrong" when it is not expected):
# the same line the pipeline recommends from, so the two can never disagree (the evaluator
# had its own 0.5 since 7305e3f; bench/calibrate.py reads this one).
CONFIDENT = RECOMMEND_AT

# Fig. 8 of Martinez-Romo & Araujo: an anchor that is neither a stop anchor nor usable alone
# (one common word), with no archived copy to verify against, is not enough to recommend
# anything: every live candidate's confidence is clamped below RECOMMEND_AT (hand-set,
# 3d6c5b2). The hand ranking's rule: the learned answer reads the clamped list and decides
# (recovery.answer.for_dead).
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
# 1 − LISTING_PENALTY × degree (hand-set on dev3's misses, measured on dev, dev2, dev3;
# bench/sweep_factors.py with the calibration refitted: 0.8 fitted on all three, held out
# dev3 it would be 0.2 and lose a dev3 case).
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


# A page of the dead page's site whose address is the dead address plus words
# (`ranking.offshoots`: an edition, an update, a follow-up) is another page, not the lost
# one; its look-alike address is no evidence. Its confidence is multiplied by this unless
# direct evidence (a redirect, a pick, the site's rewrite rule) names it: like a listing, it
# wins only when nothing else is there. Such pages were right answers for 2 of 222 cases in
# dev and dev2 and 1 of 179 in dev3, and look-alikes above the right page in 8 dev3 and 5
# dev2 misses. Fitted on dev, dev2 and dev3 over a grid, ties to the mildest
# (bench/sweep_offshoot.py, issue #27); leave-one-world-out: fitted on dev + dev2 it is
# 0.5 (dev3 0.922 held out), on the two others 0.1 (dev 0.964, dev2 0.950 held out).
# Refitted with the calibration on the stored candidates (bench/sweep_factors.py --refit):
# still 0.1 on all three; held out dev3 it would be 0.3 and lose a dev3 case.
OFFSHOOT_FACTOR = 0.1


# Without an archived copy, a candidate's main text is compared with the link's own words
# (`ranking.textref`, docs/evaluation.md proposal 1): a look-alike copies the dead URL's
# slug and title, not the article's text. The words' weights by source: SOURCE_WEIGHTS
# ["text_match"].
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
# Swept leave-one-world-out with the calibration refitted (bench/sweep_factors.py --refit):
# held out, dev3 scores the same with the factor off as at these values, dev and dev2 one
# case more; the worst world not improving, the values were kept (docs/evaluation.md).
TEXT_SHORTFALL_FROM = 0.1
TEXT_SHORTFALL_SLOPE = 6.0


# ------------------------------------------------------------------ stopping the search

# The search stops once the top candidate is a verified move (`rank.is_moved`) with a title
# this similar to the lost page's (hand-set with the stricter "moved", e758d02).
CONFIRM_TITLE = 0.8
# ... or once the calibrated ranking is this sure and the runner-up is CONFIRM_MARGIN behind
# (hand-set with the early stop on a sure answer, 34e02b0). A moved candidate this sure is
# also a learnt move (FABLE: `recovery.learn.learned_moves`).
CONFIRM_CONFIDENCE = 0.9
CONFIRM_MARGIN = 0.3
# ... or, once a web round was asked and its leads followed, when the learned answer already
# recommends a page that was read (`chain.answered`: what the user will be told is decided,
# and the steps after it cost requests for the same answer) — from a list of at least this
# many live candidates, nothing else within CONFIRM_MARGIN on the ranking model's scale, and
# no weak anchor. The model's rows are final lists, and a short or partial one reads to it
# as unrivalled: stops on lists of one and four candidates told wrong pages (dev3-m1002),
# stops before the first web round lost two republisher replacements (dev3-m1003: the copies
# the search would have shown teach later recoveries where answers live,
# `learn.answers_elsewhere`), and a weak anchor's list gave 0.998 to a page the finished
# search put at 0.08 (dev2-m900). Hand-set on those three worlds (issue #39), judged on worlds
# made after it (docs/evaluation.md, "The answer stops the search").
LEARNED_STOP_CANDIDATES = 5

# ------------------------------------------------------------------ URL names (slug runs)

# `similarity.slug_match` compares the dead URL's name (its slug) with every place a candidate
# URL can carry it (path segments, query values): numbers are dropped on both sides when the
# words left still spell this many letters (a slug that is only an id, 'd-161500790', keeps
# its number). Hand-set: the shortest slug that names a page by its words (as
# MIN_SLUG_LETTERS, 6, less the 2 of a one-letter prefix) (#27, proposal 4).
SLUG_NAME_LETTERS = 4
# A candidate's name that is a leading run of the dead slug, cut there (a truncated slug:
# CMS length limits cut 'key-moments-from-kurt-volkers-and-tim' to 'key-moments-from-kurt-volker')
# counts as the whole slug from this many tokens on; shorter prefixes name a topic, not a
# page. Hand-set (#27, proposal 4).
MIN_TRUNCATED_RUN = 3
# A word cut by such a truncation ('volker' of 'volkers') still matches from this many
# letters. Hand-set: the shortest cut seen ('tut' of 'tuts').
MIN_CUT_WORD = 3

# Siblings' live redirects (`recovery.sibling_redirects`, #27 proposal 5): for a URL-only
# link, or one nothing was found for yet, this many pages of the dead URL's folder are
# checked live (one request each, once a folder: the redirects are kept as moves), and
# their rule is applied to the dead URL when every redirect found — at least this many —
# follows it. One is enough: a site's redirect map misses pages (the dead one, and on dev3
# two of three archived siblings answer 404), the rule must rebuild the dead URL from its
# own name (a redirect to the home page proposes nothing), and the proposal is only a
# candidate, fetched and ranked like any other. Hand-set: the bound on the cost.
MAX_SIBLING_CHECKS = 3
MIN_SIBLING_REDIRECTS = 1

# ------------------------------------------------------------------ where answers live

# An answer this sure teaches where answers live (store.elsewhere): below RECOMMEND_AT,
# because a replacement rarely scores high; a site is read once it held answers for
# ANSWER_SITE_MIN_DEAD_SITES other sites. Hand-set with the copies below (c5476a7).
ANSWER_SITE_EVIDENCE = 0.3
# A page on another site with the lost page's title (or the anchor's words) is a copy of it,
COPY_TITLE = 0.8
# and so is one whose address keeps the lost page's words (hand-set, c5476a7).
COPY_URL = 0.7
# Sites that held answers whose own map is read, per recovery. Their maps are kept in the
# store (LISTING_TTL), so a site costs requests once a day, and only its pages that
# match the link's words become candidates. 4 → 8 (#27): a store learns more answer sites
# than republishers (a host several sites moved to is one too), and at 4 a republisher fell
# out of the list; dev3 0.866 → 0.877 (c0225, c0257), no case lost, requests unchanged.
ANSWER_SITES = 8
# A site is an answer site once it held the answer for ANSWER_SITE_MIN_DEAD_SITES dead sites,
# or copies (answers of kind "replacement") for ANSWER_SITE_MIN_COPY_SITES: a republisher.
# Copies 2 → 1 (#27): a fresh store learned a republisher only after two of its copies were
# found some other way, which a thin web index rarely allows. dev3 with 40 % of its indexed
# pages dropped from the index (`bench/thin_index.py`, half its answers unindexed): success@1
# 0.838 → 0.894, replaced 0.562 → 0.750, no case lost. Any answer at 1 (a host one site moved
# to counting too) cost dev3 a request a recovery's median (20 → 21) and won nothing more: a
# site's new home holds no other site's pages. The three worlds: docs/evaluation.md.
ANSWER_SITE_MIN_DEAD_SITES = 2
ANSWER_SITE_MIN_COPY_SITES = 1
# A listed page of an answer site is taken when it carries ANSWER_SITE_RECALL of a query's
# terms, or when it has ANSWER_SITE_MATCHED of them and ANSWER_SITE_PRECISION of its own
# words are the query's: a republisher's truncated slug (`/a/explained-our-bi-research-
# shows-a-mix-of-26660` for a 20-word title) carries few of a long title's terms, but is
# made of nothing else. Hand-set (#27), checked on dev, dev2 and dev3.
ANSWER_SITE_RECALL = 0.5
ANSWER_SITE_MATCHED = 3
ANSWER_SITE_PRECISION = 0.75

# ------------------------------------------------------------------ the link's evidence

# Terms taken from each source of the link's evidence (`recovery.link_evidence`): the
# expansion terms of the context, the URL, the archived copy and the linking page
# (EVIDENCE_TERMS each), the context's terms in the ranking's reference (CONTEXT_TERMS), the
# archived copy's tags (TAG_TERMS) and the backlinks' anchor terms (LNLS_TERMS: Martinez-Romo
# & Araujo's link-neighbourhood signature). Hand-set with the first pipeline.
EVIDENCE_TERMS = 10
CONTEXT_TERMS = 20
TAG_TERMS = 5
LNLS_TERMS = 4
# Lost and never archived: RELATED_ARCHIVED archived pages on the same topic, within half
# the recovery's seconds but at least RELATED_SECONDS (seed 004; hand-set).
RELATED_ARCHIVED = 5
RELATED_SECONDS = 5.0
# Page text returned to callers of `recover_link` (an LLM's context is not free; hand-set).
CALLER_TEXT_CHARS = 4000
# Live candidates looked at for copies of the lost page (`recovery.learn.answers_elsewhere`).
ANSWER_SITE_TOP = 10

# ------------------------------------------------------------------ budget defaults

# A recovery's limits: the request budget (queries, candidates fetched, seconds) defaults to
# the product's settings (PAGETRAIL_MAX_QUERIES, _MAX_CANDIDATES, _RECOVERY_SECONDS), read
# here from Settings' own defaults so the numbers live once.
MAX_QUERIES: int = Settings.model_fields["max_queries"].default
MAX_CANDIDATES: int = Settings.model_fields["max_candidates"].default
RECOVERY_SECONDS: float = Settings.model_fields["recovery_seconds"].default
HITS_PER_QUERY = 10  # hits kept of each engine's answer to a query (a first result page)
# Only the top of each query's list is worth fetching (requests per case). 3 was tried for
# issue #27 (dev3 requests median 30 → 23) and lost three first answers found at rank 4–5 of
# the site's own map (dev3 c0108, c0182, c0197); 4 still lost one, and 5 was kept. With the
# read-before-answer rule (`VERIFY_TOP`) 4 loses none: dev 19 → 19, dev2 20 → 19, dev3
# 22.5 → 22 (issue #27, cost2; 3 still lost dev3 c0088 and c0197).
FETCH_PER_QUERY = 4
# ... and without a web engine, 5 (the depth before cost2): the site's map and the archive's
# lists are all there is then. At 4, dev3 without web search fell 0.553 → 0.503: the first
# moved PEP (c0040) was read at rank 5, so no rule was learned for the nineteen after it.
FETCH_PER_QUERY_NO_WEB = 5
# ... and of a query of the page's topic rather than its name (tags, lexical signatures, the
# anchor and its expansions: `queryplan.TOPIC_METHODS`) only the first this many, unless the
# page is on a site whose links are followed (a hub there may link the answer). Traced on full
# runs (cost2, issue #27): of such hits read at rank 3–4 (no title, address or site query
# listing them higher) one was the right page in dev3 (c0061, 206 reads), none in dev (142
# reads); 224 of dev3's and 126 of dev's were on sites neither dead nor the answer's. Cut on
# every site it lost dev3 c0088, whose answer is linked from a section page of its new host
# read at rank 4 of an anchor query: hence the exception.
TOPIC_FETCH_PER_QUERY = 2

# ------------------------------------------------------------------ guessing addresses

# The dead slug under its live siblings' folders (`recovery.siblings.transplants`): at most
# SIBLING_FOLDERS folders a dead page, the most populated first, and MAX_TRANSPLANTS guessed
# addresses a recovery (new homes included); a slug spelling fewer than MIN_SLUG_LETTERS
# letters ('1927', 'faq') names nothing by itself; a folder shows its naming style (numbers
# or none) from MIN_STYLE_SIBLINGS pages. Hand-set with the siblings stage.
SIBLING_FOLDERS = 3
MAX_TRANSPLANTS = 4
MIN_SLUG_LETTERS = 6
MIN_STYLE_SIBLINGS = 2
# The dead path on other hosts that hold pages of its folder (`siblings.new_homes`): at most
# MAX_NEW_HOMES hosts a recovery; a folder of MIN_OWN_FOLDER_NAMES named (not numeric)
# segments is the site's own wherever it is seen (/news/uknews/law-and-order/); fewer
# (/news/, /2019/07/) many sites share (hand-set, docs/evaluation.md).
MAX_NEW_HOMES = 2
MIN_OWN_FOLDER_NAMES = 2
# Proposals of the site's inferred rewrite rules taken as candidates (`stages.direct`).
RULE_PROPOSALS = 3
# Pages taken from each answer site's map, best overlap first (`stages.answer_sites`).
ANSWER_SITE_HITS = 2

# The neighbourhood (`recovery.stages.links`): other sites and other hosts of the dead site
# (where top candidates live) whose own map is read, at most NEIGHBOUR_SITES of each a
# recovery, looking NEIGHBOUR_DEPTH deep in the
# ranking (an unindexed replacement sits on a site whose other pages rank low). Such a
# candidate names a site worth listing when it resembles the dead page by its URL
# (NEIGHBOUR_URL), title (NEIGHBOUR_TITLE) or text (NEIGHBOUR_CONTENT), not merely by
# ranking among weak candidates (hand-set).
NEIGHBOUR_SITES = 4
NEIGHBOUR_DEPTH = 8
NEIGHBOUR_URL = 0.15
NEIGHBOUR_TITLE = 0.5
NEIGHBOUR_CONTENT = 0.5
# While the dead host is silent, the site engine (left out for it) still reads the own map of
# the first this many of those hosts of each kind (`stages.links.map_readers`): the dead
# site's own new homes (its registered domain, or a host named after it) and other sites (a
# republisher), each in rank order, so a republisher ranked first does not take the new
# home's map, nor the reverse. Reading every such host's map (up to policy.NEIGHBOUR_SITES)
# found a few more answers on fresh worlds at one more request a recovery at the median
# (each map is robots.txt, a sitemap and the root page); the archive's listing of the others
# is one request each (issue #39, hand-set).
SILENT_HOST_MAPS = 1

# A remembered answer is given again for ANSWER_CACHE_TTL; an answer site's map, read once a
# recovery, is kept for LISTING_TTL (the same few sites are read by every recovery: once a
# day is polite and saves ~3 requests a site). Hand-set.
ANSWER_CACHE_TTL = timedelta(days=1)
LISTING_TTL = timedelta(days=1)

# ------------------------------------------------------------------ request economy

# The moved host (`recovery.stages.moved_host`): variants of a gone host probed one after the
# other, at most this many, stopping at the first that answers. The 16 variants of
# `urls.host_variants`, probed all at once, cost 27–32 requests each time a recovery probed
# (docs/evaluation.md "Where the extra cost goes"); the www. twin and the first subdomains
# come first, and hosts the evidence already names go before them (hand-set, issue #27).
# 6 → 3 (one wave, cost2, issue #27): seven dev3 recoveries at 21–23 requests probed six
# variants and found none; where the site went to the second wave's variants (dev/dev2 c0162
# `news.`, c0201 and dev3 c0048 `blog.`) the web search finds its page all the same: no case
# lost in dev, dev2, dev3; dev3 requests median 21 → 20.
MOVED_HOST_PROBES = 3
# ... and every variant when no web engine is configured: then nothing else names the new
# host (a site moved to its name under another top-level domain, tests/
# test_recover_weak_search.py; no world lost a first answer with a cap of 6 or 3 and web search).
MOVED_HOST_PROBES_NO_WEB = 16
# ... probed this many at a time (one after the other added ~1 s to a recovery whose
# variants do not exist; hand-set, issue #27). With web search one wave is probed
# (MOVED_HOST_PROBES), without it the waves go on to MOVED_HOST_PROBES_NO_WEB.
MOVED_HOST_WAVE = 3
# A host the evidence names counts as a variant when it carries the dead site's name label
# (`spiegel.de` → `spiegelhq.de`), for names this long or longer (shorter ones, `ab`, `tv`,
# match unrelated hosts; hand-set, issue #27).
MOVED_HOST_NAME_CHARS = 4

# Reading candidates (`recovery.candidates.fetch_candidates`): the first this many of a
# ranking's pending candidates, in pre-rank order (direct evidence, best search rank), are
# fetched first; when one of them is the lost page by content (`rank.is_moved` and a title
# CONFIRM_TITLE alike, no listing) the others are not fetched — the chain stops on it anyway.
# Otherwise the rest is fetched at once (two waves at most: seconds stay close to one wave).
# Reading candidates was 41–44 % of a recovery's requests (hand-set, issue #27).
FIRST_FETCH_WAVE = 4
# Link-graph targets (`recovery.stages.links`: links on the fetched pages of the dead site
# and its neighbours, best overlap first) added per round. 5 until issue #27: of the first
# 100 dev and 80 dev3 recoveries' 412 such fetches 283 were 404s, and the 15 right pages
# among them were all of rank 1 or 2; 3, not 2, so that a moved page third among a hub's
# look-alike links is still read (tests/test_recover_noweb.py; hand-set, issue #27).
LINK_CANDIDATES = 3
# ... and only links that are a lead (`links.worth_following`): their anchor and URL carry this
# share of the query's terms (`overlap.rank_by_overlap`'s recall), or their URL is this like
# the dead one (`overlap.rank_by_url`). Traced on full runs (cost2, issue #27): the right
# pages the link graph found had recall ≥ 0.65 (dev3 24 of 24, dev 17 of 18), or, for a
# query of the anchor's words only, a URL 0.55 like the dead one (dev c0066); 308 of dev3's
# 545 wrong link targets and 367 of dev's 640 had neither (a section, a tag, the next
# article of the folder).
LINK_MIN_RECALL = 0.6
LINK_MIN_LIKENESS = 0.5
# Once every step has run unconfirmed, the links of the pages the last rankings read are
# followed at most this many more times (`recovery.chain.Chain.last_links`): a tag page read
# in the last ranking links to the moved page no search returned (thin index, issue #39).
LAST_LINK_STEPS = 1
# The first answer is a page that was read: a top candidate left unfetched (by the budget
# or the fetch order: only its URL or a snippet ranked it) is read before the answer, and
# the ranking redone, at most this many times (`recovery.candidates.verify_top`). A page
# that answers 404 is never offered on its looks (issue #27).
VERIFY_TOP = 3

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


def recommends(confidence: float, line: float = RECOMMEND_AT) -> bool:
    """A live candidate this sure is the answer (line: the learned model's when it decides)."""
    return confidence >= line


def weak_anchor_confidence(confidence: float) -> float:
    """A candidate's confidence when the only evidence is a weak anchor (see
    WEAK_ANCHOR_CLAMP)."""
    return min(confidence, WEAK_ANCHOR_CLAMP)


def archived_confidence(top_live: float | None, line: float = RECOMMEND_AT) -> float:
    """The archived copy's confidence, given the top live candidate's (None: there is none)."""
    return ARCHIVED_AS_ANSWER if top_live is None or not recommends(top_live, line) \
        else ARCHIVED_AS_FALLBACK


def confirmed_by_confidence(top: float, runner_up: float | None) -> bool:
    """The calibrated ranking is sure and nothing else comes close (a stop rule)."""
    return top >= CONFIRM_CONFIDENCE and (runner_up is None or runner_up < top - CONFIRM_MARGIN)
