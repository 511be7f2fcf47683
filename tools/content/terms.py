"""Term extraction: background model, TF-IDF, KLD, frequency, URL terms (pure functions).

Background model
----------------
IDF and KLD need a reference collection. Klein & Nelson took document frequencies from a
search engine index, Martinez-Romo & Araujo from English Wikipedia. We have no index, so
`WordfreqBackground` turns wordfreq's word frequencies (share of all tokens, f) into
pseudo document frequencies over a notional collection of N documents of L tokens each,
assuming a term's occurrences fall independently (Poisson):

    P(term occurs in a document) = 1 − exp(−f·L)        df(t) = N · (1 − exp(−f·L))

with N = 10⁶ and L = 500: "the" (f ≈ 0.054) is in every document, "solar" (f ≈ 3.4·10⁻⁵)
in about 1.7 % of them, a word wordfreq does not know in none. Real words are burstier than
Poisson, so this over-estimates df for topical words a little; rankings are what matter.

KLD term score (Martinez-Romo & Araujo): score(t) = p_doc(t) · log(p_doc(t) / p_bg(t)).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Protocol
from urllib.parse import urlsplit

import wordfreq

from pagetrail.tools.content.text import content_terms, stopwords
from pagetrail.tools.content.uritokens import path_tokens, split_concatenated
from pagetrail.tools.models import Term

TF_SMOOTHING = 0.4  # Klein & Nelson's a: tf_norm = a + (1 − a)·tf/tf_max
NOTIONAL_DOCS = 1_000_000
NOTIONAL_DOC_LENGTH = 500
MIN_PROBABILITY = 1e-8  # floor for words the background has never seen


class Background(Protocol):
    """A reference collection: document frequencies (for IDF) and term probabilities (KLD)."""

    lang: str
    n_docs: float

    def df(self, term: str) -> float: ...

    def prob(self, term: str) -> float: ...


@lru_cache(maxsize=1)
def _wordfreq_languages() -> frozenset[str]:
    return frozenset(wordfreq.available_languages())


class WordfreqBackground:
    """Pseudo document frequencies from wordfreq (see the module docstring for the mapping)."""

    def __init__(self, lang: str = "en", *, n_docs: float = NOTIONAL_DOCS,
                 doc_length: float = NOTIONAL_DOC_LENGTH) -> None:
        lang = (lang or "en").split("-")[0].lower()
        self.lang = lang if lang in _wordfreq_languages() else "en"
        self.n_docs = n_docs
        self.doc_length = doc_length

    def frequency(self, term: str) -> float:
        return _frequency(term, self.lang)

    def df(self, term: str) -> float:
        return self.n_docs * -math.expm1(-self.frequency(term) * self.doc_length)

    def prob(self, term: str) -> float:
        return max(self.frequency(term), MIN_PROBABILITY)


@lru_cache(maxsize=100_000)
def _frequency(term: str, lang: str) -> float:
    return wordfreq.word_frequency(term, lang)


# ---------------------------------------------------------------------------------------
# Rankings


def normalized_tf(counts: Mapping[str, int], smoothing: float = TF_SMOOTHING) -> dict[str, float]:
    """Klein & Nelson's smoothed TF: a + (1 − a)·tf/tf_max (a = 0.4)."""
    if not counts:
        return {}
    tf_max = max(counts.values())
    return {t: smoothing + (1 - smoothing) * c / tf_max for t, c in counts.items()}


def idf(term: str, background: Background) -> float:
    return math.log((background.n_docs + 1) / (background.df(term) + 1))


def _ranked(scores: Mapping[str, float], order: Mapping[str, int], k: int | None) -> list[Term]:
    """Highest score first; ties by first occurrence in the text (deterministic)."""
    ranked = sorted(scores.items(), key=lambda item: (-item[1], order.get(item[0], 0), item[0]))
    return [Term(term=t, score=round(s, 6)) for t, s in ranked[:k]]


def _first_positions(tokens: list[str]) -> dict[str, int]:
    first: dict[str, int] = {}
    for i, t in enumerate(tokens):
        first.setdefault(t, i)
    return first


def tfidf_terms(tokens: list[str], background: Background, k: int | None = 20) -> list[Term]:
    """Lexical-signature ranking: smoothed TF × IDF from the background."""
    tf = normalized_tf(Counter(tokens))
    scores = {t: w * idf(t, background) for t, w in tf.items()}
    return _ranked(scores, _first_positions(tokens), k)


def kld_terms(tokens: list[str], background: Background, k: int | None = 20) -> list[Term]:
    """Terms by their contribution to KL(doc ‖ background): p_doc·log(p_doc / p_bg)."""
    return _kld_ranked(tokens, background.prob, k)


def _kld_ranked(tokens: list[str], probability: Callable[[str], float],
                k: int | None) -> list[Term]:
    counts = Counter(tokens)
    total = sum(counts.values())
    if not total:
        return []
    scores = {}
    for t, c in counts.items():
        p = c / total
        scores[t] = p * math.log(p / probability(t))
    return _ranked(scores, _first_positions(tokens), k)


def frequency_terms(tokens: list[str], k: int | None = 20) -> list[Term]:
    """Plain frequency ranking (the linking page's terms, Martinez-Romo & Araujo)."""
    counts = Counter(tokens)
    return _ranked({t: float(c) for t, c in counts.items()}, _first_positions(tokens), k)


FUNCTION_WORD_ZIPF = 6.0  # 'ich', 'wir', 'uns': missing from some stop lists, never topical


def text_terms(text: str, lang: str = "en") -> list[str]:
    """Signature tokens of a text: lower-case, no stop words, no numbers, no 1-letter words.

    Words as frequent as function words (Zipf ≥ 6 in the text's language) are dropped too:
    the jusText lists miss some (German 'wir', 'ich'), and they would top frequency rankings.
    """
    lang = (lang or "en").split("-")[0].lower()
    wf_lang = lang if lang in _wordfreq_languages() else "en"
    return [t for t in content_terms(text, lang)
            if _zipf(t, wf_lang) < FUNCTION_WORD_ZIPF]


@lru_cache(maxsize=100_000)
def _zipf(term: str, lang: str) -> float:
    return wordfreq.zipf_frequency(term, lang)


# ---------------------------------------------------------------------------------------
# URL terms

# Words frequent in URLs that say little about a page (the URL-collection side of KLD).
# Relative weights: the probability of the word in a notional collection of URL terms.
URL_COMMON: dict[str, float] = {
    **dict.fromkeys(["www", "http", "https", "html", "htm", "php", "asp", "aspx", "jsp",
                     "cgi", "shtml", "index", "default", "home", "main"], 2e-2),
    **dict.fromkeys(["com", "org", "net", "edu", "gov", "de", "uk", "co", "io", "info"], 2e-2),
    **dict.fromkeys(["article", "articles", "news", "page", "pages", "id", "category",
                     "categories", "tag", "tags", "post", "posts", "blog", "blogs", "story",
                     "stories", "view", "show", "item", "items", "content", "contents", "node",
                     "archive", "archives", "detail", "details", "doc", "docs", "en", "web",
                     "site", "sites", "static", "files", "file", "download", "downloads",
                     "media", "images", "img", "pub", "public", "cms", "modules", "module",
                     "display", "print", "amp", "mobile", "entry", "entries", "topic",
                     "topics", "section", "sections", "storyid", "artikel", "seite", "lang",
                     "wp", "content", "uploads", "dev", "api", "src", "search", "query",
                     "ref", "utm", "source", "medium", "campaign", "action", "cat", "p"],
                    5e-3),
}
_HEXISH = re.compile(r"^(?=.*\d)[0-9a-f]{6,}$")
_TLDS_AND_HOST = frozenset({"www", "com", "org", "net", "edu", "gov", "co", "uk", "de", "io",
                            "info", "biz", "eu", "us", "at", "ch", "fr", "nl", "es", "it"})


def _is_id(token: str) -> bool:
    """Numbers, hex ids, and tokens mixing letters and digits ('a1b2', '14848164')."""
    if token.isdigit() or _HEXISH.match(token):
        return True
    has_digit = any(ch.isdigit() for ch in token)
    return has_digit and (sum(ch.isdigit() for ch in token) * 2 >= len(token) or len(token) > 12)


def url_words(url: str, *, include_host: bool = False, lang: str = "en") -> list[str]:
    """Words of a URL's path (and query values), in order: the URL tokeniser's tokens
    (tools.content.uritokens), concatenated words split, numbers/ids/stop words dropped."""
    words: list[str] = []
    if include_host:
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            host = ""
        words.extend(label for label in host.lower().split(".")
                     if label and label not in _TLDS_AND_HOST)
    stop = stopwords("en") | stopwords(lang)
    for token in path_tokens(url, query="values"):
        if _is_id(token):
            continue
        for word in split_concatenated(token, lang):
            if len(word) >= 2 and word not in stop and not _is_id(word):
                words.append(word)
    return words


def url_term_prob(term: str) -> float:
    """Probability of a term in the URL-term model: the common-URL-word list, else wordfreq."""
    return URL_COMMON.get(term) or max(_frequency(term, "en"), MIN_PROBABILITY)


def url_terms(url: str, k: int | None = 10, *, include_host: bool = False,
              lang: str = "en") -> list[Term]:
    """URL terms ranked by KLD against the URL-term model (Martinez-Romo & Araujo)."""
    return _kld_ranked(url_words(url, include_host=include_host, lang=lang), url_term_prob, k)


def drop_stopwords(terms: Iterable[str], lang: str = "en") -> list[str]:
    stop = stopwords(lang) | stopwords("en")
    return [t for t in terms if t not in stop]
