"""The page's text against the link's own words, when there is no archived copy (pure).

Without an archived copy the ranking compares a candidate's *title* and *URL* with the link
(anchor Dice, URL likeness): exactly what a look-alike copies — a page on the dead site whose
address repeats the dead slug with an edition suffix, whose text is another story. What a
look-alike does not copy is the article's running text. This module scores each candidate's
main text (the extractor's, not its title or URL) against a reference made of the link's own
words: anchor, context, the linking page's terms and, as a weak part, the dead URL's words
(docs/evaluation.md, proposal 1, variant d).

- `link_words`: the reference, term → weight (policy.SOURCE_WEIGHTS["text_match"] by, times the
  term's rarity in the language, so "new" or "year" count less than a name);
- `text_match`: the weighted share of the reference found in one page's main text, 0–1;
- `shortfalls`: how far each candidate is behind the best *other* candidate that may serve
  as the comparison (a page that links to the dead URL itself — a roundup quoting the link's
  context, the linking page — is ranked, but never the comparison).

`ranking.after.AfterFactors` turns a shortfall into the factor on the confidence.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from pagetrail.tools import policy
from pagetrail.tools.content.similarity import TermProbability


def rarity(probability: float) -> float:
    """A term's weight from its general-language probability: −log10 p, 1 (a very common
    word) to policy.TEXT_RARITY_CAP (a word the language model has never seen)."""
    return max(1.0, min(policy.TEXT_RARITY_CAP, -math.log10(max(probability, 1e-12)) - 2.0))


def link_words(*, anchor: Iterable[str] = (), context: Iterable[str] = (),
               linking: Iterable[str] = (), url: Iterable[str] = (),
               background: TermProbability | None = None) -> dict[str, float]:
    """The link's own words as a weighted reference (a term keeps its strongest source)."""
    weights: dict[str, float] = {}
    for source, words in (("url", url), ("linking", linking), ("context", context),
                          ("anchor", anchor)):
        weight = policy.SOURCE_WEIGHTS["text_match"][source]
        for word in words:
            term = word.lower()
            if term:
                weights[term] = max(weights.get(term, 0.0), weight)
    if background is not None:
        weights = {t: w * rarity(background(t)) for t, w in weights.items()}
    return weights


def has_own_words(anchor: Collection[str], context: Collection[str]) -> bool:
    """The link said something of its own (an anchor or context with terms): URL words and
    the linking page's general terms alone are what a look-alike repeats or a site shares."""
    return bool(anchor) or bool(context)


def text_match(reference: Mapping[str, float], vocabulary: frozenset[str] | set[str],
               ignore: frozenset[str] | set[str] = frozenset()) -> float:
    """Weighted share of the reference's terms in a page's main text (0–1); terms in
    `ignore` (the page's site name) count as absent."""
    total = sum(reference.values())
    if not total:
        return 0.0
    return sum(w for t, w in reference.items() if t in vocabulary and t not in ignore) / total


def shortfalls(matches: Sequence[float | None], comparable: Sequence[bool]) -> list[float]:
    """For each candidate, by how much its text match is behind the best other candidate's
    that may serve as the comparison (`comparable`); 0 when it is not behind, when its page
    has no text (None), or when no other candidate is comparable."""
    out: list[float] = []
    for i, mine in enumerate(matches):
        others = [m for j, m in enumerate(matches)
                  if j != i and m is not None and comparable[j]]
        if mine is None or not others:
            out.append(0.0)
            continue
        out.append(max(0.0, max(others) - mine))
    return out
