"""Rank candidate pages for a dead link, and say what each one is (pure: no network, no store).

Inputs are the reference evidence (`Reference`: the archived copy when there is one, the
anchor text, context terms, the dead URL, past picks) and the fetched candidates
(`CandidateEvidence`: URL, parsed page, which queries found it at what rank). Every component
score is reported in `Scores`; they are combined into one `final` score with the weights in
`policy.COMPONENT_WEIGHTS` (the one place to tune them, beside every other threshold), and `decide` turns scores into a kind and a calibrated
confidence.

The method follows Martinez-Romo & Araujo (seed 000, §8 and Fig. 8): with a cached copy,
rank by KLD between the candidate's and the copy's language models (cosine ≥ 0.9 to the copy
means the same page); without one, by Dice between the anchor text and the candidate's title,
helped by the link's context and URL terms. Klein & Nelson (seed 003) add titles — stable
across a page's life — and reciprocal-rank fusion pools the votes of many queries.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pagetrail.tools import policy
from pagetrail.tools.content.document import title_says_error
from pagetrail.tools.content.similarity import (
    ReferenceModel,
    Smoothing,
    TermProbability,
    TextProfile,
    UrlFeatures,
    clean_title,
    compare_titles,
    compare_urls,
    content_filter,
    cosine,
    dice,
    fast_tokens,
    norm,
    profile_text,
    resemblance,
    slug_tokens,
    terms,
    tf_vector,
    title_terms,
    wordfreq_background,
)
from pagetrail.tools.content.text import guess_language
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.models import Candidate, Document, Kind, Query, Scores
from pagetrail.tools.net.urls import normalize_url, site_of
from pagetrail.tools.ranking import textref
from pagetrail.tools.ranking.after import AfterFactors
from pagetrail.tools.ranking.offshoots import cut_short, grown_out

SHIPPED_FACTORS = AfterFactors()  # what is weighed after the calibration (policy values)

# The component weights, the source weights and every threshold of the scoring are
# tools/policy.py's (COMPONENT_WEIGHTS, SOURCE_WEIGHTS, MOVED_*, …); the features the
# calibration weighs are FEATURES below.

# Junk that is dropped from the ranking (the site root is only penalised: it may be all
# that is left of a site, and a person may still want it, at low confidence).
DROPPED_JUNK = frozenset({"dead_url", "error_page", "parked", "archive_copy"})

# Phrases of not-found and parking pages (lower case; plain substring tests are fast).
NOT_FOUND_PHRASES = (
    "page not found", "not found", "no longer available", "no longer exists", "does not exist",
    "doesn't exist", "could not be found", "cannot be found", "can't be found", "couldn't find",
    "nicht gefunden", "existiert nicht", "nicht mehr verfügbar", "introuvable", "n'existe pas",
    "no encontrada", "no encontrado", "no existe", "non trovata", "non trovato", "non esiste",
    "nie istnieje", "nie znaleziono", "niet gevonden", "bestaat niet", "não encontrada",
    "não encontrado", "não existe",
)
PARKED_PHRASES = (
    "domain is for sale", "domain for sale", "buy this domain", "domain may be for sale",
    "domain name is for sale", "domain parking", "parked free", "parked domain",
)
_ERROR_CODE = re.compile(r"\b404\b")


def _says(text: str, phrases: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(phrase in lowered for phrase in phrases)


_ROOT_PATH = re.compile(r"^/?(?:(?:index|default|home|start)(?:\.\w{2,5})?|[a-z]{2}(?:[-_][a-z]{2})?)?/?$",
                        re.IGNORECASE)
_ARCHIVE_REPLAY = re.compile(r"/web/\d{8,14}[a-z_]*/", re.IGNORECASE)
_ARCHIVE_HOSTS = ("web.archive.org", "archive.org", "archive.today", "archive.ph", "archive.is")

# ---------------------------------------------------------------- inputs


@dataclass
class CandidateEvidence:
    """A candidate page: its URL, its parsed page (None if it could not be fetched), and one
    (method, engine, rank) tuple per query that returned it. `title`/`snippet` come from the
    search hit and stand in for the page when it was not fetched."""

    url: str
    document: Document | None = None
    hits: list[tuple[str, str, int]] = field(default_factory=list)
    title: str = ""
    snippet: str = ""
    # How much the page is a list of links to other pages (0–1, `policy.listing_degree`):
    # set by whoever read the page's links; 0 when unknown.
    listing: float = 0.0
    # The page links to the dead URL itself (a roundup quoting the link, the linking page, a
    # moved page naming its old address): set by whoever read the page's links.
    cites_dead: bool = False

    @property
    def answer_url(self) -> str:
        """Where the page is: the fetched page's final URL when known, else the URL found."""
        if self.document is not None and self.document.url.startswith(("http://", "https://")):
            return self.document.url
        return self.url

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(method for method, _engine, _rank in self.hits))


def evidence_from_queries(queries: Iterable[Query]) -> list[CandidateEvidence]:
    """Group the hits of many queries by (normalised) URL, keeping first-seen order."""
    by_url: dict[str, CandidateEvidence] = {}
    for query in queries:
        for position, hit in enumerate(query.hits, start=1):
            key = normalize_url(hit.url)
            evidence = by_url.setdefault(key, CandidateEvidence(url=hit.url))
            evidence.hits.append((query.method, query.engine or hit.engine, hit.rank or position))
            evidence.title = evidence.title or hit.title
            evidence.snippet = evidence.snippet or hit.snippet
    return list(by_url.values())


@dataclass(eq=False)
class Reference:
    """What we know about the page the dead link pointed to.

    `picks` and `rule_support` map (normalised) URLs to 0–1 evidence from the store: a person
    picked that URL for this dead link before; the site's inferred rewrite rule predicts it.
    The derived `profile` is computed once, on first use: do not mutate a Reference after
    ranking with it.
    """

    dead_url: str = ""
    memento: Document | None = None
    memento_date: datetime | None = None
    anchor: str = ""
    anchor_usable: bool = True  # Fig. 8: a one-common-word anchor is decided upstream
    context_terms: list[str] = field(default_factory=list)
    linking_terms: list[str] = field(default_factory=list)
    picks: Mapping[str, float] = field(default_factory=dict)
    rule_support: Mapping[str, float] = field(default_factory=dict)
    lang: str = ""
    smoothing: Smoothing = field(default_factory=Smoothing)
    background: TermProbability | None = None  # default: wordfreq frequencies of `lang`

    @classmethod
    def from_text(cls, text: str, *, title: str = "", dead_url: str = "", lang: str = "",
                  **fields: object) -> Reference:
        """A reference from plain text (what the page said), e.g. for the MCP primitive."""
        document = Document(url=dead_url, title=title, text=text or "")
        return cls(dead_url=dead_url, memento=document, lang=lang, **fields)  # type: ignore[arg-type]

    @property
    def has_memento(self) -> bool:
        """True when the archived copy has enough text to judge content similarity."""
        return self.profile.content is not None

    @cached_property
    def profile(self) -> ReferenceProfile:
        return ReferenceProfile.build(self)


@dataclass
class ReferenceProfile:
    """Reference-side vectors and term sets, computed once per ranking."""

    lang: str
    content: TextProfile | None
    vector: dict[str, float]
    vector_norm: float
    model: ReferenceModel | None
    title: str  # the archived copy's title without its site-name segment
    title_terms: frozenset[str]
    url: UrlFeatures | None
    anchor_terms: frozenset[str]
    context_weights: dict[str, float]
    dead_url: str
    dead_key: str  # the dead URL up to case, default port and fragment
    dead_is_deep: bool  # not a site root: then a site root is no answer for it
    picks: dict[str, float]
    rules: dict[str, float]

    @classmethod
    def build(cls, ref: Reference) -> ReferenceProfile:
        memento = ref.memento
        if memento is not None and error_page_reason(memento):
            memento = None  # an archived error page says nothing about the lost page
        lang = (ref.lang or (memento.lang if memento else "") or "").split("-")[0].lower()
        if not lang:
            sample = (memento.text if memento else "") or " ".join([ref.anchor, *ref.context_terms])
            lang = guess_language(sample[:5000])
        content: TextProfile | None = None
        model: ReferenceModel | None = None
        vector: dict[str, float] = {}
        if memento is not None:
            profile = profile_text(memento.text or memento.description, lang)
            if profile.length >= policy.MIN_CONTENT_TERMS:
                content = profile
                vector = tf_vector(profile.counts)
                model = ReferenceModel(profile.counts, ref.background or wordfreq_background(lang),
                                       ref.smoothing)
        anchor_terms = frozenset(content_filter(fast_tokens(ref.anchor, lang), lang)
                                 if ref.anchor_usable else ())
        weights: dict[str, float] = {}
        sources = (
            ("linking", ref.linking_terms[:policy.MAX_LINKING_TERMS]),
            ("url", slug_tokens(ref.dead_url) if ref.dead_url else []),
            ("context", ref.context_terms),
            ("anchor", anchor_terms),
        )
        for source, words in sources:  # later (stronger) sources overwrite weaker ones
            for word in words:
                weights[word.lower()] = max(weights.get(word.lower(), 0.0),
                                            policy.SOURCE_WEIGHTS["context_similarity"][source])
        title = clean_title(memento.title, memento.site_name, ref.dead_url or memento.url) \
            if memento else ""
        return cls(
            lang=lang, content=content, vector=vector, vector_norm=norm(vector), model=model,
            title=title, title_terms=frozenset(title_terms(title, lang)),
            url=UrlFeatures.of(ref.dead_url) if ref.dead_url else None,
            anchor_terms=anchor_terms, context_weights=weights, dead_url=ref.dead_url,
            dead_key=exact_url_key(ref.dead_url) if ref.dead_url else "",
            dead_is_deep=bool(ref.dead_url) and not _is_root_path(ref.dead_url),
            picks={normalize_url(u): v for u, v in ref.picks.items()},
            rules={normalize_url(u): v for u, v in ref.rule_support.items()},
        )

    def available(self) -> set[str]:
        """Components this reference can support (see policy.COMPONENT_WEIGHTS)."""
        out = {"fusion", "pick", "rule_support"}
        if self.content is not None:
            out |= {"content_lm", "content_cosine", "content_resemblance"}
        if self.title:
            out.add("title_similarity")
        if self.anchor_terms:
            out.add("anchor_dice")
        if self.context_weights:
            out.add("context_similarity")
        if self.dead_url:
            out |= {"url_similarity", "same_site"}
        return out


# ---------------------------------------------------------------- junk


def _is_root_path(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return not parts.query and bool(_ROOT_PATH.match(parts.path or "/"))


def is_junk_candidate(dead_url: str, candidate_url: str, document: Document | None = None) -> str | None:
    """Why a candidate cannot be the answer, or None.

    "dead_url" (the dead page itself, maybe via a redirect), "archive_copy" (an archive's
    replay, not a live page), "site_root" (the home page offered for a deep link: what a soft
    404 redirects to), "error_page" (a not-found page served with 200), "parked" (a parking
    page).
    """
    return _junk_reason(
        exact_url_key(dead_url) if dead_url else "", bool(dead_url) and not _is_root_path(dead_url),
        candidate_url, document)


def exact_url_key(url: str) -> str:
    """The URL itself up to case, default port and fragment. Unlike normalize_url it keeps
    the scheme and www.: when http://x.org/a is dead, https://www.x.org/a is a real answer."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    netloc = host if port in (None, {"http": 80, "https": 443}.get(scheme)) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path or '/'}{'?' + parts.query if parts.query else ''}"


def twin_key(url: str) -> str:
    """The URL up to what does not name another resource on most servers — scheme, a
    leading www., percent-escaping, letter case, a trailing slash: a candidate with the dead
    URL's twin key is the dead URL written otherwise (docs/evaluation.md, proposal 2), to be
    checked (fetched first), never ranked on its URL alone."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip().lower()
    host = (parts.hostname or "").lower().rstrip(".").removeprefix("www.")
    path = unquote(parts.path).rstrip("/").lower()
    query = unquote(parts.query).lower()
    return f"{host}{path}{'?' + query if query else ''}"


def error_page_reason(document: Document) -> str | None:
    """"error_page" or "parked" when a page (candidate or archived copy) is not content."""
    title = document.title or ""
    if title_says_error(title) or _says(title, NOT_FOUND_PHRASES):
        return "error_page"
    # Error and parking pages are short; a long article may well say "not found".
    if len(document.text) < policy.SHORT_PAGE_CHARS:
        page = f"{title} {document.text}"
        if _says(page, PARKED_PHRASES):
            return "parked"
        # The title was judged above: a code in it is a name's number unless it stands alone.
        if _ERROR_CODE.search(document.text) or _says(page, NOT_FOUND_PHRASES):
            return "error_page"
    return None


def _junk_reason(dead_key: str, dead_is_deep: bool, candidate_url: str,
                 document: Document | None) -> str | None:
    final_url = document.url if document is not None and document.url else candidate_url
    urls = {candidate_url, final_url}
    if dead_key and any(exact_url_key(u) == dead_key for u in urls):
        return "dead_url"
    if dead_key and document is None and twin_key(candidate_url) == twin_key(dead_key):
        # The dead URL written otherwise and never read: its URL likeness is the dead URL's.
        return "dead_url"
    for url in urls:
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        host = (parts.hostname or "").lower()
        if _ARCHIVE_REPLAY.search(parts.path + "/") and (
                host.endswith(_ARCHIVE_HOSTS) or "archive" in host):
            return "archive_copy"
    if dead_is_deep and any(_is_root_path(u) for u in urls):
        return "site_root"
    return error_page_reason(document) if document is not None else None


# ---------------------------------------------------------------- scoring


def reciprocal_rank_fusion(ranks: Iterable[int], k: int = policy.RRF_K) -> float:
    """Σ 1/(k + rank) over the ranks (1-based) at which queries returned the candidate."""
    return sum(1.0 / (k + max(1, rank)) for rank in ranks)


def fusion_strength(rrf: float, k: int = policy.RRF_K) -> float:
    """RRF mapped to 0–1: one query's top hit gives 0.63, two give 0.86."""
    return 1.0 - math.exp(-rrf * (k + 1))


def _component(scores: Scores, name: str) -> float:
    if name == "fusion":
        return fusion_strength(scores.rrf)
    value = getattr(scores, name)
    return 0.0 if value is None else float(value)


def combine(scores: Scores, available: Iterable[str], has_memento: bool) -> float:
    """The final score: weighted mean of the available components
    (policy.COMPONENT_WEIGHTS), junk penalised."""
    table = policy.COMPONENT_WEIGHTS["memento" if has_memento else "no_memento"]
    used = [name for name in available if name in table]
    total = sum(table[name] for name in used)
    value = sum(table[name] * _component(scores, name) for name in used) / total if total else 0.0
    if scores.junk == "site_root":
        value *= policy.SITE_ROOT_PENALTY
    elif scores.junk:
        value = 0.0
    return value


def _context_similarity(weights: Mapping[str, float], vocabulary: set[str] | frozenset[str]) -> float:
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in vocabulary) / total if total else 0.0


def body_profile(reference: Reference, candidate: CandidateEvidence) -> TextProfile:
    """The candidate's text (its page's main text, else its search snippet) as the ranking
    compares it: shingled only when there is an archived copy to compare them with."""
    document = candidate.document
    body = document.text if document is not None else candidate.snippet
    return profile_text(body, reference.profile.lang,
                        width=4 if reference.profile.content is not None else 0)


def score_candidate(reference: Reference, candidate: CandidateEvidence, *,
                    profile: TextProfile | None = None) -> Scores:
    """Every component score of one candidate against the reference (see `Scores`);
    `profile`: its `body_profile` when the caller has it already."""
    ref = reference.profile
    document = candidate.document
    url = candidate.answer_url
    title = (document.title if document is not None and document.title else candidate.title)
    scores = Scores()

    profile = profile if profile is not None else body_profile(reference, candidate)
    if ref.content is not None and document is not None and ref.model is not None:
        scores.content_cosine = cosine(ref.vector, profile.counts, norm_a=ref.vector_norm)
        scores.content_kld, scores.content_lm = ref.model.similarity(profile.counts, profile.length)
        scores.content_resemblance = resemblance(ref.content.shingles, profile.shingles)
    clean = clean_title(title, document.site_name if document is not None else "", url)
    candidate_title_terms = title_terms(clean, ref.lang)
    if ref.title:
        scores.title_similarity = compare_titles(ref.title, ref.title_terms, clean,
                                                 candidate_title_terms)
    if ref.anchor_terms:
        scores.anchor_dice = dice(ref.anchor_terms, candidate_title_terms)
    candidate_url = UrlFeatures.of(url)
    if ref.context_weights:
        vocabulary = set(profile.counts) | set(candidate_title_terms) | candidate_url.slug
        scores.context_similarity = _context_similarity(ref.context_weights, vocabulary)
    if ref.url is not None:
        similarity = compare_urls(ref.url, candidate_url)
        scores.url_similarity, scores.same_site = similarity.score, similarity.same_site
    ranks = [rank for _method, _engine, rank in candidate.hits]
    scores.query_votes = len(ranks)
    scores.best_rank = min(ranks) if ranks else None
    scores.rrf = reciprocal_rank_fusion(ranks)
    keys = {normalize_url(candidate.url), normalize_url(url)}
    scores.pick = max((ref.picks.get(k, 0.0) for k in keys), default=0.0)
    scores.rule_support = max((ref.rules.get(k, 0.0) for k in keys), default=0.0)
    # FABLE's first method: the archive saw the dead URL redirect here before it died.
    scores.redirect = float(any(method == "REDIRECT" for method, _e, _r in candidate.hits))
    scores.junk = _junk_reason(ref.dead_key, ref.dead_is_deep, candidate.url, document) or ""
    scores.final = combine(scores, ref.available(), ref.content is not None)
    return scores


# ---------------------------------------------------------------- kind and confidence

CANDIDATE_FEATURES: tuple[str, ...] = (
    "final", "moved", "has_memento", "content_cosine", "content_lm", "content_resemblance",
    "title_similarity", "anchor_dice", "context_similarity", "url_similarity", "same_site",
    "fusion", "pick", "rule_support", "redirect",
)
# Features of a candidate relative to the other candidates of the same ranking (see
# `ranking_features`): a look-alike URL on the dead site should not outrank a page whose
# content matches the archived copy clearly better. Chosen over a content share (c / best)
# and a signed margin by 5- and 10-fold cross-validation on dev + dev2 (bench/calibrate.py).
RANKING_FEATURES: tuple[str, ...] = ("content_lead",)
FEATURES: tuple[str, ...] = CANDIDATE_FEATURES + RANKING_FEATURES


def is_moved(scores: Scores, has_memento: bool) -> bool:
    """Same page at a new URL.

    With an archived copy to compare: ≥ 0.9 cosine to it (Martinez-Romo & Araujo's validity
    threshold) and a title that still says the same thing — a listing or tag page quoting
    the article can reach the cosine too. Without one (or when the candidate's page could
    not be read): the same title on the same site
    (titles outlive content changes, Klein & Nelson §4), or the site's own rewrite rule.
    """
    if scores.junk:
        return False
    if scores.redirect and scores.same_site:
        return True  # the site itself said where the page went (an archived redirect)
    title = scores.title_similarity
    if has_memento and scores.content_cosine is not None:
        return (scores.content_cosine or 0.0) >= policy.MOVED_COSINE and (
            title is None or title >= policy.MOVED_TITLE)
    if scores.same_site and (title or 0.0) >= policy.TITLE_IDENTICAL:
        return True
    return scores.same_site and scores.rule_support >= policy.MOVED_RULE_SUPPORT


def features(scores: Scores, has_memento: bool, moved: bool | None = None) -> dict[str, float]:
    """The calibration features of a candidate (FEATURES, all 0–1; None counts 0)."""
    if moved is None:
        moved = is_moved(scores, has_memento)
    out = {name: _component(scores, name) for name in CANDIDATE_FEATURES
           if name not in ("moved", "has_memento", "same_site")}
    out["moved"] = float(moved)
    out["has_memento"] = float(has_memento)
    out["same_site"] = float(scores.same_site)
    return {name: out[name] for name in CANDIDATE_FEATURES}


def ranking_features(rows: Sequence[Mapping[str, float]]) -> list[dict[str, float]]:
    """The candidate features of one ranking's candidates (`features`), each completed with
    RANKING_FEATURES, which compare it with the others:

    - content_lead: by how much its content similarity to the archived copy (mean of cosine
      and LM similarity) exceeds the best of the other candidates, 0–1; 0 when it is not the
      best, or without a copy. A ranking of one leads by its whole similarity.
    """
    def content(row: Mapping[str, float]) -> float:
        return (row.get("content_cosine", 0.0) + row.get("content_lm", 0.0)) / 2

    similarity = [content(row) for row in rows]
    # the best is compared with the runner-up (a tie leads by 0), the rest with the best
    ordered = sorted(similarity, reverse=True)
    first, second = (ordered[0], ordered[1]) if len(ordered) > 1 else (0.0, 0.0)
    out: list[dict[str, float]] = []
    for row, mine in zip(rows, similarity, strict=True):
        best_other = second if mine == first else first
        out.append({**{name: row.get(name, 0.0) for name in CANDIDATE_FEATURES},
                    "content_lead": max(0.0, mine - best_other)})
    return out


@dataclass
class Calibration:
    """Confidence = logistic(intercept + Σ coefficient · feature). Stored as plain JSON."""

    intercept: float
    coefficients: dict[str, float]

    def confidence(self, values: Mapping[str, float]) -> float:
        z = self.intercept + sum(c * values.get(name, 0.0) for name, c in self.coefficients.items())
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> str:
        return json.dumps({"format": 1, "intercept": self.intercept,
                           "coefficients": self.coefficients}, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        try:
            data = json.loads(text)
            intercept = float(data["intercept"])
            coefficients = {str(k): float(v) for k, v in dict(data["coefficients"]).items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"invalid calibration: {exc}") from exc
        unknown = sorted(set(coefficients) - set(FEATURES))
        if unknown:
            raise ConfigError(f"calibration names unknown features: {', '.join(unknown)}")
        return cls(intercept, coefficients)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        try:
            return cls.from_json(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read calibration {path}: {exc}") from exc


# Until fitted on a world: policy.HAND_SET_CALIBRATION.
DEFAULT_CALIBRATION = Calibration(
    intercept=float(policy.HAND_SET_CALIBRATION["intercept"]),
    coefficients=dict(policy.HAND_SET_CALIBRATION["coefficients"]))


# Where the calibration tooling writes the fitted values (policy.FITTED_FILE, package data).
CALIBRATION_FILE = policy.FITTED_FILE


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The fitted calibration (`policy.fitted`), else the hand-set default."""
    try:
        data = policy.fitted()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read calibration {policy.FITTED_FILE}: {exc}") from exc
    return DEFAULT_CALIBRATION if data is None else Calibration.from_json(json.dumps(data))


def fit_calibration(samples: Sequence[tuple[Mapping[str, float] | Scores, bool]], *,
                    regularization: float = 1.0,
                    names: Sequence[str] = FEATURES) -> Calibration:
    """Fit the confidence on judged candidates: (features or Scores, is_correct) pairs.

    Scores are turned into features with `features(scores, has_memento)`, where the archived
    copy is taken to exist when a content score was computed. `names`: the features fitted
    (tooling may try others; `Calibration.from_json` only loads FEATURES).
    """
    from sklearn.linear_model import LogisticRegression  # heavy import, only when fitting

    rows: list[list[float]] = []
    labels: list[int] = []
    for sample, correct in samples:
        values = (features(sample, has_memento=sample.content_cosine is not None)
                  if isinstance(sample, Scores) else sample)
        rows.append([float(values.get(name, 0.0)) for name in names])
        labels.append(int(bool(correct)))
    if len(set(labels)) < 2:
        raise ConfigError("calibration needs both correct and wrong candidates")
    model = LogisticRegression(C=regularization, max_iter=1000)
    model.fit(rows, labels)
    return Calibration(
        intercept=float(model.intercept_[0]),
        coefficients={name: float(c) for name, c in zip(names, model.coef_[0], strict=True)},
    )


def decide(scores: Scores, has_memento: bool, calibration: Calibration | None = None, *,
           values: Mapping[str, float] | None = None) -> tuple[Kind, float]:
    """(kind, confidence): "moved" for the same page (see is_moved), else "replacement".

    `values` are the candidate's features within its ranking (`ranking_features`); without
    them the candidate is judged as the only one of its ranking."""
    moved = is_moved(scores, has_memento)
    if scores.junk in DROPPED_JUNK:
        return "replacement", 0.0
    if values is None:
        values = ranking_features([features(scores, has_memento, moved)])[0]
    confidence = (calibration or default_calibration()).confidence(values)
    if not scores.junk:
        confidence = max(confidence, direct_evidence_floor(scores))
    return ("moved" if moved else "replacement"), round(confidence, 4)


def direct_evidence_floor(scores: Scores) -> float:
    """Evidence that a development world rarely holds, so a fitted calibration cannot weigh
    it — a person's pick, the site's own archived redirect, the site's inferred rewrite
    rule —: each sets a floor (`policy.*_FLOOR`) under a live, non-junk candidate's
    confidence."""
    floor = 0.0
    if scores.pick:
        floor = max(floor, policy.PICK_FLOOR * scores.pick)
    if scores.redirect and scores.same_site:
        floor = max(floor, policy.REDIRECT_FLOOR)
    if scores.rule_support and scores.same_site:
        floor = max(floor, policy.RULE_FLOOR + policy.RULE_SUPPORT * scores.rule_support)
    return floor


# ---------------------------------------------------------------- explanation and ranking


def _join(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def explain(scores: Scores, methods: Sequence[str], memento_date: datetime | None = None) -> str:
    """One line a person can read, e.g. "same title, 0.96 content match to 2019 archived copy,
    found by TI and LS5". Only numbers and labels: no page text."""
    parts: list[str] = []
    title = scores.title_similarity
    if title is not None and title >= policy.TITLE_IDENTICAL:
        parts.append("same title")
    elif title is not None and title >= policy.EXPLAIN_SIMILAR_TITLE:
        parts.append(f"similar title ({title:.2f})")
    if scores.content_cosine is not None:
        copy = f"{memento_date.year} archived copy" if memento_date else "the archived copy"
        parts.append(f"{scores.content_cosine:.2f} content match to {copy}")
    if scores.anchor_dice is not None and scores.anchor_dice >= policy.TITLE_IDENTICAL:
        parts.append("title matches the anchor text")
    elif scores.anchor_dice is not None and scores.anchor_dice >= policy.EXPLAIN_ANCHOR_WORDS:
        parts.append(f"title shares words with the anchor ({scores.anchor_dice:.2f})")
    if scores.context_similarity is not None and \
            scores.context_similarity >= policy.EXPLAIN_LINK_WORDS:
        parts.append(f"{round(100 * scores.context_similarity)}% of the link's words on the page")
    if scores.same_site:
        parts.append("same site")
    if scores.url_similarity >= policy.EXPLAIN_SIMILAR_URL:
        parts.append(f"similar URL ({scores.url_similarity:.2f})")
    if scores.pick > 0:
        parts.append("picked by a person before")
    if scores.rule_support > 0:
        parts.append("fits the site's URL rewrite pattern")
    if methods:
        parts.append(f"found by {_join(list(methods))}")
    if scores.junk:
        parts.append(f"penalised: {scores.junk.replace('_', ' ')}")
    return ", ".join(parts) or "weak match"


def _merge(candidates: Iterable[CandidateEvidence]) -> list[CandidateEvidence]:
    """One entry per page (normalised final URL): hits pooled, a fetched page preferred."""
    merged: dict[str, CandidateEvidence] = {}
    for candidate in candidates:
        key = normalize_url(candidate.answer_url)
        seen = merged.get(key)
        if seen is None:
            merged[key] = CandidateEvidence(candidate.url, candidate.document, list(candidate.hits),
                                            candidate.title, candidate.snippet, candidate.listing,
                                            candidate.cites_dead)
            continue
        seen.hits.extend(candidate.hits)
        if seen.document is None and candidate.document is not None:
            seen.document = candidate.document
        seen.title = seen.title or candidate.title
        seen.snippet = seen.snippet or candidate.snippet
        seen.listing = max(seen.listing, candidate.listing)
        seen.cites_dead = seen.cites_dead or candidate.cites_dead
    return list(merged.values())


def _offshoot(reference: Reference, evidence: CandidateEvidence, scores: Scores,
              short: Sequence[str]) -> bool:
    """A page grown out of the dead address or out of a live short form of it
    (`offshoots.grown_out`) that no direct evidence (the site's redirect, a person's pick,
    its rewrite rule) names."""
    if not reference.dead_url or scores.junk in DROPPED_JUNK:
        return False
    if scores.redirect or scores.pick or scores.rule_support:
        return False
    return grown_out(reference.dead_url, evidence.answer_url, short)


def text_shortfalls(reference: Reference, candidates: Sequence[CandidateEvidence],
                    profiles: Sequence[TextProfile] | None = None) -> list[float]:
    """How far each candidate's main text is behind the best other's against the link's own
    words (`ranking.textref`); all 0 with an archived copy (content features decide then) or
    when the link gave no words of its own (anchor, context). `profiles`: the candidates'
    `body_profile`s when the caller has them already."""
    ref = reference.profile
    context = [t.lower() for t in reference.context_terms]
    if ref.content is not None or not textref.has_own_words(ref.anchor_terms, context):
        return [0.0] * len(candidates)
    words = textref.link_words(
        anchor=ref.anchor_terms, context=context,
        linking=reference.linking_terms[:policy.MAX_LINKING_TERMS],
        url=slug_tokens(reference.dead_url) if reference.dead_url else (),
        background=reference.background or wordfreq_background(ref.lang))
    if profiles is None:
        profiles = [body_profile(reference, candidate) for candidate in candidates]
    # Only a page that was read has a main text to compare (a snippet is no text).
    vocabularies = [profile.vocabulary
                    if c.document is not None and c.document.text.strip() else None
                    for c, profile in zip(candidates, profiles, strict=True)]
    matches: list[float | None] = []
    for candidate, vocabulary in zip(candidates, vocabularies, strict=True):
        if vocabulary is None:
            matches.append(None)
            continue
        site_name = candidate.document.site_name if candidate.document is not None else ""
        matches.append(textref.text_match(words, vocabulary, frozenset(terms(site_name, ref.lang))))
    # Pages that quote the article rather than being it — a page on another site linking to
    # the dead URL itself (a roundup quoting the link's context), a list of links quoting its
    # headline — are ranked, but never the yardstick for the others. (On the dead URL's own
    # site a link to it is the template's or the moved page's own: no sign of a quote.)
    dead_site = site_of(reference.dead_url) if reference.dead_url else ""
    return textref.shortfalls(matches, [
        not (c.cites_dead and site_of(c.answer_url) != dead_site)
        and c.listing < policy.TEXT_COMPARE_LISTING for c in candidates])


def rank_candidates(reference: Reference, candidates: Iterable[CandidateEvidence], *,
                    calibration: Calibration | None = None, keep_junk: bool = False,
                    limit: int | None = None) -> list[Candidate]:
    """Score, decide and order the candidates by calibrated confidence.

    Junk (the dead URL itself, error and parking pages, archive replays) is dropped unless
    `keep_junk`; then it is listed last with confidence 0. Candidate.url is where the page
    is now (the fetched page's final URL).
    """
    has_memento = reference.has_memento
    merged = _merge(candidates)
    profiles = [body_profile(reference, evidence) for evidence in merged]  # once a ranking
    scored = [(evidence, score_candidate(reference, evidence, profile=profile), profile)
              for evidence, profile in zip(merged, profiles, strict=True)]
    scored = [(e, s, p) for e, s, p in scored if keep_junk or s.junk not in DROPPED_JUNK]
    # Per-ranking features compare a candidate with the others that can be the answer.
    answerable = [i for i, (_e, s, _p) in enumerate(scored) if s.junk not in DROPPED_JUNK]
    rows = ranking_features([features(scored[i][1], has_memento) for i in answerable])
    values_of = dict(zip(answerable, rows, strict=True))
    behind = dict(zip(answerable, text_shortfalls(
        reference, [scored[i][0] for i in answerable], [scored[i][2] for i in answerable]),
        strict=True))
    # The dead address cut short, live among the candidates: offshoots grow out of it too.
    short = cut_short(reference.dead_url, [scored[i][0].answer_url for i in answerable]) \
        if reference.dead_url else []
    ranked: list[tuple[tuple[float, ...], Candidate]] = []
    for i, (evidence, scores, _profile) in enumerate(scored):
        offshoot = _offshoot(reference, evidence, scores, short)
        scores.listing = evidence.listing if scores.junk not in DROPPED_JUNK else 0.0
        scores.offshoot = offshoot
        scores.text_shortfall = behind.get(i, 0.0)
        kind, confidence = decide(scores, has_memento, calibration, values=values_of.get(i))
        explanation = explain(scores, evidence.methods, reference.memento_date)
        # A list of links to other pages only wins when nothing else does; a page grown out
        # of the dead address is another page of the site; a text that says less of what the
        # link said than another candidate's does is weighed down (`ranking.after`).
        confidence = SHIPPED_FACTORS.apply(confidence, scores)
        if scores.listing > 0:
            explanation += f", penalised: a list of links ({scores.listing:.2f})"
        if offshoot:
            explanation += ", penalised: the dead address plus words (another page of the site)"
        if SHIPPED_FACTORS.shortfall_factor(scores.text_shortfall) < 1.0:
            explanation += f", penalised: text behind another page's ({scores.text_shortfall:.2f})"
        title = (evidence.document.title if evidence.document is not None and evidence.document.title
                 else evidence.title)
        candidate = Candidate(
            url=evidence.answer_url, title=" ".join(title.split())[:policy.TITLE_CHARS],
            kind=kind,
            confidence=confidence, scores=scores, methods=evidence.methods,
            evidence=explanation,
        )
        junk_last = 0.0 if scores.junk in DROPPED_JUNK else 1.0
        # The calibrated confidence already weighs "moved" (and everything else): ordering
        # by it alone beat "verified moves first" on the development world (s@1 0.87→0.91,
        # 5-fold cross-validated), since a page quoting the article can look like a move.
        key = (junk_last, confidence, scores.final, scores.rrf)
        ranked.append((key, candidate))
    ranked.sort(key=lambda item: (tuple(-v for v in item[0]), item[1].url))
    result = [candidate for _key, candidate in ranked]
    return result[:limit] if limit is not None else result
