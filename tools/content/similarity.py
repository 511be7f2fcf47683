"""Text similarity measures for ranking candidates (pure functions, no I/O).

- cosine of term-frequency (optionally TF-IDF) vectors over content terms — the measure
  behind the 0.9 "same page" threshold of Martinez-Romo & Araujo (§4.2);
- Kullback-Leibler divergence between unigram language models, the candidate's smoothed
  (Jelinek-Mercer or Dirichlet) against a background model — their best ranking measure when
  a cached copy exists (§8.2–8.3);
- shingle resemblance (Broder, w = 4) for near-duplicates;
- Dice and Jaccard of term sets (Dice(anchor, title) ranks best without a cached copy);
- title similarity that ignores "| Site Name" suffixes, URL similarity (path-token Jaccard,
  same-site flag, slug overlap).

Tokenising is the hot path when ranking (40 candidate pages per dead link), so texts are
split with one regular expression; scripts written without spaces fall back to wordfreq's
segmenter (tools.content.text.tokenize).
"""

from __future__ import annotations

import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

import wordfreq

from pagetrail.tools import policy
from pagetrail.tools.content.text import stopwords, tokenize
from pagetrail.tools.content.uritokens import (
    FILE_EXTENSION,
    MAX_URI_CHARS,
    path_tokens,
    slug_words,
    word_tokens,
)
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.net.urls import host_of, site_of

MAX_CHARS = 200_000  # longer pages are clipped: the head of a page carries its identity
SHINGLE_WIDTH = 4
MAX_TITLE_CHARS = 1000
BACKGROUND_FLOOR = 1e-8  # probability of a term the background has never seen

_FAST_WORD = re.compile(r"[^\W_]+(?:['’.][^\W_]+)*")
# Scripts written without spaces between words need a real segmenter.
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")

Vector = Mapping[str, float]
# A background model as KLD uses it: term → probability (tools.content.terms.Background is the
# collection behind IDF and KLD in signatures, with document frequencies too).
TermProbability = Callable[[str], float]


# ---------------------------------------------------------------- tokens and terms


def fast_tokens(text: str, lang: str = "en") -> list[str]:
    """Lower-cased word tokens; (nearly) the words of tools.content.text.tokenize, 5x faster."""
    text = (text or "")[:MAX_CHARS]
    if _UNSPACED.search(text):
        return tokenize(text, lang)
    return _FAST_WORD.findall(text.lower())


@lru_cache(maxsize=64)
def stop_set(lang: str) -> frozenset[str]:
    """Stop words of `lang` plus English (pages mix English navigation into any language)."""
    return stopwords(lang or "en") | stopwords("en")


def _is_content(token: str, stop: frozenset[str], min_len: int = 2) -> bool:
    return (len(token) >= min_len and token not in stop
            and not token.replace(".", "").replace(",", "").isdigit())


def content_filter(tokens: Iterable[str], lang: str = "en", *, min_len: int = 2) -> list[str]:
    """Drop stop words, numbers and one-letter tokens (the rule of tools.content.text.content_terms)."""
    stop = stop_set(lang)
    return [t for t in tokens if _is_content(t, stop, min_len)]


def terms(text: str, lang: str = "en") -> list[str]:
    """Content terms of `text`, in order."""
    return content_filter(fast_tokens(text, lang), lang)


@dataclass(frozen=True)
class TextProfile:
    """Everything the measures need from one text, computed once."""

    counts: Counter[str]
    length: int  # number of content terms
    shingles: frozenset[tuple[str, ...]]

    @property
    def vocabulary(self) -> frozenset[str]:
        return frozenset(self.counts)


def profile_text(text: str, lang: str = "en", *, width: int = SHINGLE_WIDTH) -> TextProfile:
    """Content-term counts and (unless `width` is 0) shingles of a text."""
    tokens = fast_tokens(text, lang)
    stop = stop_set(lang)
    # Filter distinct tokens, not every occurrence: a page repeats its words a lot.
    counts = Counter({
        t: c for t, c in Counter(tokens).items()
        if len(t) >= 2 and t not in stop and not t.replace(".", "").replace(",", "").isdigit()
    })
    shingles: frozenset[tuple[str, ...]] = frozenset()
    if width:
        shingles = shingle_set([t for t in tokens if t in counts], width)
    return TextProfile(counts, sum(counts.values()), shingles)


# ---------------------------------------------------------------- vector space


def tf_vector(counts: Mapping[str, int], idf: Mapping[str, float] | None = None) -> dict[str, float]:
    """Raw term frequency, times IDF when given (terms missing from `idf` get weight 1)."""
    if idf is None:
        return {t: float(c) for t, c in counts.items()}
    return {t: c * idf.get(t, 1.0) for t, c in counts.items()}


def norm(vector: Vector) -> float:
    return math.sqrt(math.fsum(map(operator.mul, vector.values(), vector.values())))


def cosine(a: Vector, b: Vector, *, norm_a: float | None = None) -> float:
    """Cosine of two sparse vectors; 0 when either is empty."""
    if not a or not b:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
        norm_a = None
    dot = sum(v * b.get(t, 0.0) for t, v in a.items())
    denominator = (norm_a if norm_a is not None else norm(a)) * norm(b)
    return min(1.0, dot / denominator) if denominator else 0.0


def cosine_text(a: str, b: str, lang: str = "en", idf: Mapping[str, float] | None = None) -> float:
    """Cosine of the TF(-IDF) vectors of two texts' content terms."""
    return cosine(tf_vector(Counter(terms(a, lang)), idf), tf_vector(Counter(terms(b, lang)), idf))


# ---------------------------------------------------------------- language models


@dataclass(frozen=True)
class Smoothing:
    """How a candidate's language model is smoothed against the background.

    Jelinek-Mercer: p(t) = (1 − λ)·c(t)/|d| + λ·p_bg(t).
    Dirichlet:      p(t) = (c(t) + μ·p_bg(t)) / (|d| + μ).
    Jelinek-Mercer is the default: comparing whole pages (not short queries), it keeps the
    divergence of a page from itself near −log(1 − λ) whatever the page's length.
    """

    method: Literal["jelinek-mercer", "dirichlet"] = "jelinek-mercer"
    lam: float = 0.1
    mu: float = 2000.0

    def __post_init__(self) -> None:
        if self.method not in ("jelinek-mercer", "dirichlet"):
            raise ConfigError(f"unknown smoothing method {self.method!r}")
        if not 0.0 < self.lam <= 1.0 or self.mu <= 0.0:
            raise ConfigError("smoothing needs 0 < lam <= 1 and mu > 0")

    def probability(self, count: float, length: int, background: float) -> float:
        if self.method == "dirichlet":
            return (count + self.mu * background) / (length + self.mu)
        ml = count / length if length else 0.0
        return (1.0 - self.lam) * ml + self.lam * background


@lru_cache(maxsize=8)
def _frequency_dict(lang: str) -> dict[str, float]:
    try:
        return wordfreq.get_frequency_dict(lang or "en")
    except LookupError:
        return wordfreq.get_frequency_dict("en")


def wordfreq_background(lang: str = "en") -> TermProbability:
    """Background model (term → probability) from wordfreq's general-language frequencies."""
    table = _frequency_dict(lang)
    english = _frequency_dict("en")

    def probability(term: str) -> float:
        return max(table.get(term) or english.get(term) or 0.0, BACKGROUND_FLOOR)

    return probability


def collection_background(documents: Iterable[Mapping[str, int]]) -> TermProbability:
    """Background model (term → probability) estimated from a collection (e.g. the candidate pages themselves)."""
    total: Counter[str] = Counter()
    for counts in documents:
        total.update(counts)
    size = sum(total.values())

    def probability(term: str) -> float:
        return max(total.get(term, 0) / size if size else 0.0, BACKGROUND_FLOOR)

    return probability


class ReferenceModel:
    """Maximum-likelihood language model of a reference text, compared against candidates.

    KLD(ref ‖ cand) = Σ_t p_ref(t) · log(p_ref(t) / p_cand(t)), summed over the reference's
    terms; p_cand is smoothed so it is never 0. A term the candidate lacks gets the smoothing
    floor p0(t), so KLD = KLD_null − Σ_{t shared} p_ref(t)·log(p_cand(t) / p0(t)), where
    KLD_null (no shared term) has a closed form: one pass over the shared terms per candidate.
    """

    def __init__(self, counts: Mapping[str, int], background: TermProbability,
                 smoothing: Smoothing = Smoothing()) -> None:
        total = sum(counts.values())
        self.smoothing = smoothing
        self.probabilities = {t: c / total for t, c in counts.items()} if total else {}
        self.background = {t: max(background(t), BACKGROUND_FLOOR) for t in self.probabilities}
        # Σ p·log(p / p_bg): the divergence from the background model itself.
        self._from_background = sum(
            p * math.log(p / self.background[t]) for t, p in self.probabilities.items())

    def __bool__(self) -> bool:
        return bool(self.probabilities)

    def _floor_weight(self, length: int) -> float:
        """The factor w with p0(t) = w · p_bg(t) for a term absent from the candidate."""
        if self.smoothing.method == "dirichlet":
            return self.smoothing.mu / (length + self.smoothing.mu)
        return self.smoothing.lam

    def null_divergence(self, length: int) -> float:
        """KLD to a candidate of this length that shares no term with the reference."""
        if not self.probabilities:
            return 0.0
        return self._from_background - math.log(self._floor_weight(length))

    def divergence(self, counts: Mapping[str, int], length: int | None = None) -> float:
        """KLD(ref ‖ candidate) in nats; lower is closer."""
        if length is None:
            length = sum(counts.values())
        kld = self.null_divergence(length)
        if not length:
            return kld
        floor = self._floor_weight(length)
        smooth = self.smoothing.probability
        probabilities, background = self.probabilities, self.background
        shared = (t for t in counts if t in probabilities) if len(counts) < len(probabilities) \
            else (t for t in probabilities if counts.get(t))
        for t in shared:
            bg = background[t]
            kld -= probabilities[t] * math.log(smooth(counts[t], length, bg) / (floor * bg))
        return kld

    def similarity(self, counts: Mapping[str, int], length: int | None = None) -> tuple[float, float]:
        """(KLD, 1 − KLD / KLD_null): the divergence and a 0–1 similarity derived from it.

        KLD_null is the divergence to a page of the same length sharing no term, so 0 means
        "no better than an unrelated page" and values near 1 mean the same distribution.
        """
        if length is None:
            length = sum(counts.values())
        kld = self.divergence(counts, length)
        null = self.null_divergence(length)
        if null <= 0:
            return kld, 0.0
        return kld, max(0.0, min(1.0, 1.0 - kld / null))


def kl_divergence(reference: Mapping[str, int], candidate: Mapping[str, int],
                  background: TermProbability, smoothing: Smoothing = Smoothing()) -> float:
    """KLD between the ML model of `reference` and the smoothed model of `candidate`."""
    return ReferenceModel(reference, background, smoothing).divergence(candidate)


# ---------------------------------------------------------------- sets and shingles


def dice(a: Iterable[str], b: Iterable[str]) -> float:
    """Dice coefficient 2|A∩B| / (|A|+|B|) of two term sets; 0 when both are empty."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 0.0
    return 2 * len(sa & sb) / (len(sa) + len(sb))


def jaccard(a: Iterable[object], b: Iterable[object]) -> float:
    """|A∩B| / |A∪B|; 0 when both are empty."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def overlap(a: Iterable[object], b: Iterable[object]) -> float:
    """Overlap coefficient |A∩B| / min(|A|, |B|); 0 when either is empty."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def shingle_set(tokens: Sequence[str], width: int = SHINGLE_WIDTH) -> frozenset[tuple[str, ...]]:
    """Contiguous `width`-term shingles; a text shorter than `width` is one shingle."""
    if not tokens:
        return frozenset()
    if len(tokens) < width:
        return frozenset({tuple(tokens)})
    return frozenset(zip(*(tokens[i:] for i in range(width)), strict=False))


def resemblance(a: frozenset[tuple[str, ...]] | set, b: frozenset[tuple[str, ...]] | set) -> float:
    """Broder's resemblance: Jaccard of shingle sets."""
    return jaccard(a, b)


def shingle_resemblance(a: str, b: str, lang: str = "en", width: int = SHINGLE_WIDTH) -> float:
    return resemblance(shingle_set(terms(a, lang), width), shingle_set(terms(b, lang), width))


# ---------------------------------------------------------------- titles

# Separators between a page's own title and the site's name ("Story | The Site").
_TITLE_SEPARATORS = re.compile(r"\s+[|\-–—·»:]{1,2}\s+|\s*\|\s*|\s+::\s+")
_COMPACT = re.compile(r"[\W_]+")


def _compact(text: str) -> str:
    return _COMPACT.sub("", text.lower())


def _is_site_segment(segment: str, site_name: str, url: str) -> bool:
    compact = _compact(segment)
    if not compact:
        return True
    if site_name and compact == _compact(site_name):
        return True
    host = host_of(url) if url else ""
    if not host:
        return False
    labels = [label for label in site_of(url).split(".")[:-1] if len(label) >= 3]
    host_compact = _compact(host)
    # "The Guardian" for theguardian.com, "Example News" for example-news.com.
    return (len(compact) >= 4 and compact in host_compact) or any(
        _compact(label) == compact or (len(label) >= 5 and _compact(label) in compact
                                       and len(compact) <= len(_compact(label)) + 6)
        for label in labels
    )


def clean_title(title: str, site_name: str = "", url: str = "") -> str:
    """The title without a leading or trailing site-name segment ("Story | Site" → "Story")."""
    title = " ".join((title or "")[:MAX_TITLE_CHARS].split())
    segments = [s for s in _TITLE_SEPARATORS.split(title) if s.strip()]
    while len(segments) > 1 and _is_site_segment(segments[-1], site_name, url):
        segments.pop()
    while len(segments) > 1 and _is_site_segment(segments[0], site_name, url):
        segments.pop(0)
    return " ".join(segments).strip() if segments else title


def title_terms(title: str, lang: str = "en") -> list[str]:
    """Content terms of a title, or all its tokens when it has only stop words ("About us")."""
    tokens = fast_tokens(title, lang)
    return content_filter(tokens, lang) or tokens


def compare_titles(clean_a: str, terms_a: Iterable[str], clean_b: str, terms_b: Iterable[str]) -> float:
    """Title similarity of two cleaned titles and their terms (see title_similarity)."""
    if not clean_a or not clean_b:
        return 0.0
    if clean_a.casefold() == clean_b.casefold():
        return 1.0
    return dice(terms_a, terms_b)


def title_similarity(a: str, b: str, *, lang: str = "en", site_a: str = "", url_a: str = "",
                     site_b: str = "", url_b: str = "") -> float:
    """1.0 for the same title (site suffixes ignored), else Dice of the title terms."""
    ca, cb = clean_title(a, site_a, url_a), clean_title(b, site_b, url_b)
    return compare_titles(ca, title_terms(ca, lang), cb, title_terms(cb, lang))


# ---------------------------------------------------------------- URLs

# Tokens that say nothing about what a page is.
URL_STOP = frozenset({
    "html", "htm", "shtml", "php", "asp", "aspx", "jsp", "cgi", "cfm", "pl", "index", "default",
    "www", "http", "https",
})


def url_tokens(url: str) -> list[str]:
    """Tokens of a URL's path and query (tools.content.uritokens), split at letter/digit boundaries
    too, numbers without leading zeros ('pep-0008' → pep, 8)."""
    return [(token.lstrip("0") or "0") if token.isdigit() else token
            for token in path_tokens(url, split_digits=True) if token not in URL_STOP]


def slug_tokens(url: str) -> list[str]:
    """Word tokens of the last path segment that has any, extension and numbers dropped."""
    return slug_words(url, URL_STOP)


# ---------------------------------------------------------------- URL names (slug runs)

MAX_NAME_TOKENS = 40  # a longer name is noise (a tracking blob); its head names the page
Name = tuple[str, ...]


def _name_tokens(chunk: str) -> Name:
    """Word tokens of one place a URL can carry a name (file extension dropped, numbers
    without leading zeros, URL_STOP words out)."""
    tokens = word_tokens(FILE_EXTENSION.sub("", chunk), split_digits=True)
    return tuple((t.lstrip("0") or "0") if t.isdigit() else t
                 for t in tokens if t not in URL_STOP)[:MAX_NAME_TOKENS]


def url_carriers(url: str) -> tuple[tuple[Name, bool], ...]:
    """Every place a URL carries words, in order: each path segment and each query value
    (path parameters such as `;id=` stay inside their segment), as (tokens, is_folder); a
    folder is a path segment before the last one that has any tokens."""
    try:
        parts = urlsplit(url[: MAX_URI_CHARS * 4])
        values = [value for _key, value in parse_qsl(parts.query)]
    except ValueError:
        return ()
    names = [_name_tokens(segment) for segment in unquote(parts.path).split("/") if segment]
    last = max((i for i, name in enumerate(names) if name), default=-1)
    carriers = [(name, i < last) for i, name in enumerate(names) if name]
    carriers += [(name, False) for name in map(_name_tokens, values) if name]
    return tuple(carriers)


def _letters(tokens: Iterable[str]) -> int:
    return sum(len(t) for t in tokens if not t.isdigit())


def url_name(url: str) -> Name:
    """The words that name the page in a URL: of its last path segment and its query values,
    the one with the most letters (the slug, or a slug kept in a query)."""
    return _name_of(url_carriers(url))


def _name_of(carriers: Iterable[tuple[Name, bool]]) -> Name:
    return max((name for name, folder in carriers if not folder), key=_letters, default=())


def _cut_of(word: str, whole: str) -> bool:
    """`word` is `whole` cut short by a truncation ('volker' of 'volkers')."""
    return len(word) >= policy.MIN_CUT_WORD and len(word) < len(whole) and whole.startswith(word)


def longest_run(a: Sequence[str], b: Sequence[str]) -> tuple[int, int, int]:
    """(length, end in a, end in b) of the longest run of consecutive tokens `a` and `b`
    share; a run may end on a word either side cut short at its very end (a truncated
    slug: 'kurt-volker' of 'kurt-volkers-and-tim')."""
    best = (0, 0, 0)
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            x, y = a[i - 1], b[j - 1]
            if x == y or (j == len(b) and _cut_of(y, x)) or (i == len(a) and _cut_of(x, y)):
                current[j] = previous[j - 1] + 1
                if current[j] > best[0]:
                    best = (current[j], i, j)
        previous = current
    return best


def name_match(name: Sequence[str], carrier: Sequence[str]) -> tuple[float, int]:
    """How much of the dead URL's `name` one place of a candidate URL carries, 0–1, and the
    run's length: the longest run of consecutive tokens they share over the name's length,
    numbers dropped on both sides when the name's words alone spell a name
    (policy.SLUG_NAME_LETTERS). A carrier that is the name's leading run, cut there (a
    truncated slug), of policy.MIN_TRUNCATED_RUN tokens or more counts as the whole name.
    No shape is named: where the words sit (folder, file, query value, behind an id) is
    left to the caller."""
    if _letters(name) >= policy.SLUG_NAME_LETTERS:
        name = [t for t in name if not t.isdigit()]
        carrier = [t for t in carrier if not t.isdigit()]
    if not name or not carrier or not set(name) & set(carrier):
        return 0.0, 0
    run, end_name, end_carrier = longest_run(name, carrier)
    truncated = (run == end_carrier == len(carrier) and end_name == run
                 and run >= policy.MIN_TRUNCATED_RUN)
    return (1.0 if truncated else run / len(name)), run


def slug_match(name: Sequence[str], carriers: Iterable[tuple[Name, bool]]) -> tuple[float, int]:
    """The best `name_match` of the dead URL's name over a candidate URL's carriers
    (`url_carriers`) other than its folders: a page under a folder named like the dead page
    is a part or a child of it, not the page.
    /a/my-story ≈ /a/index.php?p=15691-my-story ≈ /81406-my-story/ ≈ /archive/my-story.html."""
    best = (0.0, 0)
    for carrier, folder in carriers:
        if not folder:
            best = max(best, name_match(name, carrier))
    return best


@dataclass(frozen=True)
class UrlSimilarity:
    jaccard: float  # of path tokens
    same_site: bool  # host equal up to a leading www.
    # overlap coefficient of the last path segments' words, or the dead URL's name found
    # wherever the candidate URL carries it (`slug_match`), whichever is higher
    slug_overlap: float
    slug_run: int = 0  # consecutive name tokens shared (`slug_match`)

    @property
    def score(self) -> float:
        """One 0–1 number: path-token Jaccard and slug overlap, equally weighted."""
        return 0.5 * self.jaccard + 0.5 * self.slug_overlap


@dataclass(frozen=True)
class UrlFeatures:
    """What URL similarity needs from one URL (precomputed for the dead URL)."""

    site: str
    tokens: frozenset[str]
    slug: frozenset[str]
    name: Name = ()  # url_name
    carriers: tuple[tuple[Name, bool], ...] = ()  # url_carriers

    @classmethod
    def of(cls, url: str) -> UrlFeatures:
        carriers = url_carriers(url)
        return cls(site_of(url), frozenset(url_tokens(url)), frozenset(slug_tokens(url)),
                   _name_of(carriers), carriers)


def compare_urls(a: UrlFeatures, b: UrlFeatures) -> UrlSimilarity:
    """`a` is the dead URL's (its name is looked for in `b`'s carriers)."""
    run_score, run = slug_match(a.name, b.carriers)
    return UrlSimilarity(
        jaccard=jaccard(a.tokens, b.tokens),
        same_site=bool(a.site) and a.site == b.site,
        slug_overlap=max(overlap(a.slug, b.slug), run_score),
        slug_run=run,
    )


def url_similarity(a: str, b: str) -> UrlSimilarity:
    """Path-token Jaccard, same-site flag and slug overlap of two URLs."""
    return compare_urls(UrlFeatures.of(a), UrlFeatures.of(b))
