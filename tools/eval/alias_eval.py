"""Offline evaluation of alias inference on FABLE's released dataset (Zhu et al., IMC 2023).

The dataset is read from a directory given at run time (its licence is unstated: it is never
shipped with pagetrail). Files, gzipped or not:

- ``ground-truth/ground_truth_500.json``: ``[{url, redirected_url (the true alias), search,
  hist_redir, inference (FABLE's proposals per method), found, correct}]``
- ``ground-truth/deleted_500.json``: ``[{url, search, hist_redir, inference}]`` — really gone.
- ``real-world/all_aliases.json``: ``[{url, alias, method}]`` — aliases FABLE found in the wild.
- ``real-world/infer_alias.json``: ``[{netloc_dir, alias, examples, urlmeta}]`` — archived
  titles of URLs (``[url, [title, ...], ...]`` rows).

Nothing is fetched, so a proposal counts as correct when it equals the true alias after
`normalize_url`. Each URL learns only from the *other* known moves of its site: every move
whose old URL normalises to the URL itself is excluded (leave-one-out).
"""

from __future__ import annotations

import gzip
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.learning.aliases import (
    DEFAULT_THRESHOLDS,
    KnownMove,
    Proposal,
    RuleBook,
    Thresholds,
    decide,
    learn_rules,
    rank_proposals,
)
from pagetrail.tools.net.urls import normalize_url, site_of

GROUND_TRUTH = "ground-truth/ground_truth_500.json"
DELETED = "ground-truth/deleted_500.json"
ALL_ALIASES = "real-world/all_aliases.json"
INFER_ALIAS = "real-world/infer_alias.json"

# A site with very many known moves is learned from the nearest ones only (same leading path
# segments first): rule testing is quadratic in the number of moves.
MAX_MOVES_PER_SITE = 60


class DatasetError(PagetrailError):
    """The evaluation dataset is missing or not in the expected shape."""

    code = "dataset"


@dataclass(frozen=True)
class AliasCase:
    url: str
    truth: str | None              # None: the page was deleted, any proposal is wrong
    fable_inference: str | None = None
    fable_found: bool = False
    fable_correct: bool = False
    title: str | None = None


@dataclass
class FableDataset:
    truth_cases: list[AliasCase]
    deleted_cases: list[AliasCase]
    real_world_moves: list[KnownMove]
    titles: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Loading

def _read_json(root: Path, name: str, *, required: bool = True) -> Any:
    for path in (root / (name + ".gz"), root / name):
        if path.is_file():
            try:
                opener = gzip.open if path.suffix == ".gz" else open
                with opener(path, "rt", encoding="utf-8") as fh:
                    return json.load(fh)
            except (OSError, ValueError) as exc:
                raise DatasetError(f"{path}: not readable JSON ({exc})") from exc
    if required:
        raise DatasetError(f"{root / name}(.gz) not found: give the FABLE dataset directory")
    return []


def _rows(data: Any, name: str, keys: Iterable[str]) -> list[dict[str, Any]]:
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise DatasetError(f"{name}: expected a JSON list of objects")
    for index, row in enumerate(data):
        missing = [k for k in keys if k not in row]
        if missing:
            raise DatasetError(f"{name}[{index}]: missing {', '.join(missing)}")
    return data


def _collect_titles(infer_alias: Any) -> dict[str, str]:
    """url → archived title, from every ``[url, [title, ...], ...]`` row of infer_alias."""
    titles: dict[str, str] = {}
    if not isinstance(infer_alias, list):
        return titles
    for group in infer_alias:
        if not isinstance(group, dict):
            continue
        for key in ("alias", "examples", "urlmeta"):
            for row in group.get(key) or []:
                if (isinstance(row, list) and len(row) >= 2 and isinstance(row[0], str)
                        and isinstance(row[1], list) and row[1] and isinstance(row[1][0], str)):
                    titles.setdefault(normalize_url(row[0]), row[1][0])
    return titles


def load_fable_dataset(directory: str | Path) -> FableDataset:
    """FABLE's released alias data set in `directory` (DatasetError when incomplete)."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise DatasetError(f"{root}: not a directory")
    truth = _rows(_read_json(root, GROUND_TRUTH), GROUND_TRUTH, ("url", "redirected_url"))
    deleted = _rows(_read_json(root, DELETED), DELETED, ("url",))
    aliases = _rows(_read_json(root, ALL_ALIASES, required=False), ALL_ALIASES,
                    ("url", "alias"))
    titles = _collect_titles(_read_json(root, INFER_ALIAS, required=False))

    def case(row: dict[str, Any], true_alias: str | None) -> AliasCase:
        return AliasCase(
            url=row["url"], truth=true_alias, fable_inference=row.get("inference"),
            fable_found=bool(row.get("found")), fable_correct=bool(row.get("correct")),
            title=titles.get(normalize_url(row["url"])),
        )

    moves = [KnownMove(r["url"], r["alias"], titles.get(normalize_url(r["url"])),
                       "real-world") for r in aliases if r["url"] and r["alias"]]
    return FableDataset(
        truth_cases=[case(r, r["redirected_url"]) for r in truth],
        deleted_cases=[case(r, None) for r in deleted],
        real_world_moves=moves,
        titles=titles,
    )


# ---------------------------------------------------------------------------------------------
# Leave-one-out

def own_move_indices(url: str, moves: Sequence[KnownMove]) -> set[int]:
    """Indices of the moves *of this URL itself*: never learned from when judging it."""
    key = normalize_url(url)
    return {i for i, m in enumerate(moves) if normalize_url(m.old_url) == key}


def _nearest(url: str, moves: list[KnownMove], limit: int) -> list[KnownMove]:
    if len(moves) <= limit:
        return moves
    segments = [s for s in url.split("?")[0].split("/")[3:] if s]

    def shared_prefix(move: KnownMove) -> int:
        other = [s for s in move.old_url.split("?")[0].split("/")[3:] if s]
        n = 0
        while n < min(len(segments), len(other)) and segments[n] == other[n]:
            n += 1
        return n

    return sorted(moves, key=lambda m: -shared_prefix(m))[:limit]


@dataclass
class Judged:
    case: AliasCase
    ranked: list[Proposal]


class SiteLearner:
    """Rules per site, learned once from all known moves and queried leave-one-out."""

    def __init__(self, moves: Iterable[KnownMove]) -> None:
        self._by_site: dict[str, list[KnownMove]] = defaultdict(list)
        for move in moves:
            self._by_site[site_of(move.old_url)].append(move)
        self._books: dict[str, RuleBook] = {}

    def moves_for(self, url: str) -> list[KnownMove]:
        return self._by_site.get(site_of(url), [])

    def rank(self, url: str, title: str | None = None) -> list[Proposal]:
        site = site_of(url)
        moves = self._by_site.get(site, [])
        if not moves:
            return []
        if len(moves) > MAX_MOVES_PER_SITE:
            # Too many to learn once: learn from the nearest *other* moves of this URL.
            others = [m for m in moves if normalize_url(m.old_url) != normalize_url(url)]
            book = learn_rules(_nearest(url, others, MAX_MOVES_PER_SITE))
            return rank_proposals(book, url, title=title)
        book = self._books.get(site)
        if book is None:
            book = self._books[site] = learn_rules(moves)
        return rank_proposals(book, url, title=title, exclude=own_move_indices(url, moves))


def judge(cases: Sequence[AliasCase], learner: SiteLearner) -> list[Judged]:
    return [Judged(c, learner.rank(c.url, c.title)) for c in cases]


# ---------------------------------------------------------------------------------------------
# Scoring

def strict_key(url: str) -> str:
    """FABLE-style simple normalisation: no scheme, no :80, no trailing slash (www kept)."""
    rest = url.strip().split("://", 1)[-1]
    host, _, path = rest.partition("/")
    return host.removesuffix(":80").removesuffix(":443").lower() + "/" + path.rstrip("/")


@dataclass(frozen=True)
class Row:
    system: str
    cases: int
    proposed: int
    correct: int
    correct_strict: int | None = None
    note: str = ""

    @property
    def wrong(self) -> int:
        return self.proposed - self.correct

    @property
    def precision(self) -> float:
        return self.correct / self.proposed if self.proposed else 0.0

    @property
    def coverage(self) -> float:
        return self.proposed / self.cases if self.cases else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"system": self.system, "cases": self.cases, "proposed": self.proposed,
                "correct": self.correct, "wrong": self.wrong,
                "precision": round(self.precision, 4), "coverage": round(self.coverage, 4),
                "correct_strict": self.correct_strict, "note": self.note}


def score(system: str, pairs: Sequence[tuple[str | None, str | None]], note: str = "") -> Row:
    """pairs: (proposal or None, true alias or None for a deleted page)."""
    proposed = [(p, t) for p, t in pairs if p]
    correct = sum(1 for p, t in proposed if t and normalize_url(p) == normalize_url(t))
    strict = sum(1 for p, t in proposed if t and strict_key(p) == strict_key(t))
    return Row(system, len(pairs), len(proposed), correct, strict, note)


def decisions(judged: Sequence[Judged], thresholds: Thresholds) -> list[tuple[str | None,
                                                                            str | None]]:
    out = []
    for j in judged:
        best = decide(j.case.url, j.ranked, thresholds).best
        out.append((best.url if best else None, j.case.truth))
    return out


UPPER_BOUND_K = 3


def top_k_pairs(judged: Sequence[Judged], thresholds: Thresholds,
                k: int = UPPER_BOUND_K) -> list[tuple[str | None, str | None]]:
    """Per case, the true alias when it is among the first `k` proposals (confident or not),
    else the first proposal, else None: scored with `score`, "correct" counts the cases whose
    alias live verification of `k` fetches *could* confirm — an upper bound, since offline
    nothing is fetched and verification may also fail or accept a wrong page."""
    out = []
    for j in judged:
        urls = [p.url for p in decide(j.case.url, j.ranked, thresholds).proposals[:k]]
        truth = j.case.truth
        hit = next((u for u in urls if truth and normalize_url(u) == normalize_url(truth)), None)
        out.append((hit or (urls[0] if urls else None), truth))
    return out


@dataclass
class AliasEvalReport:
    rows: list[Row]
    thresholds: Thresholds
    seconds: float
    sweep: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows],
                "thresholds": self.thresholds.__dict__, "seconds": round(self.seconds, 2),
                "sweep": self.sweep}


# The grid `--sweep` scores on the real-world aliases (the dev set): the default thresholds
# are the point of it with the most correct proposals at precision >= SWEEP_MIN_PRECISION that
# keeps some margin above the bar (see the README's alias section).
SWEEP_MIN_PRECISION = 0.9
SWEEP_GRID: tuple[Thresholds, ...] = tuple(
    replace(DEFAULT_THRESHOLDS, min_quality=quality, margin=margin,
            structural_max_complexity=structural, repeated_min_support=repeated)
    for quality in (0.7, 0.67, 0.6)
    for structural in (1, 2, 3)
    for repeated in (2, 3, 99)
    for margin in (0.1, 0.05)
)


def evaluate_aliases(dataset: FableDataset, thresholds: Thresholds = DEFAULT_THRESHOLDS, *,
                     real_world: bool = False,
                     sweep: Sequence[Thresholds] = ()) -> AliasEvalReport:
    """pagetrail's inference beside FABLE's on the ground truth and the deleted set; with
    `real_world`, also leave-one-out on the real-world aliases, and with `sweep`, each of those
    thresholds scored on the real-world aliases (their rankings made once)."""
    started = time.perf_counter()
    truth_moves = [KnownMove(c.url, c.truth, c.title, "ground-truth")
                   for c in dataset.truth_cases if c.truth]
    learner = SiteLearner([*truth_moves, *dataset.real_world_moves])
    judged_truth = judge(dataset.truth_cases, learner)
    judged_deleted = judge(dataset.deleted_cases, learner)
    n_truth = len(dataset.truth_cases)
    rows = [
        score("pagetrail INFER (leave-one-out)", decisions(judged_truth, thresholds)),
        score("FABLE inference alone", [(c.fable_inference, c.truth)
                                        for c in dataset.truth_cases],
              "its `inference` field, rescored here"),
        Row("FABLE full system", n_truth,
            sum(c.fable_found for c in dataset.truth_cases),
            sum(c.fable_correct for c in dataset.truth_cases), None,
            "its own found/correct judgement; uses search + live web"),
        score("pagetrail INFER on deleted", decisions(judged_deleted, thresholds),
              "every proposal is wrong"),
        score("FABLE inference on deleted", [(c.fable_inference, None)
                                             for c in dataset.deleted_cases],
              "every proposal is wrong"),
        score(f"pagetrail INFER top-{UPPER_BOUND_K}, upper bound",
              top_k_pairs(judged_truth, thresholds),
              f"true alias among the first {UPPER_BOUND_K} proposals, confident or not: what "
              "live verification could at most confirm (FABLE's inference field is verified "
              "live); offline nothing is fetched"),
        score(f"pagetrail INFER top-{UPPER_BOUND_K} on deleted",
              top_k_pairs(judged_deleted, thresholds),
              "cases with any proposal: live verification would have to reject them all"),
    ]
    swept: list[dict[str, Any]] = []
    if real_world or sweep:
        cases = [AliasCase(m.old_url, m.new_url, title=m.title)
                 for m in dataset.real_world_moves]
        judged_rw = judge(cases, SiteLearner(dataset.real_world_moves))
        rows.append(score("pagetrail INFER, real-world aliases (LOO)",
                          decisions(judged_rw, thresholds),
                          "truth = aliases FABLE found in the wild"))
        swept = [{**row.to_dict(), "thresholds": t.__dict__}
                 for t, row in zip(sweep, sweep_thresholds(judged_rw, sweep), strict=True)]
    return AliasEvalReport(rows, thresholds, time.perf_counter() - started, swept)


def best_swept(swept: Sequence[dict[str, Any]],
               min_precision: float = SWEEP_MIN_PRECISION) -> dict[str, Any] | None:
    """The swept point with the most correct proposals at precision >= `min_precision`."""
    eligible = [s for s in swept if s["proposed"] and s["precision"] >= min_precision]
    return max(eligible, key=lambda s: (s["correct"], s["precision"]), default=None)


def sweep_thresholds(judged: Sequence[Judged], grid: Iterable[Thresholds]) -> list[Row]:
    """Score the same rankings under several thresholds (calibration without re-learning)."""
    return [score(f"q≥{t.min_quality} s≥{t.min_support} m={t.margin} "
                  f"folder q≥{t.folder_min_quality} c≤{t.folder_max_complexity} "
                  f"(structural/s≥{t.repeated_min_support} c≤{t.structural_max_complexity})",
                  decisions(judged, t))
            for t in grid]
