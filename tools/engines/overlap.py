"""Token overlap between a query and a URL or link text (pure functions).

The site and CDX engines have no full-text index: they rank the URLs they list by how many
of the query's terms appear in the URL's path (split slugs) and, for links, the anchor text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pagetrail.tools.content.text import content_terms
from pagetrail.tools.content.uritokens import path_tokens, slug_words, word_tokens

# Path noise that says nothing about the page's subject.
_URL_NOISE = frozenset({
    "www", "html", "htm", "shtml", "php", "asp", "aspx", "jsp", "cgi", "index", "default",
    "http", "https", "amp", "id", "page",
})


def text_tokens(text: str) -> list[str]:
    """Lower-case word tokens of free text (tools.content.uritokens.word_tokens; concatenated words
    are followed by their parts)."""
    return word_tokens(text, split_compounds=True)


def url_tokens(url: str) -> list[str]:
    """Subject tokens of a URL's path and query (the host is the same for all candidates)."""
    return [t for t in path_tokens(url, split_compounds=True) if t not in _URL_NOISE]


def query_terms(query: str) -> list[str]:
    """Distinct content terms of a query (stop words out, `site:` operators dropped)."""
    words = " ".join(w for w in query.split() if ":" not in w)
    seen: dict[str, None] = {}
    for term in content_terms(words) or text_tokens(words):
        seen.setdefault(term.lower(), None)
    # Numbers name things in URLs (PEP 565 → /pep-0565/); content terms leave them out.
    for token in text_tokens(words):
        if token.isdigit() and len(token.lstrip("0")) >= 2:
            seen.setdefault(token, None)
    return list(seen)


def _matches(term: str, token: str) -> bool:
    # Cheap plural/inflection tolerance ("farm" ~ "farms"), no stemmer (papers use none).
    if term == token:
        return True
    if term.isdigit() and token.isdigit():
        return term.lstrip("0") == token.lstrip("0")  # "565" names "pep-0565" too
    short, long_ = sorted((term, token), key=len)
    return len(short) >= 4 and long_.startswith(short) and len(long_) - len(short) <= 2


def overlap(terms: Iterable[str], tokens: Iterable[str]) -> tuple[float, float]:
    """(recall of the query terms in the tokens, Jaccard of the two sets)."""
    term_set = set(terms)
    token_set = set(tokens)
    if not term_set or not token_set:
        return 0.0, 0.0
    matched = sum(1 for term in term_set if any(_matches(term, tok) for tok in token_set))
    if not matched:
        return 0.0, 0.0
    matched_tokens = sum(1 for tok in token_set if any(_matches(t, tok) for t in term_set))
    union = len(term_set) + len(token_set) - min(matched, matched_tokens)
    return matched / len(term_set), matched / max(union, 1)


def page_terms(url: str, text: str) -> list[str]:
    """Distinct subject terms of a listed page: its link text, else its slug's words (not
    the folders', which name a section: /read/, /story/), stop words and numbers out (what
    `query_terms` keeps of a query)."""
    words = " ".join(text_tokens(text)) if text.strip() else " ".join(slug_words(url))
    return list(dict.fromkeys(term.lower() for term in content_terms(words)))


def precision(terms: Sequence[str], url: str, text: str) -> tuple[float, int]:
    """(share of the page's own terms that are among the query's `terms` (`query_terms`),
    how many of them are): a page whose address is made of the query's words, however few
    of them it carries."""
    own = page_terms(url, text)
    if not own or not terms:
        return 0.0, 0
    matched = sum(1 for word in own if any(_matches(term, word) for term in terms))
    return matched / len(own), matched


def rank_by_overlap(
    query: str,
    candidates: Iterable[tuple[str, str]],
) -> list[tuple[str, str, float]]:
    """Rank (url, link text) pairs by query-term overlap; zero-overlap ones are dropped.

    Returns (url, text, score) best first; score = recall, ties broken by Jaccard (a URL
    about just these terms beats a long one that also mentions them), then by shorter URL.
    """
    terms = query_terms(query)
    scored: list[tuple[float, float, str, str]] = []
    for url, text in candidates:
        recall, jaccard = overlap(terms, url_tokens(url) + text_tokens(text))
        if recall > 0:
            scored.append((recall, jaccard, url, text))
    scored.sort(key=lambda item: (-item[0], -item[1], len(item[2]), item[2]))
    return [(url, text, recall) for recall, _jaccard, url, text in scored]


def is_url_query(query: str) -> bool:
    """A query that is itself an absolute http(s) URL: list the URLs that look like it."""
    text = query.strip()
    return text.startswith(("http://", "https://")) and not any(ch.isspace() for ch in text)


def rank_by_url(url: str, candidates: Iterable[tuple[str, str]],
                ) -> list[tuple[str, str, float]]:
    """Rank (url, link text) pairs by how much their URL looks like `url` (path-token Jaccard
    and slug overlap: tools.content.similarity.compare_urls); unlike pages go.

    No stop-word list: slugs and folder names are often made of stop words ("4 things to do
    in october", /tag/never/), and a hub page named by one word of the slug is where an
    unlisted page is linked from. Returns (url, text, score) best first, ties to the shorter.
    """
    from pagetrail.tools.content.similarity import UrlFeatures, compare_urls

    reference = UrlFeatures.of(url)
    scored: list[tuple[float, str, str]] = []
    for candidate, text in candidates:
        features = UrlFeatures.of(candidate)
        similarity = compare_urls(reference, features)
        # The slug overlap shrunk by how many slug words are shared (m / (m + 1)): one shared
        # word (a tag page's) is weaker evidence than several (the renamed page's), though
        # the overlap coefficient of a one-word slug is already 1.
        shared = max(len(reference.slug & features.slug), similarity.slug_run)
        score = 0.5 * similarity.jaccard + 0.5 * similarity.slug_overlap * shared / (shared + 1)
        if score > 0:
            scored.append((score, candidate, text))
    scored.sort(key=lambda item: (-item[0], len(item[1]), item[1]))
    return [(candidate, text, score) for score, candidate, text in scored]


def rank_listing(query: str, candidates: Iterable[tuple[str, str]],
                 ) -> list[tuple[str, str, float]]:
    """A listing ranked for a query: by URL likeness when the query is a URL, else by term
    overlap (rank_by_overlap)."""
    if is_url_query(query):
        return rank_by_url(query.strip(), candidates)
    return rank_by_overlap(query, candidates)
