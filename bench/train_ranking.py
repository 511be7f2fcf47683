"""Train the learned ranking and answer across worlds, validated leave-worlds-out.

    python bench/train_ranking.py train FEATURES.jsonl [FEATURES.jsonl ...]
        [--out tools/ranking/data/answer_model.json] [--folds family|world]
        [--fold-groups N] [--jobs N] [--error-target 0.01] [--risk 0.05] [--seed 0]
        [--world-root DIR ...] [--oof-out FILE.jsonl] [--augment-missing]
        [--augment-listings] [--dry-run]
    python bench/train_ranking.py measure FEATURES.jsonl REPORT.json [--model FILE]
    python bench/train_ranking.py line FEATURES.jsonl FEATURES.jsonl FEATURES.jsonl ...
        [--model FILE] [--out tools/ranking/data/answer_model.json] [--error-target 0.01]
        [--risk 0.01] [--world-root DIR ...] [--dry-run]

Each FEATURES file is one world's `pagetrail eval WORLD --features FILE` (method `full`), named
WORLD.features.jsonl; REPORT.json (for `measure`) is that eval's `--json` report. The rows are
read in the hand ranking's order with its confidences (`learned.hand_order`: an eval run with
the learned ranking keeps them), so any eval's rows train again. Every dead case whose answer
the answer step decides (`recovery.answer.for_dead`: moved, replacement, archived or none) is
used: its first `depth` live candidates, each with its features
(`ranking.learned.candidate_features`, the code inference runs) and its label, "this is the
right page"; a gone case's candidates are all wrong.

`train`:
1. the ranking model: boosted trees over every candidate's features. Out-of-fold
   probabilities by fold (`--folds`): single worlds by default — a held-out mutated world is
   predicted by a model fitted on its siblings, which is what a new migration of known sites
   is to the shipped model —, or families of worlds (worlds made from the same cases, a
   mutated world and its source, dev and dev2), so a held-out fold's sites were never seen:
   the estimate for a web of other sites. `--fold-groups N` deals the worlds (or families),
   in name order, into N folds: the cost of validation grows with folds × worlds, and forty
   worlds one by one is forty fits of thirty-nine; `--jobs N` fits N folds at once. Lists
   that train the ranking only, every candidate wrong, each held out with its world:
   `--augment-listings`, each list's listing pages alone (what a thin search leaves: the
   shipped model), `--augment-missing`, each list without its right page;
2. the answer model: each case re-ordered by its out-of-fold probabilities, the new first's
   `learned.answer_features` (ANSWER_INPUTS of them), a logistic regression; its own
   out-of-fold scores (same folds) calibrated by Platt's sigmoid; the recommend line is the
   lowest calibrated probability at which a world of the training worlds' median size,
   answered wrong as the pooled out-of-fold answers at that line were, is wrong for more
   than `--error-target` of its decided dead cases with probability at most `--risk`
   (beta-binomial posterior predictive, `world_risk`; `choose_line`); `--oof-out` writes each case's out-of-fold probabilities;
3. the shipped models fitted on every world, written as JSON with the provenance: the worlds
   and their seeds, the parameters, the out-of-fold scores and the table printed (per world,
   out of fold: success@1 hand → learned, answered right / wrong at the hand line →
   at the learned line).

`measure`: one world's eval re-decided by the models — success@1, answered right and answered
wrong with the hand ranking at its line and with the learned ranking at the model's line (where
weak anchors too, from the hand ranking's clamped list as the rows have it), the calibration bands
— and `mismatch`: decided cases whose re-decision does not give the answer
the eval gave (0 when the eval ran with this model: the integration's check), and
`listing_alone`: how often listing pages left alone in a list (a thin search, simulated) would
be told. A report whose recoveries ran out of time (`multiworld.budget_overruns`) is refused.

`line`: the model's recommend line chosen again on worlds it never saw (three or more, none
of its training worlds, each FEATURES file beside its WORLD.json report): the training's rule
(`lowest_safe_line`) over the model's own decisions on them, pooled — no out-of-fold estimate
needed, so the line is what a new web does to this model rather than what its siblings did to
a fold's —, and the same rule over their thin lists, each told one a wrong answer; the higher
of the two. Prints each world and the pooled total at the old and the new line; writes the
model with the new line and `provenance["line"]` (worlds and seeds, the rule, the table).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import betabinom
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score

from pagetrail.tools import policy
from pagetrail.tools.eval.multiworld import budget_overruns
from pagetrail.tools.ranking import learned

DECIDED = frozenset({"moved", "replacement", "archived", "none"})  # answers for_dead gives
SCORED = frozenset({"moved", "replacement"})
# Chosen out of fold on the training worlds (world folds): depth 2/3/4, 150/300 trees.
BOOSTING = {"n_estimators": 300, "max_depth": 3, "learning_rate": 0.05, "subsample": 0.8,
            "min_samples_leaf": 20}
# The answer model reads the ranking model's first two log-odds and the hand ranking's
# margin and lead of that candidate (its confidence over the next one and over the best
# other one): a second, independently made opinion of how far the first stands out. Out of
# fold on the 11 training worlds, at the same 8 wrong answers, it answered 1,940 right
# where the two log-odds alone answered 1,892 (family folds: 1,946); on eighteen mutated
# worlds never fitted on or looked at (eight made after this change), 3,047 against 2,956
# right, 15 against 13 wrong (docs/evaluation.md, "The answer reads the hand ranking's
# margin"). A regression over every feature of the first candidate was calibrated worse
# across site families (dev's cases against dev3's: out-of-fold AUC 0.970 against 0.980)
# and said less at the same error.
ANSWER_INPUTS: tuple[str, ...] = ("learned_first", "learned_second", "margin", "lead")
LOGISTIC_C = 1.0
PLATT_POINTS = 256
BANDS = ((0.0, 0.1), (0.1, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0))


class UsageError(Exception):
    """Input the command cannot train or measure on (named, exit 2)."""


@dataclass(frozen=True)
class Case:
    """One decided dead case: its first `depth` live candidates in the hand ranking's order."""

    world: str
    family: str  # worlds made from the same cases share one
    case: str
    scored: bool  # a right live page exists (moved / replacement)
    answer: str  # what the eval answered
    hand_confidence: float  # the hand ranking's first candidate's
    features: tuple[Mapping[str, float], ...]
    right: tuple[bool, ...]

    @property
    def x(self) -> np.ndarray:
        return np.array([learned.vector(f) for f in self.features])


def world_name(path: Path) -> str:
    name = path.name
    for suffix in (".features.jsonl", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def read_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise UsageError(f"{path}:{number}: not a feature row (a JSON object)")
            missing = [k for k in ("case", "dead_url", "rank", "url", "confidence",
                                   "expect_kind", "answer", "right") if k not in row]
            if missing:
                raise UsageError(f"{path}:{number}: a feature row without {', '.join(missing)}")
            rows.append(row)
    return rows


def cases_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Method `full`'s rows by case, each case's in the eval's order."""
    by_case: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("method", "full") == "full":
            by_case.setdefault(str(row["case"]), []).append(row)
    for case_rows in by_case.values():
        case_rows.sort(key=lambda r: int(r["rank"]))
    return by_case


def decided(case_rows: Sequence[Mapping[str, Any]]) -> bool:
    first = case_rows[0]
    return first["expect_kind"] != "alive" and first["answer"] in DECIDED


def listed(case_rows: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]],
                                                          list[learned.Listed]]:
    hand = learned.hand_order(case_rows)
    return hand, [learned.listed_from_record(r) for r in hand]


def _decided_lists(rows: Iterable[Mapping[str, Any]],
                   ) -> Iterable[tuple[str, list[Mapping[str, Any]], list[learned.Listed]]]:
    """(case, its rows in the hand ranking's order, the same as `Listed`) of each decided
    case."""
    for case, case_rows in cases_of(rows).items():
        if decided(case_rows):
            yield case, *listed(case_rows)


def _case(world: str, family: str, case: str, hand: Sequence[Mapping[str, Any]],
          ranked: Sequence[learned.Listed], depth: int, *, scored: bool, answer: str,
          right: Sequence[bool]) -> Case:
    """A training case of the list's first `depth` candidates (their features read in it)."""
    head = range(min(depth, len(ranked)))
    archived = bool(hand[0]["archived_copy_found"])
    return Case(
        world=world, family=family or world, case=case, scored=scored, answer=answer,
        hand_confidence=ranked[0].confidence,
        features=tuple(learned.candidate_features(str(hand[0]["dead_url"]), ranked, i,
                                                  archived_copy=archived) for i in head),
        right=tuple(right[i] for i in head))


def examples(world: str, rows: Iterable[Mapping[str, Any]], family: str = "",
             depth: int = policy.LEARNED_DEPTH) -> list[Case]:
    return [_case(world, family, case, hand, ranked, depth,
                  scored=hand[0]["expect_kind"] in SCORED, answer=str(hand[0]["answer"]),
                  right=[bool(row["right"]) for row in hand])
            for case, hand, ranked in _decided_lists(rows)]


def missing_variants(world: str, rows: Iterable[Mapping[str, Any]], family: str = "",
                     depth: int = policy.LEARNED_DEPTH) -> list[Case]:
    """Each decided case whose list holds the right page, again without it: the list a
    recovery gives when retrieval missed the page, every candidate wrong (`--augment-missing`,
    for the ranking model only). Training worlds rarely miss (a list of one was right 202
    times of 202), so a model fitted on them alone trusts the first of any list of weak
    pages — a tag page with a category page beside it at 0.83."""
    out = []
    for case, hand, ranked in _decided_lists(rows):
        keep = [i for i, row in enumerate(hand) if not row["right"]]
        if keep and len(keep) < len(hand):
            out.append(_case(world, family, f"{case}#missing", [hand[i] for i in keep],
                             [ranked[i] for i in keep], depth, scored=False, answer="none",
                             right=[False] * len(keep)))
    return out


def listing_variants(world: str, rows: Iterable[Mapping[str, Any]], family: str = "",
                     depth: int = policy.LEARNED_DEPTH) -> list[Case]:
    """Each decided case whose list holds listing pages (tags, categories, link lists), none
    of them right, again with those pages alone: the list a thin search gives (the pages that
    link to everything are what it still finds), every candidate wrong (`--augment-listings`,
    for the ranking model only). A model fitted on full lists reads the hand ranking's lead
    as the answer, and a list of listing pages has a first too."""
    out = []
    for case, hand, ranked in _decided_lists(rows):
        keep = [i for i, row in enumerate(hand)
                if float(row.get("scores", {}).get("listing") or 0.0) > 0.0]
        if keep and len(keep) < len(hand) and not any(hand[i]["right"] for i in keep):
            out.append(_case(world, family, f"{case}#listings", [hand[i] for i in keep],
                             [ranked[i] for i in keep], depth, scored=False, answer="none",
                             right=[False] * len(keep)))
    return out


# ------------------------------------------------------------------ fitting


def fit_booster(data: Sequence[Case], seed: int) -> tuple[GradientBoostingClassifier,
                                                          learned.Scorer]:
    """The boosted trees over every candidate, fitted, and as the pure evaluator's scorer
    (uncalibrated: the logistic link)."""
    xs = np.vstack([c.x for c in data])
    ys = np.array([r for c in data for r in c.right])
    booster = GradientBoostingClassifier(random_state=seed, **BOOSTING).fit(xs, ys)
    trees = []
    for estimator in booster.estimators_[:, 0]:
        tree = estimator.tree_
        trees.append(learned.Tree(
            feature=tuple(int(f) for f in tree.feature),
            threshold=tuple(float(t) for t in tree.threshold),
            left=tuple(int(n) for n in tree.children_left),
            right=tuple(int(n) for n in tree.children_right),
            value=tuple(float(v) for v in tree.value[:, 0, 0])))
    lr = float(booster.learning_rate)
    # the prior's log-odds: the decision function less the trees' sum, at any point
    intercept = float(booster.decision_function(xs[:1])[0]) - lr * sum(
        t.predict(list(xs[0])) for t in trees)
    scorer = learned.Scorer(kind="boosting", features=learned.FEATURES, intercept=intercept,
                            learning_rate=lr, trees=tuple(trees))
    return booster, scorer


ANSWER_COLUMNS = [learned.ANSWER_FEATURES.index(name) for name in ANSWER_INPUTS]


def fit_answer(xs: np.ndarray, ys: np.ndarray) -> learned.Scorer:
    """A logistic regression over ANSWER_INPUTS (rows: vectors over ANSWER_FEATURES)."""
    picked = xs[:, ANSWER_COLUMNS]
    means = picked.mean(axis=0)
    scales = np.array(picked.std(axis=0))
    scales[scales == 0] = 1.0
    model = LogisticRegression(C=LOGISTIC_C, max_iter=5000).fit((picked - means) / scales, ys)
    return learned.Scorer(
        kind="logistic", features=ANSWER_INPUTS, intercept=float(model.intercept_[0]),
        coefficients=tuple(float(c) for c in model.coef_[0]),
        means=tuple(float(m) for m in means), scales=tuple(float(s) for s in scales))


def platt(raw: np.ndarray, ys: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Platt's sigmoid fitted on (raw score, label), sampled finely over the scores seen."""
    fitted = LogisticRegression(C=1e6, max_iter=1000).fit(raw.reshape(-1, 1), ys)
    xs = np.linspace(raw.min() - 1.0, raw.max() + 1.0, PLATT_POINTS)
    ps = fitted.predict_proba(xs.reshape(-1, 1))[:, 1]
    return tuple(float(v) for v in xs), tuple(float(v) for v in ps)


def fold_key(case: Case, by: str) -> str:
    """The fold a case belongs to: its family or its world (`by`)."""
    return case.family if by == "family" else case.world


def fold_of(data: Sequence[Case], by: str, groups: int = 0) -> list[str]:
    """Each case's fold: its family (or world, `by`) — dealt into `groups` folds when given —,
    else — too few — five folds of cases."""
    keys = [fold_key(c, by) for c in data]
    if len(set(keys)) <= 1:
        return [f"cases{i % 5}" for i in range(len(data))]
    if groups and groups < len(set(keys)):
        dealt = {key: f"group{i % groups}" for i, key in enumerate(sorted(set(keys)))}
        return [dealt[k] for k in keys]
    return keys


def _held_out_probabilities(data: Sequence[Case], folds: Sequence[str], fold: str, seed: int,
                            extra: Sequence[Case], by: str) -> dict[int, np.ndarray]:
    """One fold's cases' ranking probabilities from a model fitted on the other folds."""
    dealt = dict(zip((fold_key(c, by) for c in data), folds, strict=False))
    # scikit-learn's own prediction: equal to the pure evaluator's (a test checks it)
    fitted = [c for c, f in zip(data, folds, strict=True) if f != fold]
    fitted += [c for c in extra if dealt.get(fold_key(c, by), fold_key(c, by)) != fold]
    booster, _ = fit_booster(fitted, seed)
    return {i: booster.predict_proba(data[i].x)[:, 1]
            for i, f in enumerate(folds) if f == fold}


def out_of_fold_ranking(data: Sequence[Case], folds: Sequence[str], seed: int,
                        extra: Sequence[Case] = (), by: str = "world",
                        jobs: int = 1) -> list[np.ndarray]:
    """Each case's ranking probabilities from a model fitted on the other folds (and on the
    `extra` training-only cases of the other folds); `jobs` folds fitted at once, each in
    its own process (the boosted trees fit on one core)."""
    out: list[np.ndarray] = [np.zeros(0)] * len(data)
    names = sorted(set(folds))
    if jobs > 1:
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(pool.map(_held_out_probabilities, *zip(
                *((data, folds, fold, seed, extra, by) for fold in names), strict=True)))
    else:
        parts = [_held_out_probabilities(data, folds, fold, seed, extra, by) for fold in names]
    for part in parts:
        for i, probabilities in part.items():
            out[i] = probabilities
    return out


def answer_rows(data: Sequence[Case],
                probabilities: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each case's answer-model input from its ranking probabilities, and the label: the new
    first is the right page."""
    xs, ys = [], []
    for case, p in zip(data, probabilities, strict=True):
        first = learned.rank_order(list(p))[0]
        xs.append(learned.vector(learned.answer_features(case.features[first], list(p)),
                                 learned.ANSWER_FEATURES))
        ys.append(case.right[first])
    return np.array(xs), np.array(ys)


def out_of_fold_answer(xs: np.ndarray, ys: np.ndarray, folds: Sequence[str]) -> np.ndarray:
    raw = np.zeros(len(ys))
    keys = np.array(folds)
    for fold in sorted(set(folds)):
        held = keys == fold
        scorer = fit_answer(xs[~held], ys[~held])
        raw[held] = [scorer.raw(list(row)) for row in xs[held][:, ANSWER_COLUMNS]]
    return raw


# ------------------------------------------------------------------ answers


def told(data: Sequence[Case], says: Sequence[bool],
         right: Sequence[bool]) -> dict[str, dict[str, int]]:
    """Per world: scored cases answered right, dead cases answered wrong, decided dead cases."""
    out: dict[str, dict[str, int]] = {}
    for case, said, is_right in zip(data, says, right, strict=True):
        figures = out.setdefault(case.world, {"right": 0, "wrong": 0, "dead": 0, "scored": 0})
        figures["dead"] += 1
        figures["scored"] += int(case.scored)
        if said and is_right:
            figures["right"] += int(case.scored)
        elif said:
            figures["wrong"] += 1
    return out


def world_risk(wrong: int, decided: int, dead: int, target: float) -> float:
    """The chance that a new world of `dead` decided dead cases is answered wrong for more
    than `target` of them, when `wrong` of `decided` pooled decided cases were: the posterior
    predictive tail (beta-binomial; Jeffreys' prior on the rate). The rate's own uncertainty
    is counted, so a line read off a few worlds' three wrong answers is not trusted as one
    read off many: with many decided cases it tends to the binomial tail at the pooled rate,
    the rule before (which took 3 wrong of 1,735 for a rate known exactly)."""
    if not 0 <= wrong <= decided or decided == 0:
        raise ValueError(f"{wrong} wrong of {decided} decided cases")
    allowed = math.floor(target * dead + 1e-9)
    return float(betabinom.sf(allowed, dead, wrong + 0.5, decided - wrong + 0.5))


def choose_line(data: Sequence[Case], probability: np.ndarray, right: Sequence[bool],
                target: float, risk: float) -> float:
    """The lowest line at which a world of the training worlds' median size, answered wrong
    as the pooled out-of-fold answers at that line were, is wrong for more than `target` of
    its dead cases with probability at most `risk` (`world_risk`; the highest probability
    seen + a hair when none is safe).

    Why pooled: a world's own count is a few answers (1 % of ~250 is 2.5), so the strictest
    world's count — the rule before — is mostly its luck and rises with the number of
    worlds trained on (11 worlds: line 0.943; 19 worlds: 0.988, answering far less at the
    same pooled error). The pooled count is the evidence that grows with more worlds; the
    posterior predictive tail turns it into the per-world target."""
    dead = int(np.median(list(Counter(c.world for c in data).values())))
    return lowest_safe_line(probability, [not r for r in right], dead, target, risk)


def lowest_safe_line(probability: Sequence[float] | np.ndarray, wrong: Sequence[bool],
                     dead: int, target: float, risk: float) -> float:
    """The lowest of the `probability` values at which answering every case at or above it,
    given how many of them are `wrong`, leaves a new world of `dead` decided dead cases wrong
    for more than `target` of them with probability at most `risk` (`world_risk`; the
    highest probability + a hair when none is)."""
    said = np.asarray(probability, dtype=float)
    bad = np.asarray(wrong, dtype=bool)
    for line in sorted(set(float(p) for p in said)):
        if world_risk(int(((said >= line) & bad).sum()), len(said), dead, target) <= risk:
            return line
    return float(said.max()) + 1e-6


def scores(ys: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    auc = roc_auc_score(ys, probability) if 0 < ys.sum() < len(ys) else float("nan")
    return {"auc": round(float(auc), 4),
            "brier": round(float(brier_score_loss(ys, probability)), 4)}


def world_table(data: Sequence[Case], learned_right: Sequence[bool], probability: np.ndarray,
                line: float) -> list[dict[str, Any]]:
    """Per world, out of fold: success@1 hand → learned (of scored cases in the decided set),
    answered right / wrong at the hand line → at the learned line."""
    hand_says = [policy.recommends(c.hand_confidence) for c in data]
    hand_right = [c.right[0] for c in data]  # every decided case has a candidate
    off = told(data, hand_says, hand_right)
    on = told(data, list(probability >= line), learned_right)
    table = []
    for world in dict.fromkeys(c.world for c in data):
        idx = [i for i, c in enumerate(data) if c.world == world]
        scored = [i for i in idx if data[i].scored]
        table.append({
            "world": world, "family": data[idx[0]].family, "decided": len(idx),
            "scored": len(scored),
            "success_at_1_hand": round(sum(hand_right[i] for i in scored) / max(1, len(scored)), 4),
            "success_at_1_learned": round(sum(learned_right[i] for i in scored)
                                          / max(1, len(scored)), 4),
            "right_hand": off[world]["right"], "right_learned": on[world]["right"],
            "wrong_hand": off[world]["wrong"], "wrong_learned": on[world]["wrong"]})
    return table


# ------------------------------------------------------------------ commands


def families(cases: Mapping[str, set[str]]) -> dict[str, str]:
    """Worlds made from the same cases (half their dead URLs or more in common: a mutated
    world keeps its source's dead URLs; dev2 is dev's web) form one family, named after its
    first world: holding out a world while its twin is trained on would measure nothing."""
    family: dict[str, str] = {}
    for world, urls in cases.items():
        family[world] = next((family[other] for other, known in cases.items()
                              if other in family
                              and len(urls & known) >= 0.5 * min(len(urls), len(known))),
                             world)
    return family


def load(paths: Sequence[Path], augment: bool = False, listings: bool = False,
         ) -> tuple[list[Case], list[str], list[Case]]:
    """The decided cases of each world, the worlds, and (`augment`) the training-only
    `missing_variants`."""
    rows_of: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        world = world_name(path)
        if world in rows_of:
            raise UsageError(f"world {world} given twice")
        rows_of[world] = read_rows(path)
    family = families({w: {str(r["dead_url"]) for r in rows} for w, rows in rows_of.items()})
    data: list[Case] = []
    variants: list[Case] = []
    for path, (world, rows) in zip(paths, rows_of.items(), strict=True):
        found = examples(world, rows, family[world])
        if not found:
            raise UsageError(f"{path}: no decided case of method 'full'")
        data.extend(found)
        if augment:
            variants.extend(missing_variants(world, rows, family[world]))
        if listings:
            variants.extend(listing_variants(world, rows, family[world]))
    return data, list(rows_of), variants


def provenance_of(worlds: Sequence[str], roots: Sequence[Path]) -> list[dict[str, Any]]:
    out = []
    for world in worlds:
        item: dict[str, Any] = {"world": world}
        for root in roots:
            mutation = root / world / "MUTATION.json"
            if mutation.is_file():
                meta = json.loads(mutation.read_text(encoding="utf-8"))
                item.update({k: meta.get(k) for k in ("source", "seed", "drop_archive",
                                                      "drop_source")})
                break
        out.append(item)
    return out


def print_table(table: Sequence[Mapping[str, Any]]) -> None:
    print("| world (family) | success@1 hand → learned | answered right hand → learned "
          "(of scored) | answered wrong hand → learned (of decided dead) |")
    print("|---|---:|---:|---:|")
    for r in table:
        print(f"| {r['world']} ({r['family']}) | {r['success_at_1_hand']} → "
              f"{r['success_at_1_learned']} | {r['right_hand']} → {r['right_learned']} of "
              f"{r['scored']} | {r['wrong_hand']} → {r['wrong_learned']} of {r['decided']} |")


def train(args: argparse.Namespace) -> int:
    data, worlds, variants = load(args.features, args.augment_missing, args.augment_listings)
    if len(worlds) < 3:
        raise UsageError("give at least 3 worlds (leave-worlds-out needs them)")
    if args.fold_groups < 0 or args.fold_groups == 1 or args.jobs < 1:
        raise UsageError("--fold-groups takes 0 or 2 and more, --jobs 1 and more")
    folds = fold_of(data, args.folds, args.fold_groups)
    n_candidates = sum(len(c.right) for c in data)
    print(f"{len(data)} decided cases, {n_candidates} candidates, {len(worlds)} worlds, "
          f"{len(set(folds))} folds ({args.folds}), {len(learned.FEATURES)} features",
          file=sys.stderr)
    if variants:
        print(f"{len(variants)} training-only lists, every candidate wrong (a list without "
              "its right page, a list's listing pages alone)", file=sys.stderr)
    oof_rank = out_of_fold_ranking(data, folds, args.seed, variants, args.folds, args.jobs)
    xs, ys = answer_rows(data, oof_rank)
    raw = out_of_fold_answer(xs, ys, folds)
    calibration_x, calibration_y = platt(raw, ys)
    answer = replace(fit_answer(xs, ys), calibration_x=calibration_x,
                     calibration_y=calibration_y)
    oof = np.array([answer.calibrate(r) for r in raw])
    line = choose_line(data, oof, list(ys), args.error_target, args.risk)
    table = world_table(data, list(ys), oof, line)
    print_table(table)
    if args.oof_out:
        with args.oof_out.open("w", encoding="utf-8") as handle:
            for case, p, y, ranking_p in zip(data, oof, ys, oof_rank, strict=True):
                handle.write(json.dumps({"world": case.world, "case": case.case,
                                         "scored": case.scored, "answer": float(p),
                                         "right": bool(y), "ranking": [float(v) for v in
                                                                       ranking_p]}) + "\n")
    _, ranking = fit_booster([*data, *variants], args.seed)
    candidate_ys = np.array([r for c in data for r in c.right])
    candidate_oof = np.concatenate(oof_rank)
    provenance = {
        "trained": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python bench/train_ranking.py train " + " ".join(
            p.name for p in args.features) + f" --folds {args.folds} --seed {args.seed}"
                   + (f" --fold-groups {args.fold_groups}" if args.fold_groups else "")
                   + f" --error-target {args.error_target} --risk {args.risk}"
                   + (" --augment-missing" if args.augment_missing else "")
                   + (" --augment-listings" if args.augment_listings else ""),
        "worlds": provenance_of(worlds, args.world_root), "seed": args.seed,
        "folds": args.folds, "fold_groups": args.fold_groups, "cases": len(data),
        "candidates": n_candidates,
        "missing_variants": sum(v.case.endswith("#missing") for v in variants),
        "listing_variants": sum(v.case.endswith("#listings") for v in variants),
        "ranking_params": BOOSTING,
        "answer_params": {"inputs": list(ANSWER_INPUTS), "C": LOGISTIC_C, "calibration": "platt"},
        "error_target": args.error_target, "risk": args.risk,
        "line_rule": "lowest calibrated probability at which a world of the training worlds' "
                     "median size, answered wrong as the pooled out-of-fold answers at that "
                     "line were, is wrong for more than error_target of its decided dead cases "
                     "with probability at most risk (beta-binomial posterior predictive, "
                     "Jeffreys' prior)",
        "out_of_fold_ranking": scores(candidate_ys, candidate_oof),
        "out_of_fold_answer": scores(ys, oof), "out_of_fold_table": table,
    }
    model = learned.AnswerModel(ranking=ranking, answer=answer, depth=policy.LEARNED_DEPTH,
                                recommend_at=line, provenance=provenance)
    model = learned.AnswerModel.from_json(json.loads(json.dumps(model.to_json())))
    print(f"shipped: line {line:.4f}, out of fold: ranking {provenance['out_of_fold_ranking']},"
          f" answer {provenance['out_of_fold_answer']}", file=sys.stderr)
    if not args.dry_run:
        args.out.write_text(json.dumps(model.to_json(), separators=(",", ":")) + "\n",
                            encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def measure(args: argparse.Namespace) -> int:
    """One world's eval re-decided by the hand line and by the models (module docstring)."""
    model = learned.load_model(args.model) if args.model else learned.shipped_model()
    report = json.loads(args.report.read_text(encoding="utf-8"))
    try:
        answered = report["answered"]["overall"]
        base = {"right": int(answered["right"]), "wrong": int(answered["wrong"])}
        scored_n, dead_n = int(answered["n"]), int(answered["dead"])
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"{args.report}: not a `pagetrail eval --json` report of one world") \
            from None
    overloaded = budget_overruns(report)
    if overloaded:  # its rows are what a starved recovery found: they measure the machine
        raise UsageError(f"{args.report}: {overloaded}")
    figures = {mode: dict(base, mismatch=0, top_right=0) for mode in ("hand", "learned")}
    eval_top_right = 0  # decided scored cases whose first candidate (as the eval ranked) is right
    bands = {f"{low:.1f}-{high:.1f}": [0, 0] for low, high in BANDS}
    rows = read_rows(args.features)
    for case_rows in cases_of(rows).values():
        if not decided(case_rows):
            continue
        hand, ranked = listed(case_rows)
        eval_said = case_rows[0]["answer"] in SCORED
        eval_right = bool(case_rows[0]["right"])
        scored = hand[0]["expect_kind"] in SCORED
        eval_top_right += int(eval_right and scored)
        decision = learned.decide(str(hand[0]["dead_url"]), ranked,
                                  archived_copy=bool(hand[0]["archived_copy_found"]),
                                  model=model)
        band = bands[next(f"{low:.1f}-{high:.1f}" for low, high in BANDS
                          if decision.answer < high or high == BANDS[-1][1])]
        first = decision.order[0]
        band[0] += 1
        band[1] += int(bool(hand[first]["right"]))
        hand_outcome = (policy.recommends(ranked[0].confidence), bool(hand[0]["right"]))
        # the learned answer decides every case, weak anchors too (recovery.answer.for_dead)
        outcomes = {"hand": hand_outcome,
                    "learned": (policy.recommends(decision.answer, decision.recommend_at),
                                bool(hand[first]["right"]))}
        for mode, (says, is_right) in outcomes.items():
            f = figures[mode]
            f["top_right"] += int(is_right and scored)
            if (says, is_right) == (eval_said, eval_right):
                continue
            f["mismatch"] += int(says != eval_said or (says and is_right != eval_right))
            # take the eval's outcome back, put this rule's in
            for sign, (said, good) in ((-1, (eval_said, eval_right)), (1, (says, is_right))):
                if said and good:
                    f["right"] += sign * int(scored)
                elif said:
                    f["wrong"] += sign
    out: dict[str, Any] = {"world": report.get("world") or world_name(args.features),
                           "scored": scored_n, "dead": dead_n,
                           "recommend_at": model.recommend_at,
                           "success_at_1_eval": report["overall"]["success_at_1"]}
    for mode, f in figures.items():
        out.update({f"right_{mode}": f["right"], f"wrong_{mode}": f["wrong"],
                    f"answered_right_{mode}": round(f["right"] / max(1, scored_n), 4),
                    f"answered_wrong_{mode}": round(f["wrong"] / max(1, dead_n), 4),
                    # the eval's success@1 moved by what this rule puts first in decided cases
                    f"success_at_1_{mode}": round(out["success_at_1_eval"] + (
                        f["top_right"] - eval_top_right) / max(1, scored_n), 4),
                    f"mismatch_{mode}": f["mismatch"]})
    out["bands"] = {band: f"{right} right of {n}" for band, (n, right) in bands.items()}
    out["listing_alone"] = listing_alone(rows, model)
    print(json.dumps(out))
    return 0


def listing_alone(rows: Iterable[Mapping[str, Any]], model: learned.AnswerModel,
                  ) -> dict[str, int]:
    """A thin search, simulated: each decided case whose list holds listing pages (tags,
    categories, link lists) and none of them right, decided on those pages alone. `said`:
    how often the model would tell one of them — what a unit test's hand-made tag page
    cannot measure (its scores sit where no training list has one)."""
    answers = thin_list_answers(rows, model)
    return {"cases": len(answers),
            "said": sum(policy.recommends(a, model.recommend_at) for a in answers)}


def thin_list_answers(rows: Iterable[Mapping[str, Any]], model: learned.AnswerModel,
                      ) -> list[float]:
    """The answer probability of each thin list (`listing_alone`): each one told is a wrong
    answer."""
    answers = []
    for _case_id, hand, ranked in _decided_lists(rows):
        pages = [(row, item) for row, item in zip(hand, ranked, strict=True)
                 if float(row.get("scores", {}).get("listing") or 0.0) > 0.0]
        if not pages or any(row["right"] for row, _item in pages):
            continue
        answers.append(learned.decide(str(hand[0]["dead_url"]), [item for _row, item in pages],
                                      archived_copy=bool(hand[0]["archived_copy_found"]),
                                      model=model).answer)
    return answers


# ------------------------------------------------------------------ the line on unseen worlds


@dataclass(frozen=True)
class HeldOut:
    """One world the model never saw, decided by it: each decided dead case's answer
    probability, whether its new first is wrong, whether it is a scored case (moved or
    replaced) and whether it is one whose new first is right; each thin list's answer
    probability."""

    world: str
    answers: np.ndarray
    wrong: np.ndarray
    scored: np.ndarray
    scored_right: np.ndarray
    thin: np.ndarray

    def told(self, line: float) -> dict[str, int]:
        """What the world is told at `line`."""
        says = self.answers >= line
        return {"right": int((says & self.scored_right).sum()),
                "scored": int(self.scored.sum()), "wrong": int((says & self.wrong).sum()),
                "dead": len(self.answers), "thin_said": int((self.thin >= line).sum()),
                "thin": len(self.thin)}


def held_out(world: str, rows: Sequence[Mapping[str, Any]],
             model: learned.AnswerModel) -> HeldOut:
    answers, wrong, scored, right = [], [], [], []
    for _case_id, hand, ranked in _decided_lists(rows):
        decision = learned.decide(str(hand[0]["dead_url"]), ranked,
                                  archived_copy=bool(hand[0]["archived_copy_found"]),
                                  model=model)
        first_right = bool(hand[decision.order[0]]["right"])
        answers.append(decision.answer)
        wrong.append(not first_right)
        scored.append(hand[0]["expect_kind"] in SCORED)
        right.append(first_right and scored[-1])
    if not answers:
        raise UsageError(f"{world}: no decided case of method 'full'")
    return HeldOut(world=world, answers=np.array(answers), wrong=np.array(wrong),
                   scored_right=np.array(right),
                   scored=np.array(scored),
                   thin=np.array(thin_list_answers(rows, model), dtype=float))


def line_on_held_out(worlds: Sequence[HeldOut], target: float, risk: float,
                     ) -> dict[str, float]:
    """The line by `lowest_safe_line` over the pooled held-out decisions (a world of their
    median size), and the same rule over their thin lists, each told one a wrong answer (a
    web whose search finds only listing pages); `chosen` is the higher of the two."""
    dead = int(np.median([len(w.answers) for w in worlds]))
    answers = np.concatenate([w.answers for w in worlds])
    wrong = np.concatenate([w.wrong for w in worlds])
    cases = lowest_safe_line(answers, list(wrong), dead, target, risk)
    thin = np.concatenate([w.thin for w in worlds])
    thin_line = lowest_safe_line(thin, [True] * len(thin), dead, target, risk) if len(thin) \
        else 0.0
    return {"cases": cases, "thin_lists": thin_line, "chosen": max(cases, thin_line),
            "median_dead": dead}


def line(args: argparse.Namespace) -> int:
    """Choose the model's recommend line on worlds it never saw (module docstring)."""
    model = learned.load_model(args.model) if args.model else learned.shipped_model()
    trained_on = {str(w.get("world")) for w in model.provenance.get("worlds", [])}
    worlds: list[HeldOut] = []
    for features in args.features:
        world = world_name(features)
        if world in trained_on:
            raise UsageError(f"{world}: the model was trained on it (a line is chosen on "
                             "worlds the model never saw)")
        if world in {w.world for w in worlds}:
            raise UsageError(f"world {world} given twice")
        report_path = features.with_name(f"{world}.json")
        if not report_path.is_file():
            raise UsageError(f"{features}: its eval report {report_path} is missing")
        overloaded = budget_overruns(json.loads(report_path.read_text(encoding="utf-8")))
        if overloaded:
            raise UsageError(f"{report_path}: {overloaded}")
        worlds.append(held_out(world, read_rows(features), model))
    if len(worlds) < 3:
        raise UsageError("give at least 3 worlds the model never saw (one world's line is "
                         "its luck)")
    chosen = line_on_held_out(worlds, args.error_target, args.risk)
    print("| world | line | answered right | answered wrong | thin lists told |")
    print("|---|---:|---:|---:|---:|")
    for at in sorted({model.recommend_at, chosen["chosen"]}):
        told = [(w.world, w.told(at)) for w in worlds]
        total = {key: sum(t[key] for _w, t in told) for key in told[0][1]}
        for name, t in [*told, ("**all**", total)]:
            print(f"| {name} | {at:.3f} | {t['right']} of {t['scored']} | {t['wrong']} of "
                  f"{t['dead']} | {t['thin_said']} of {t['thin']} |")
    print(f"line: {model.recommend_at:.4f} → {chosen['chosen']:.4f} (decided cases "
          f"{chosen['cases']:.4f}, thin lists {chosen['thin_lists']:.4f})", file=sys.stderr)
    provenance = dict(model.provenance)
    provenance["line"] = {
        "chosen": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python bench/train_ranking.py line " + " ".join(
            p.name for p in args.features)
                   + f" --error-target {args.error_target} --risk {args.risk}",
        "worlds": provenance_of([w.world for w in worlds], args.world_root),
        "error_target": args.error_target, "risk": args.risk, "trained_line":
            provenance.get("line", {}).get("trained_line", model.recommend_at),
        "rule": "the lowest line at which a new world of the held-out worlds' median size "
                "is wrong for more than error_target of its decided dead cases with "
                "probability at most risk (beta-binomial posterior predictive from the "
                "model's own pooled decisions on worlds it never saw, Jeffreys' prior); the "
                "same over their thin lists, each told one wrong; the higher of the two",
        **{k: round(v, 6) for k, v in chosen.items()},
        "table": [{"world": w.world, **w.told(chosen["chosen"])} for w in worlds]}
    if not args.dry_run:
        new = replace(model, recommend_at=chosen["chosen"], provenance=provenance)
        args.out.write_text(json.dumps(new.to_json(), separators=(",", ":")) + "\n",
                            encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("train", help="fit, validate out of fold, write the models")
    t.add_argument("features", type=Path, nargs="+", metavar="FEATURES.jsonl")
    t.add_argument("--out", type=Path, default=learned.MODEL_FILE)
    t.add_argument("--folds", choices=("family", "world"), default="world")
    t.add_argument("--fold-groups", type=int, default=0, metavar="N",
                   help="deal the worlds (or families) into N folds (0: one fold each)")
    t.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="fit N folds at once, one process each")
    t.add_argument("--error-target", type=float, default=0.01)
    t.add_argument("--risk", type=float, default=0.05,
                   help="the chance allowed that a world is wrong beyond the target")
    t.add_argument("--augment-missing", action="store_true",
                   help="also fit the ranking on each list without its right page")
    t.add_argument("--augment-listings", action="store_true",
                   help="also fit the ranking on each list's listing pages alone")
    t.add_argument("--oof-out", type=Path, default=None,
                   help="also write each case's out-of-fold answer probability (JSON lines)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--world-root", type=Path, action="append", default=[],
                   help="where mutated worlds live (their MUTATION.json: source, seed)")
    t.add_argument("--dry-run", action="store_true")
    t.set_defaults(func=train)
    m = commands.add_parser("measure", help="one world's eval re-decided both ways")
    m.add_argument("features", type=Path, metavar="FEATURES.jsonl")
    m.add_argument("report", type=Path, metavar="REPORT.json")
    m.add_argument("--model", type=Path, default=None)
    m.set_defaults(func=measure)
    c = commands.add_parser("line", help="choose the recommend line on worlds the model "
                                         "never saw")
    c.add_argument("features", type=Path, nargs="+", metavar="FEATURES.jsonl")
    c.add_argument("--model", type=Path, default=None)
    c.add_argument("--out", type=Path, default=learned.MODEL_FILE)
    c.add_argument("--error-target", type=float, default=0.01)
    c.add_argument("--risk", type=float, default=0.01,
                   help="the chance allowed that a world is wrong beyond the target")
    c.add_argument("--world-root", type=Path, action="append", default=[],
                   help="where mutated worlds live (their MUTATION.json: source, seed)")
    c.add_argument("--dry-run", action="store_true")
    c.set_defaults(func=line)
    args = parser.parse_args(argv)
    paths = args.features if args.command in ("train", "line") else [args.features, args.report]
    for path in paths:
        if not path.is_file():
            print(f"error: {path}: no such file", file=sys.stderr)
            return 2
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file that cannot be read or written (--out, --oof-out)
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
