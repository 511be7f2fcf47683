"""A ranking and an answer confidence learned across worlds (pure functions, no I/O but
reading the shipped model file).

One implementation of the candidate's feature vector serves training (`bench/
train_ranking.py`, from `pagetrail eval --features` rows) and inference (`recovery.answer`,
from the ranked `Candidate`s): `candidate_features` reads a candidate *in the hand ranking's
list* — the ranker's component scores, its confidence, place and margin over the next one,
whether an archived copy was found, the methods that found it, and how its address aligns with
the dead one (`url_alignment`). Every feature is generic: no host, word or migration family of
any world is named here.

The model is one small JSON file (`data/answer_model.json`, `AnswerModel`) of two parts:
- the *ranking* model: boosted trees giving each of the hand ranking's first `depth`
  candidates the probability that it is the right page; the candidates are re-ordered by it;
- the *answer* model: a logistic regression over inputs drawn from `answer_features` (the new
  first candidate's features and the first and second ranking log-odds; the shipped model
  reads the two log-odds and the hand ranking's margin and lead of that candidate), calibrated (Platt's sigmoid, stored as points joined linearly) on
  out-of-fold predictions: the probability that the answer is right. The recommend line is
  chosen from that calibration for a stated error rate.
Both are evaluated here in pure Python; the file also holds the training's provenance.
"""

from __future__ import annotations

import functools
import json
import math
import re
import struct
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pagetrail.tools import policy
from pagetrail.tools.errors import ModelMissing
from pagetrail.tools.net.urls import canonical_host, site_of

MODEL_FORMAT = policy.LEARNED_MODEL_FORMAT
DEPTH = policy.LEARNED_DEPTH
LOGIT_CLIP = policy.LEARNED_LOGIT_CLIP
MODEL_FILE = policy.LEARNED_MODEL_FILE

# The pipeline's method labels (`models.Candidate.methods`): how a candidate was found.
METHODS = ("URL", "ANC+", "SITE", "TI", "ANC", "LS7", "LS5", "LINKS", "TA", "ELSEWHERE",
           "INFER", "CDX", "LNLS", "PICK")

_EXTENSION = re.compile(r"\.(?:html?|php\d?|aspx?|jsp|shtml|cfm)$", re.I)
_TOKEN = re.compile(r"[^\W_]+")
_DATE = re.compile(r"^(?:(?:19|20)\d\d(?:[01]\d(?:[0-3]\d)?)?|[0-3]?\d[01]\d(?:19|20)\d\d)$")
_HEX_ID = re.compile(r"^[0-9a-f]{8,}$")


@dataclass(frozen=True)
class Listed:
    """A live candidate as the ranker listed it: what the features are read from."""

    url: str
    confidence: float
    methods: tuple[str, ...] = ()
    scores: Mapping[str, Any] = field(default_factory=dict)
    title: str = ""


def _hand_confidence(confidence: float, scores: Mapping[str, Any]) -> float:
    hand = scores.get("hand_confidence")
    return float(confidence if hand is None else hand)


def listed_from_record(record: Mapping[str, Any]) -> Listed:
    """A `pagetrail eval --features` row (or any mapping with the same keys) as `Listed`, with
    the hand ranking's confidence (an eval run with the learned ranking keeps it in scores)."""
    scores = dict(record.get("scores") or {})
    return Listed(url=str(record["url"]),
                  confidence=_hand_confidence(float(record["confidence"]), scores),
                  methods=tuple(record.get("methods") or ()), scores=scores,
                  title=str(record.get("title") or ""))


def listed_from_candidate(candidate: Any) -> Listed:
    """A `models.Candidate` as `Listed` (its scores as the eval's rows record them)."""
    scores = candidate.scores.model_dump(mode="json")
    return Listed(url=candidate.url,
                  confidence=_hand_confidence(float(candidate.confidence), scores),
                  methods=tuple(candidate.methods), scores=scores, title=candidate.title)


def hand_order(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One case's feature rows in the hand ranking's order (an eval run with the learned
    ranking keeps each row's hand rank in scores), whatever order the eval listed them in."""
    def place(record: Mapping[str, Any]) -> int:
        hand = (record.get("scores") or {}).get("hand_rank")
        return int(record["rank"] if hand is None else hand)
    return sorted(records, key=place)


# ------------------------------------------------------------------ URL alignment


def token_kind(token: str) -> str:
    """'date' (a year, yyyymm[dd], ddmmyyyy), 'id' (digits, a hex hash, letters with
    digits), else 'word'."""
    if _DATE.match(token):
        return "date"
    if any(ch.isdigit() for ch in token) or _HEX_ID.match(token):
        return "id"
    return "word"


def _segments(url: str) -> tuple[list[str], list[str]]:
    """The address's path segments (lower-cased, decoded, extension cut) and its query values."""
    parts = urlsplit(url)
    segments = [_EXTENSION.sub("", unquote(s).lower()) for s in parts.path.split("/") if s]
    values = [unquote(pair.partition("=")[2]).lower() for pair in parts.query.split("&")
              if pair]
    return segments, [v for v in values if v]


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _slug(segments: Sequence[str], values: Sequence[str]) -> list[str]:
    """The page's name: the last segment (or query value) that carries a token."""
    for part in [*reversed(values), *reversed(segments)]:
        tokens = _tokens(part)
        if tokens:
            return tokens
    return []


def _common_in_order(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _kinds(tokens: Sequence[str]) -> dict[str, int]:
    counts = {"word": 0, "id": 0, "date": 0}
    for token in tokens:
        counts[token_kind(token)] += 1
    return counts


def url_alignment(dead_url: str, candidate_url: str) -> dict[str, float]:
    """How the candidate's address aligns with the dead one: the dead slug's words kept in
    order, tokens inserted and cut (words, ids, dates), renamed segments, depth, host, site."""
    dead_segments, dead_values = _segments(dead_url)
    segments, values = _segments(candidate_url)
    dead_tokens = [t for part in [*dead_segments, *dead_values] for t in _tokens(part)]
    tokens = [t for part in [*segments, *values] for t in _tokens(part)]
    dead_slug = _slug(dead_segments, dead_values)
    slug = _slug(segments, values)
    dead_words = [t for t in dead_slug if token_kind(t) == "word"]
    in_order = _common_in_order(dead_slug, tokens)
    words_in_order = _common_in_order(dead_words, tokens)
    kept = set(dead_tokens)
    inserted = [t for t in tokens if t not in kept]
    cut = [t for t in dead_tokens if t not in set(tokens)]
    slug_inserted = [t for t in slug if t not in set(dead_slug)]
    added, removed = _kinds(inserted), _kinds(cut)
    slug_added = _kinds(slug_inserted)
    slug_cut = _kinds([t for t in dead_slug if t not in set(tokens)])
    dead_set = set(dead_segments)
    renamed = sum(1 for s in segments if s not in dead_set)
    dead_host = canonical_host(urlsplit(dead_url).hostname or "")
    host = canonical_host(urlsplit(candidate_url).hostname or "")
    return {
        "url_slug_in_order": in_order / len(dead_slug) if dead_slug else 0.0,
        "url_slug_words_in_order": words_in_order / len(dead_words) if dead_words else 0.0,
        "url_slug_exact": float(bool(dead_slug) and slug == dead_slug),
        "url_dead_slug_words": float(min(len(dead_words), 12)),
        "url_dead_slug_ids": float(len(dead_slug) - len(dead_words)),
        "url_slug_extra_share": len(slug_inserted) / len(slug) if slug else 1.0,
        "url_slug_extra_words": float(min(slug_added["word"], 8)),
        "url_slug_extra_ids": float(min(slug_added["id"] + slug_added["date"], 4)),
        # the dead page's own name lost: its id (another page's number in its place) or words
        "url_slug_cut_ids": float(min(slug_cut["id"] + slug_cut["date"], 4)),
        "url_slug_cut_words": float(min(slug_cut["word"], 8)),
        "url_inserted_words": float(min(added["word"], 8)),
        "url_inserted_ids": float(min(added["id"], 4)),
        "url_inserted_dates": float(min(added["date"], 4)),
        "url_cut_words": float(min(removed["word"], 8)),
        "url_cut_ids": float(min(removed["id"], 4)),
        "url_cut_dates": float(min(removed["date"], 4)),
        "url_renamed_segments": float(min(renamed, 6)),
        "url_depth": float(min(len(segments), 8)),
        "url_depth_change": float(max(-4, min(4, len(segments) - len(dead_segments)))),
        "url_query": float(bool(values)),
        "url_short": float(len(tokens) <= 2),
        "url_same_host": float(bool(host) and host == dead_host),
        "url_same_site": float(bool(host) and site_of(candidate_url) == site_of(dead_url)),
    }


# ------------------------------------------------------------------ title against the dead slug

# Slugs are made from titles, often transliterated (German umlauts as two letters) or with
# accents dropped: both sides are read in that one form.
_TRANSLITERATE = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})


def _plain_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.lower().translate(_TRANSLITERATE))
    return _tokens("".join(ch for ch in folded if not unicodedata.combining(ch)))


def title_alignment(dead_url: str, title: str) -> dict[str, float]:
    """How the candidate's title reads against the dead address's page name: a slug is
    usually its page's title in URL form, so the right page's title holds the slug's words in
    order and few others, where a page of the same site that repeats the slug with other
    words (an edition, a digest) holds words the slug has not."""
    dead_segments, dead_values = _segments(dead_url)
    slug = [_plain_words(t) for t in _slug(dead_segments, dead_values)]
    words = [w for part in slug for w in part if token_kind(w) == "word"]
    dead_words = {w for part in [*dead_segments, *dead_values] for w in _plain_words(part)}
    heading = [w for w in _plain_words(title) if token_kind(w) == "word"]
    extra = [w for w in heading if w not in dead_words]
    return {
        "title_known_text": float(bool(heading)),
        "title_slug_in_order": (_common_in_order(words, heading) / len(words)
                                if words and heading else 0.0),
        "title_slug_share": (len(set(words) & set(heading)) / len(set(words))
                             if words and heading else 0.0),
        "title_extra_words": float(min(len(extra), 12)),
        "title_extra_share": len(extra) / len(heading) if heading else 0.0,
    }


# ------------------------------------------------------------------ the feature vector


def _number(value: Any) -> float:
    if value is None or isinstance(value, str):
        return 0.0
    number = float(value)
    return number if math.isfinite(number) else 0.0


def score_features(scores: Mapping[str, Any]) -> dict[str, float]:
    """The ranker's component scores (`models.Scores`), None as 0 with a 'known' flag where
    None means "not measured"."""
    out = {name: _number(scores.get(name)) for name in (
        "content_cosine", "content_lm", "content_resemblance", "title_similarity",
        "anchor_dice", "url_similarity", "rrf", "pick", "rule_support", "redirect",
        "context_similarity", "final", "listing", "text_shortfall")}
    out["content_known"] = float(scores.get("content_cosine") is not None)
    out["title_known"] = float(scores.get("title_similarity") is not None)
    out["anchor_known"] = float(scores.get("anchor_dice") is not None)
    out["context_known"] = float(scores.get("context_similarity") is not None)
    out["content_kld"] = min(_number(scores.get("content_kld")), 20.0) / 20.0
    out["same_site"] = float(bool(scores.get("same_site")))
    out["offshoot"] = float(bool(scores.get("offshoot")))
    out["junk"] = float(bool(scores.get("junk")))
    out["query_votes"] = math.log1p(_number(scores.get("query_votes")))
    best = _number(scores.get("best_rank"))
    out["best_rank_inverse"] = 1.0 / best if best > 0 else 0.0
    return out


def candidate_features(dead_url: str, ranked: Sequence[Listed], index: int, *,
                       archived_copy: bool) -> dict[str, float]:
    """The feature vector of `ranked[index]` in its list (ranked: the live candidates in the
    ranker's order)."""
    me = ranked[index]
    following = ranked[index + 1].confidence if index + 1 < len(ranked) else 0.0
    best_other = max((c.confidence for i, c in enumerate(ranked) if i != index), default=0.0)
    out = score_features(me.scores)
    out.update(url_alignment(dead_url, me.url))
    out.update(title_alignment(dead_url, me.title))
    out.update({
        "confidence": me.confidence,
        "rank_inverse": 1.0 / (index + 1),
        "margin": me.confidence - following,
        "lead": me.confidence - best_other,
        "candidates": math.log1p(len(ranked)),
        "archived_copy": float(archived_copy),
        "methods": float(len(me.methods)),
    })
    found_by = set(me.methods)
    for method in METHODS:
        out[f"method_{method}"] = float(method in found_by)
    # How much the runner-up looks like the dead page too (two look-alikes: one is wrong).
    runner = ranked[1 if index == 0 else 0] if len(ranked) > 1 else None
    out["other_url_similarity"] = _number(runner.scores.get("url_similarity")) if runner else 0.0
    out["other_title_similarity"] = (_number(runner.scores.get("title_similarity"))
                                     if runner else 0.0)
    out.update(kinship(ranked, index))
    return out


def _extends(longer: Sequence[str], shorter: Sequence[str]) -> bool:
    """`longer` is `shorter` with tokens added (all of `shorter`, in order, and more)."""
    return (len(shorter) >= 2 and len(longer) > len(shorter)
            and _common_in_order(shorter, longer) == len(shorter))


def _page_name(url: str) -> list[str]:
    return _slug(*_segments(url))


def kinship(ranked: Sequence[Listed], index: int) -> dict[str, float]:
    """Whether the candidate is another listed candidate's title or page name with words
    added (a derivative of it: an edition, an update, a digest of it), or the base another
    one adds words to. Read from the list itself, so that a site's own way of naming its
    derivatives is learned as a relation, not as words."""
    me = ranked[index]
    my_title, my_name = _plain_words(me.title), _page_name(me.url)
    others = [c for i, c in enumerate(ranked) if i != index]
    titles = [_plain_words(c.title) for c in others]
    names = [_page_name(c.url) for c in others]
    return {
        "title_extends_other": float(any(_extends(my_title, t) for t in titles)),
        "title_base_of_other": float(any(_extends(t, my_title) for t in titles)),
        "name_extends_other": float(any(_extends(my_name, n) for n in names)),
        "name_base_of_other": float(any(_extends(n, my_name) for n in names)),
    }


FEATURES: tuple[str, ...] = tuple(candidate_features(
    "https://a.example/x/y", [Listed("https://a.example/x/z", 0.5)], 0, archived_copy=False))


def vector(features: Mapping[str, float], names: Sequence[str] = FEATURES) -> list[float]:
    return [float(features[name]) for name in names]


# ------------------------------------------------------------------ the models


def _as_float32(value: float) -> float:
    """scikit-learn's trees compare features as float32: so does this evaluator."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


@dataclass(frozen=True)
class Tree:
    """One regression tree: node arrays as scikit-learn's `tree_` has them (-1: a leaf)."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]

    def predict(self, x: Sequence[float]) -> float:
        node = 0
        while self.left[node] != -1:
            node = (self.left[node] if _as_float32(x[self.feature[node]]) <= self.threshold[node]
                    else self.right[node])
        return self.value[node]

    def to_json(self) -> dict[str, list[Any]]:
        return {"feature": list(self.feature), "threshold": list(self.threshold),
                "left": list(self.left), "right": list(self.right), "value": list(self.value)}

    @classmethod
    def from_json(cls, data: Mapping[str, Sequence[Any]]) -> Tree:
        return cls(feature=tuple(int(v) for v in data["feature"]),
                   threshold=tuple(float(v) for v in data["threshold"]),
                   left=tuple(int(v) for v in data["left"]),
                   right=tuple(int(v) for v in data["right"]),
                   value=tuple(float(v) for v in data["value"]))


def sigmoid(raw: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, raw))))


def logit(probability: float) -> float:
    """Log-odds, clipped at ±LOGIT_CLIP (a probability of 0 or 1 stays finite)."""
    p = min(max(probability, 1e-12), 1.0 - 1e-12)
    return max(-LOGIT_CLIP, min(LOGIT_CLIP, math.log(p / (1.0 - p))))


@dataclass(frozen=True)
class Scorer:
    """A raw score (logistic log-odds over standardised features, or boosted trees' log-odds)
    and its calibration (a non-decreasing piecewise-linear map, clipped at its ends: Platt's
    sigmoid sampled, or isotonic regression's points; none: the logistic link)."""

    kind: str  # "logistic" | "boosting"
    features: tuple[str, ...]
    intercept: float
    coefficients: tuple[float, ...] = ()  # logistic, over standardised features
    means: tuple[float, ...] = ()
    scales: tuple[float, ...] = ()
    learning_rate: float = 0.0  # boosting
    trees: tuple[Tree, ...] = ()
    calibration_x: tuple[float, ...] = ()
    calibration_y: tuple[float, ...] = ()

    def raw(self, x: Sequence[float]) -> float:
        if self.kind == "logistic":
            return self.intercept + sum(
                c * (v - m) / s for c, v, m, s in
                zip(self.coefficients, x, self.means, self.scales, strict=True))
        if self.kind == "boosting":
            return self.intercept + self.learning_rate * sum(t.predict(x) for t in self.trees)
        raise ValueError(f"unknown model kind {self.kind!r}")

    def calibrate(self, raw: float) -> float:
        xs, ys = self.calibration_x, self.calibration_y
        if not xs:
            return sigmoid(raw)
        if raw <= xs[0]:
            return ys[0]
        if raw >= xs[-1]:
            return ys[-1]
        high = next(i for i, x in enumerate(xs) if x >= raw)
        low = high - 1
        if xs[high] == xs[low]:
            return ys[high]
        share = (raw - xs[low]) / (xs[high] - xs[low])
        return ys[low] + share * (ys[high] - ys[low])

    def probability(self, features: Mapping[str, float]) -> float:
        return self.calibrate(self.raw(vector(features, self.features)))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "features": list(self.features),
                                "intercept": self.intercept}
        if self.kind == "logistic":
            data.update(coefficients=list(self.coefficients), means=list(self.means),
                        scales=list(self.scales))
        else:
            data.update(learning_rate=self.learning_rate,
                        trees=[t.to_json() for t in self.trees])
        data["calibration"] = {"x": list(self.calibration_x), "y": list(self.calibration_y)}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], known: Sequence[str]) -> Scorer:
        names = tuple(str(n) for n in data["features"])
        unknown = sorted(set(names) - set(known))
        if unknown:
            raise ValueError(f"the model names unknown features: {', '.join(unknown)}")
        calibration = data.get("calibration") or {}
        scorer = cls(
            kind=str(data["kind"]), features=names, intercept=float(data["intercept"]),
            coefficients=tuple(float(v) for v in data.get("coefficients", ())),
            means=tuple(float(v) for v in data.get("means", ())),
            scales=tuple(float(v) for v in data.get("scales", ())),
            learning_rate=float(data.get("learning_rate", 0.0)),
            trees=tuple(Tree.from_json(t) for t in data.get("trees", ())),
            calibration_x=tuple(float(v) for v in calibration.get("x", ())),
            calibration_y=tuple(float(v) for v in calibration.get("y", ())))
        if scorer.kind not in ("logistic", "boosting"):
            raise ValueError(f"unknown model kind {scorer.kind!r}")
        return scorer


# ------------------------------------------------------------------ the answer


def answer_features(first: Mapping[str, float], probabilities: Sequence[float]) -> dict[str, float]:
    """The answer model's input: the new first candidate's features (read in the hand list)
    and the ranking model's log-odds of the first and second candidates in the new order."""
    ordered = sorted(probabilities, reverse=True)
    top = logit(ordered[0]) if ordered else -LOGIT_CLIP
    second = logit(ordered[1]) if len(ordered) > 1 else -LOGIT_CLIP
    return {**first, "learned_first": top, "learned_second": second,
            "learned_gap": top - second}


ANSWER_FEATURES: tuple[str, ...] = tuple(answer_features(dict.fromkeys(FEATURES, 0.0), [0.5]))


@dataclass(frozen=True)
class AnswerModel:
    """The shipped pair: the ranking model and the answer model, the depth the ranking
    re-orders, the recommend line (`provenance['error_target']`) and the provenance."""

    ranking: Scorer
    answer: Scorer
    depth: int = DEPTH
    recommend_at: float = 0.5
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": MODEL_FORMAT, "depth": self.depth, "recommend_at": self.recommend_at,
                "ranking": self.ranking.to_json(), "answer": self.answer.to_json(),
                "provenance": dict(self.provenance)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AnswerModel:
        if data.get("format") != MODEL_FORMAT:
            raise ValueError(f"model format {data.get('format')!r}, expected {MODEL_FORMAT}")
        depth = int(data["depth"])
        if depth < 1:
            raise ValueError(f"depth {depth}: the ranking re-orders at least one candidate")
        return cls(ranking=Scorer.from_json(data["ranking"], FEATURES),
                   answer=Scorer.from_json(data["answer"], ANSWER_FEATURES),
                   depth=depth, recommend_at=float(data["recommend_at"]),
                   provenance=dict(data.get("provenance") or {}))


@dataclass(frozen=True)
class Decision:
    """What the models make of a hand-ranked list: `order`, the hand list's indices in the new
    order (the first `depth` re-ordered, the rest after them as they were); `probabilities`,
    the ranking model's for each of the re-ordered ones, in the new order; `answer`, the
    calibrated probability that the new first is the right page; `recommend_at`, the line."""

    order: tuple[int, ...]
    probabilities: tuple[float, ...]
    answer: float
    recommend_at: float


def rank_order(probabilities: Sequence[float]) -> list[int]:
    """Indices by probability, highest first; ties keep the hand ranking's order."""
    return sorted(range(len(probabilities)), key=lambda i: (-probabilities[i], i))


def decide(dead_url: str, ranked: Sequence[Listed], *, archived_copy: bool,
           model: AnswerModel | None = None) -> Decision:
    """Re-order the hand ranking's first `depth` candidates by the ranking model and give the
    new first's answer probability. `ranked`: the live candidates in the hand ranking's order
    (at least one)."""
    if not ranked:
        raise ValueError("decide needs at least one candidate")
    model = model or shipped_model()
    head = range(min(model.depth, len(ranked)))
    features = [candidate_features(dead_url, ranked, i, archived_copy=archived_copy)
                for i in head]
    probabilities = [model.ranking.probability(f) for f in features]
    order = rank_order(probabilities)
    first = features[order[0]]
    answer = model.answer.probability(answer_features(first, probabilities))
    return Decision(order=(*order, *range(len(features), len(ranked))),
                    probabilities=tuple(probabilities[i] for i in order),
                    answer=answer, recommend_at=model.recommend_at)


def load_model(path: Path = MODEL_FILE) -> AnswerModel:
    """The model in `path`. ModelMissing (named, one line) when it cannot be read: missing,
    not JSON, or not a model of this format."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return AnswerModel.from_json(data)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelMissing(f"the learned ranking model {path} cannot be read: "
                           f"{type(exc).__name__}: {exc}") from None


@functools.cache
def shipped_model() -> AnswerModel:
    """The model shipped in the package (read once a process)."""
    return load_model(MODEL_FILE)
