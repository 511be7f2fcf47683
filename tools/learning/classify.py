"""First-level topic of a URL from its address alone (seed 004, §4.2): train, store, predict, eval.

Training data is whatever the user gives (``url<TAB>category`` lines, gzip or not, a directory
of such files, or the DMOZ RDF dump); pagetrail ships neither data nor a model, because the
DMOZ-derived corpora are licensed for research, teaching and scholarship only. ``train`` writes
the model into the user's data directory (``data_dir()/classifier``).

Data treatment, decided from the corpus rather than assumed:
- one example per *host* (``www.`` dropped): the DMOZ privacy-policy corpus lists several
  policy pages per site, and cross-validating on URLs would put the same host in train and
  test folds;
- the path is dropped by default (``path="drop"``): in that corpus every path is a privacy or
  terms page ("/privacy-policy"), which says nothing about the site's topic, so the host
  carries the signal. ``path="keep"`` trains on whole URLs for corpora whose paths are topical.
  At prediction time the whole URL is tokenised, as in the paper (``odu.edu/compsci``);
- a host listed under several categories keeps the majority one when it holds more than half
  of its rows; otherwise it is dropped as ambiguous (shared policy hosts such as a shop
  platform's checkout serve sites of every category);
- categories World, Regional, Netscape, Adult and Kids (and Teens) are left out as in the paper
  (§3.1; not topical, or a parallel directory duplicating the others).

Model format: a zip of ``.npy`` arrays (vocabulary, coefficients, intercepts, optional idf)
plus ``meta.json``, read back with ``allow_pickle=False`` — no pickle anywhere. Both model kinds
are linear in the feature vector: Naive Bayes (MultinomialNB's joint log-likelihood is
``x·log P(f|c) + log P(c)``) and a linear SVM on sublinear TF-IDF. Training is deterministic:
examples sorted, vocabulary sorted, fixed seeds, zip entries with a fixed timestamp.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import re
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from pagetrail.tools.content.uritokens import (
    VARIANTS,
    TokenOptions,
    features,
    split_uri,
)
from pagetrail.tools.errors import InvalidURL, ModelMissing, PagetrailError
from pagetrail.tools.settings import data_dir

log = logging.getLogger(__name__)

ModelKind = Literal["nb", "linear"]
MODEL_KINDS: tuple[ModelKind, ...] = ("nb", "linear")
PathMode = Literal["drop", "keep"]

EXCLUDED_CATEGORIES: frozenset[str] = frozenset(
    {"world", "regional", "netscape", "adult", "kids", "kids_and_teens"}
)
# Chosen by `classify eval` (10-fold, 61,477 hosts of the DMOZ privacy-policy corpus):
# all-grams from the whole URI, TLD and digits kept (micro/macro F1 0.495/0.452 with the SVM,
# 0.471/0.431 with NB), ahead of the paper's best variant without TLD and digits
# (0.445/0.402): with one example per host, the TLD (.org, .edu, .gov) is topical evidence.
DEFAULT_VARIANT = "allgrams_uri"
DEFAULT_KIND: ModelKind = "linear"
MIN_DF = 2  # a gram seen once cannot generalise; halves the vocabulary (memory, model size)
NB_ALPHA = 1.0
SVM_C = 0.3
MODEL_FILE = "model.npz"
META_FILE = "meta.json"
CANDIDATES_FILE = "candidates.json"
FORMAT_VERSION = 1
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed, so that the same data gives the same bytes


class TrainingDataError(PagetrailError):
    """The training file cannot be read or holds no usable url/category rows."""

    code = "training_data"


# --------------------------------------------------------------------------- reading data

_RDF_ABOUT = re.compile(r'<ExternalPage\s+about="([^"]+)"')
_RDF_TOPIC = re.compile(r"<topic>([^<]+)</topic>")


def top_category(label: str) -> str:
    """``Top/Arts/Movies`` or ``Arts/Movies`` or ``arts`` → ``arts``."""
    parts = [p for p in label.strip().split("/") if p]
    if parts and parts[0].lower() == "top":
        parts = parts[1:]
    return parts[0].strip().lower() if parts else ""


def _open_text(path: Path) -> io.TextIOBase:
    raw = path.open("rb")
    head = raw.read(2)
    raw.seek(0)
    stream = gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw
    return io.TextIOWrapper(stream, encoding="utf-8", errors="replace")


def _files_of(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    if path.is_file():
        return [path]
    raise TrainingDataError(f"no such file or directory: {path}")


def read_labelled_urls(path: str | Path) -> Iterator[tuple[str, str]]:
    """(url, top-level category) pairs from a TSV file, a directory of them, or an RDF dump."""
    for file in _files_of(Path(path)):
        with _open_text(file) as text:
            first = text.readline()
            rest = _chain([first], text)
            if first.lstrip().startswith("<"):
                yield from _read_rdf(rest)
            else:
                yield from _read_tsv(rest)


def _chain(first: list[str], rest: Iterable[str]) -> Iterator[str]:
    yield from first
    yield from rest


def _read_tsv(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.rstrip("\r\n").split("\t")
        if len(cells) < 2:
            continue
        category = top_category(cells[1])
        if cells[0].strip() and category:
            yield cells[0].strip(), category


def _read_rdf(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Streaming read of DMOZ ``content.rdf.u8``: ExternalPage ``about`` + its ``topic``."""
    url: str | None = None
    for line in lines:
        about = _RDF_ABOUT.search(line)
        if about:
            url = about.group(1)
        topic = _RDF_TOPIC.search(line)
        if topic and url:
            yield url, top_category(topic.group(1))
            url = None


# --------------------------------------------------------------------------- examples


@dataclass
class Examples:
    """Training examples: one text per host (or per URL with path="keep")."""

    urls: list[str]
    labels: list[str]
    hosts_by_category: dict[str, list[str]]
    rows_read: int = 0
    rows_skipped: int = 0
    ambiguous_hosts: int = 0
    sha256: str = ""


def host_key(url: str) -> str | None:
    """Host without ``www.``, or None if the text is not a URL with a host."""
    try:
        parts = split_uri(url)
    except InvalidURL:
        return None
    if parts.is_ip:
        return None  # an IP address says nothing about a topic, nor is it a good candidate
    labels = [*parts.host_labels, *([parts.suffix] if parts.suffix else [])]
    return ".".join(labels) or None


def build_examples(
    rows: Iterable[tuple[str, str]],
    *,
    path: PathMode = "drop",
    exclude: frozenset[str] = EXCLUDED_CATEGORIES,
) -> Examples:
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    url_of: dict[str, str] = {}
    read = skipped = 0
    digest = hashlib.sha256()
    for url, category in rows:
        read += 1
        digest.update(f"{url}\t{category}\n".encode())
        if category in exclude:
            continue
        host = host_key(url)
        if host is None:
            skipped += 1
            continue
        key = host if path == "drop" else url
        votes[key][category] += 1
        url_of.setdefault(key, f"http://{host}/" if path == "drop" else url)
    urls: list[str] = []
    labels: list[str] = []
    hosts: dict[str, set[str]] = defaultdict(set)
    ambiguous = 0
    for key in sorted(votes):
        counts = votes[key]
        category, top = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if top * 2 <= sum(counts.values()):
            ambiguous += 1
            continue
        urls.append(url_of[key])
        labels.append(category)
        host = host_key(url_of[key])
        if host:
            hosts[category].add(host)
    if not urls:
        raise TrainingDataError(f"no usable url<TAB>category rows ({read} read)")
    return Examples(
        urls=urls,
        labels=labels,
        hosts_by_category={c: sorted(h) for c, h in sorted(hosts.items())},
        rows_read=read,
        rows_skipped=skipped,
        ambiguous_hosts=ambiguous,
        sha256=digest.hexdigest(),
    )


def load_examples(path: str | Path, *, path_mode: PathMode = "drop") -> Examples:
    """The (url, category) examples of a url<TAB>category file."""
    return build_examples(read_labelled_urls(path), path=path_mode)


# --------------------------------------------------------------------------- the model


@dataclass
class LinearUriModel:
    """A linear classifier over URI features, stored without pickle.

    score(c) = x·coef[c] + intercept[c], where x is the binary feature vector, multiplied
    by `idf` and l2-normalised when those are set (the SVM), raw for Naive Bayes.
    """

    kind: ModelKind
    options: TokenOptions
    classes: list[str]
    vocabulary: dict[str, int]
    coef: np.ndarray  # (n_classes, n_features) float32
    intercept: np.ndarray  # (n_classes,) float32
    idf: np.ndarray | None = None  # (n_features,) float32
    meta: dict[str, object] = field(default_factory=dict)

    def scores(self, url: str) -> np.ndarray:
        grams = set(features(url, self.options))
        index = np.fromiter(
            sorted(i for g in grams if (i := self.vocabulary.get(g)) is not None), dtype=np.int64
        )
        values = np.ones(len(index), dtype=np.float64)
        if self.idf is not None and len(index):
            values = self.idf[index].astype(np.float64)
            values /= np.linalg.norm(values)
        return self.coef[:, index].astype(np.float64) @ values + self.intercept

    def predict(self, url: str) -> Prediction:
        scores = self.scores(url)
        order = np.argsort(-scores, kind="stable")
        # NB scores are joint log-likelihoods, so softmax is the exact posterior; for the SVM
        # it is only a monotone confidence indication (reported as such).
        shifted = np.exp(scores - scores.max())
        probs = shifted / shifted.sum()
        known = sum(1 for g in set(features(url, self.options)) if g in self.vocabulary)
        return Prediction(
            url=url,
            category=self.classes[int(order[0])],
            confidence=float(probs[order[0]]),
            ranking=[(self.classes[int(i)], round(float(probs[i]), 4)) for i in order],
            known_features=known,
            model=self.kind,
        )


@dataclass
class Prediction:
    url: str
    category: str
    confidence: float
    ranking: list[tuple[str, float]]
    known_features: int  # 0: nothing in the URL was seen in training; the guess is the prior
    model: str
    source: str = "classifier"  # or "ontology" when the host is listed in the training data

    def to_dict(self) -> dict[str, object]:
        return {
            "url": self.url,
            "category": self.category,
            "confidence": round(self.confidence, 4),
            "source": self.source,
            "model": self.model,
            "known_features": self.known_features,
            "ranking": [{"category": c, "p": p} for c, p in self.ranking],
        }


def _vectorizer(min_df: int = MIN_DF):
    from sklearn.feature_extraction.text import CountVectorizer

    # Binary presence: a gram repeated in one URL is not more evidence of a topic.
    return CountVectorizer(analyzer=_identity, min_df=min_df, binary=True, dtype=np.float32)


def _identity(doc: list[str]) -> list[str]:
    return doc


def featurize(urls: Sequence[str], options: TokenOptions) -> list[list[str]]:
    return [features(url, options) for url in urls]


def _estimator(kind: ModelKind):
    if kind == "nb":
        from sklearn.naive_bayes import MultinomialNB

        return MultinomialNB(alpha=NB_ALPHA)
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    return make_pipeline(TfidfTransformer(), LinearSVC(C=SVM_C, random_state=0))


def fit_model(
    urls: Sequence[str], labels: Sequence[str], *, options: TokenOptions, kind: ModelKind
) -> LinearUriModel:
    vectorizer = _vectorizer()
    matrix = vectorizer.fit_transform(featurize(urls, options))
    estimator = _estimator(kind).fit(matrix, np.asarray(labels))
    vocabulary = {str(g): int(i) for g, i in vectorizer.vocabulary_.items()}
    if kind == "nb":
        return LinearUriModel(
            kind, options, [str(c) for c in estimator.classes_], vocabulary,
            estimator.feature_log_prob_.astype(np.float32),
            estimator.class_log_prior_.astype(np.float32),
        )
    tfidf, svm = estimator[0], estimator[-1]
    classes = [str(c) for c in svm.classes_]
    coef, intercept = svm.coef_, svm.intercept_
    if len(classes) == 2:  # sklearn keeps one row for two classes; make it symmetric
        coef = np.vstack([-coef[0], coef[0]]) / 2
        intercept = np.array([-intercept[0], intercept[0]]) / 2
    return LinearUriModel(
        kind, options, classes, vocabulary, coef.astype(np.float32),
        intercept.astype(np.float32), idf=tfidf.idf_.astype(np.float32),
    )


# --------------------------------------------------------------------------- storage


def model_dir() -> Path:
    return data_dir() / "classifier"


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def save_model(model: LinearUriModel, directory: Path, *, candidates: dict[str, list[str]]) -> Path:
    """Write model.npz, meta.json and candidates.json (category → hosts) atomically-ish."""
    directory.mkdir(parents=True, exist_ok=True)
    words = sorted(model.vocabulary, key=model.vocabulary.__getitem__)
    arrays = {
        "vocabulary": np.array(words, dtype=np.str_),
        "classes": np.array(model.classes, dtype=np.str_),
        "coef": model.coef,
        "intercept": model.intercept,
    }
    if model.idf is not None:
        arrays["idf"] = model.idf
    tmp = directory / (MODEL_FILE + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, _npy_bytes(array))
    tmp.replace(directory / MODEL_FILE)
    meta = {
        "format": FORMAT_VERSION,
        "kind": model.kind,
        "options": model.options.to_dict(),
        **model.meta,
        "model_sha256": hashlib.sha256((directory / MODEL_FILE).read_bytes()).hexdigest(),
    }
    _write_json(directory / CANDIDATES_FILE, candidates)
    _write_json(directory / META_FILE, meta)
    return directory


def _write_json(path: Path, value: object) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    tmp.replace(path)


def load_model(directory: Path | None = None) -> LinearUriModel:
    """The trained model, or ModelMissing saying how to build one."""
    directory = directory or model_dir()
    meta_path, model_path = directory / META_FILE, directory / MODEL_FILE
    if not meta_path.is_file() or not model_path.is_file():
        raise ModelMissing(
            f"no URL classifier in {directory}: build one with "
            "`pagetrail classify train --data PATH` (url<TAB>category file)"
        )
    try:
        meta = json.loads(meta_path.read_text())
        with np.load(model_path, allow_pickle=False) as arrays:
            loaded = {name: arrays[name] for name in arrays.files}
        options = TokenOptions.from_dict(meta["options"])
        kind = meta["kind"]
        if kind not in MODEL_KINDS or meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported model {kind!r} format {meta.get('format')!r}")
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        raise ModelMissing(f"URL classifier in {directory} is unreadable ({exc}); retrain it") from exc
    vocabulary = {str(w): i for i, w in enumerate(loaded["vocabulary"].tolist())}
    return LinearUriModel(
        kind=kind,
        options=options,
        classes=[str(c) for c in loaded["classes"].tolist()],
        vocabulary=vocabulary,
        coef=loaded["coef"],
        intercept=loaded["intercept"],
        idf=loaded.get("idf"),
        meta=meta,
    )


def load_candidates(directory: Path | None = None) -> dict[str, list[str]]:
    """Category → hosts of the user's training data (written beside the model)."""
    path = (directory or model_dir()) / CANDIDATES_FILE
    if not path.is_file():
        raise ModelMissing(
            f"no candidate list in {path.parent}: run `pagetrail classify train --data PATH`"
        )
    data = json.loads(path.read_text())
    return {str(c): [str(h) for h in hosts] for c, hosts in data.items()}


# --------------------------------------------------------------------------- train / eval


@dataclass
class TrainReport:
    directory: str
    examples: int
    categories: dict[str, int]
    features: int
    kind: str
    variant: str
    rows_read: int
    ambiguous_hosts: int
    data_sha256: str
    model_sha256: str
    seconds: float


def train(
    data: str | Path,
    *,
    variant: str = DEFAULT_VARIANT,
    kind: ModelKind = DEFAULT_KIND,
    path_mode: PathMode = "drop",
    directory: Path | None = None,
) -> TrainReport:
    """Build the classifier and the candidate list from the user's file into the data dir."""
    started = time.perf_counter()
    options = _variant_options(variant, path_mode)
    examples = load_examples(data, path_mode=path_mode)
    if len(set(examples.labels)) < 2:
        raise TrainingDataError("training data needs at least two categories")
    model = fit_model(examples.urls, examples.labels, options=options, kind=kind)
    model.meta = {
        "variant": variant,
        "path": path_mode,
        "examples": len(examples.urls),
        "rows_read": examples.rows_read,
        "ambiguous_hosts": examples.ambiguous_hosts,
        "data_sha256": examples.sha256,
        "features": len(model.vocabulary),
    }
    target = directory or model_dir()
    save_model(model, target, candidates=examples.hosts_by_category)
    meta = json.loads((target / META_FILE).read_text())
    return TrainReport(
        directory=str(target),
        examples=len(examples.urls),
        categories=dict(sorted(Counter(examples.labels).items())),
        features=len(model.vocabulary),
        kind=kind,
        variant=variant,
        rows_read=examples.rows_read,
        ambiguous_hosts=examples.ambiguous_hosts,
        data_sha256=examples.sha256,
        model_sha256=str(meta["model_sha256"]),
        seconds=round(time.perf_counter() - started, 2),
    )


def _variant_options(variant: str, path_mode: PathMode) -> TokenOptions:
    if variant not in VARIANTS:
        raise TrainingDataError(f"unknown variant {variant!r}; one of: {', '.join(VARIANTS)}")
    # Training texts are host-only URLs when the path is dropped, so use_path changes nothing
    # there; it stays on so that predictions read the whole requested URL (paper §4.2.2).
    return replace(VARIANTS[variant], use_path=True)


@dataclass
class EvalRow:
    variant: str
    kind: str
    micro_f1: float
    macro_f1: float
    features: int
    seconds: float


# The paper's Table 6 (F1, micro, macro), for the report beside ours.
PAPER_TABLE6: dict[str, tuple[float, float, float]] = {
    "tokens": (0.39, 0.45, 0.31),
    "tokens-tld": (0.35, 0.40, 0.28),
    "tokens-tld-digits": (0.40, 0.45, 0.32),
    "tokens-tld-stop": (0.39, 0.43, 0.30),
    "allgrams_tokens": (0.51, 0.53, 0.45),
    "allgrams_tokens-tld": (0.51, 0.53, 0.46),
    "allgrams_tokens-tld-digits": (0.51, 0.52, 0.47),
    "allgrams_tokens-tld-stop": (0.50, 0.52, 0.46),
    "allgrams_uri": (0.56, 0.55, 0.48),
    "allgrams_uri-tld": (0.55, 0.59, 0.46),
    "allgrams_uri-tld-digits": (0.59, 0.62, 0.61),
    "allgrams_uri-tld-stop": (0.55, 0.60, 0.47),
}


def evaluate(
    examples: Examples,
    *,
    variants: Sequence[str] = tuple(VARIANTS),
    kinds: Sequence[ModelKind] = MODEL_KINDS,
    folds: int = 10,
    seed: int = 0,
) -> list[EvalRow]:
    """Stratified k-fold micro/macro F1 per (variant, model kind), with seconds spent.

    The vocabulary (min_df) is counted on all examples once per variant: it sees no labels,
    and refitting it per fold would triple the cost on two cores. Unlike the paper we keep
    test URLs whose grams were never seen in training (they count, mostly as errors).
    """
    from sklearn.metrics import f1_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    labels = np.asarray(examples.labels)
    smallest = min(Counter(examples.labels).values())
    if smallest < folds:
        raise TrainingDataError(
            f"{folds}-fold evaluation needs ≥ {folds} examples per category (smallest: {smallest})"
        )
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    rows: list[EvalRow] = []
    for variant in variants:
        started = time.perf_counter()
        options = _variant_options(variant, "drop")
        matrix = _vectorizer().fit_transform(featurize(examples.urls, options))
        prep = time.perf_counter() - started
        for kind in kinds:
            t0 = time.perf_counter()
            predicted = cross_val_predict(_estimator(kind), matrix, labels, cv=splitter)
            rows.append(EvalRow(
                variant=variant,
                kind=kind,
                micro_f1=round(float(f1_score(labels, predicted, average="micro")), 4),
                macro_f1=round(float(f1_score(labels, predicted, average="macro")), 4),
                features=int(matrix.shape[1]),
                seconds=round(prep + time.perf_counter() - t0, 1),
            ))
            log.info("eval %s %s: %s", variant, kind, rows[-1])
    return rows


def classify_url(
    url: str,
    *,
    model: LinearUriModel | None = None,
    candidates: dict[str, list[str]] | None = None,
) -> Prediction:
    """Category of `url`: the training data's own label when its host is listed there
    (the paper's "check ontologies" step), else the classifier's prediction."""
    if not isinstance(url, str) or len(url) > 16384:
        raise InvalidURL("URL missing or too long", url=str(url)[:200])
    model = model or load_model()
    prediction = model.predict(url)
    host = host_key(url)
    if candidates is not None and host:
        for category, hosts in candidates.items():
            if _contains(hosts, host):
                prediction.category, prediction.source = category, "ontology"
                prediction.confidence = 1.0
                break
    return prediction


def _contains(sorted_hosts: list[str], host: str) -> bool:
    import bisect

    i = bisect.bisect_left(sorted_hosts, host)
    return i < len(sorted_hosts) and sorted_hosts[i] == host

