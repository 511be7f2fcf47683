"""Train the learned answer confidence across worlds, validated leave-worlds-out.

    python bench/train_confidence.py train FEATURES.jsonl [FEATURES.jsonl ...]
        [--out tools/ranking/data/confidence_model.json] [--kind boosting|logistic]
        [--error-target 0.01] [--calibration platt|isotonic] [--C 0.3] [--seed 0]
        [--world-root DIR ...] [--dry-run]
    python bench/train_confidence.py measure FEATURES.jsonl REPORT.json [--model FILE]

Each FEATURES file is one world's `pagetrail eval WORLD --features FILE` (method `full`), named
WORLD.features.jsonl; REPORT.json (for `measure`) is that eval's `--json` report. One example
per dead case whose answer the answer step decides (`recovery.answer.for_dead`: moved,
replacement, archived or none): the top live candidate's features
(`ranking.learned.candidate_features`, the code inference runs) and its label, "the top
candidate is the right page".

`train`:
1. leave-worlds-out: worlds made from the same cases form a family (dev and dev2, a mutated
   world and its source); for each family, the whole procedure — model, calibration on
   out-of-fold predictions, recommend line — is fitted on the other families only and judged
   on each of its worlds: AUC, Brier score, answered right / wrong with the learned line
   against the shipped line (`policy.RECOMMEND_AT` on the ranker's confidence);
2. the shipped model: fitted on every world, calibrated (Platt's sigmoid by default, or
   isotonic) on every world's out-of-family predictions, the recommend line the lowest calibrated probability at which no
   world's out-of-world answers are wrong for more than `--error-target` of its dead cases;
3. written as JSON with its provenance (worlds and their seeds, features, scores, line, date).

`measure`: a world's answered right / wrong / success@1 with the switch off (the eval as it
ran) and on (each for_dead answer re-decided by the model's probability and line).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score

from pagetrail.tools import policy
from pagetrail.tools.ranking import learned

DECIDED = frozenset({"moved", "replacement", "archived", "none"})  # answers for_dead gives
SCORED = frozenset({"moved", "replacement"})
BOOSTING = {"n_estimators": 120, "max_depth": 2, "learning_rate": 0.05, "subsample": 0.8,
            "min_samples_leaf": 10}
LOGISTIC_C = 0.3
BANDS = ((0.0, 0.1), (0.1, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0))


class UsageError(Exception):
    """Input the command cannot train or measure on (named, exit 2)."""


@dataclass(frozen=True)
class Example:
    world: str
    family: str  # worlds made from the same cases (a mutated world and its source) share one
    case: str
    scored: bool  # a right live page exists (moved / replacement)
    right: bool  # the top candidate is one of the right pages
    confidence: float  # the ranker's confidence of the top candidate
    answer: str  # what the eval answered (switch off)
    x: tuple[float, ...]


def world_name(path: Path) -> str:
    name = path.name
    for suffix in (".features.jsonl", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def read_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def examples(world: str, rows: Iterable[Mapping[str, Any]], family: str = "") -> list[Example]:
    """One example per decided dead case: its top live candidate in its list."""
    by_case: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("method", "full") == "full":
            by_case.setdefault(str(row["case"]), []).append(row)
    out = []
    for case, case_rows in by_case.items():
        case_rows.sort(key=lambda r: int(r["rank"]))
        first = case_rows[0]
        if first["expect_kind"] == "alive" or first["answer"] not in DECIDED:
            continue
        ranked = [learned.listed_from_record(r) for r in case_rows]
        features = learned.candidate_features(first["dead_url"], ranked, 0,
                                              archived_copy=bool(first["archived_copy_found"]))
        out.append(Example(world=world, family=family or world, case=case, scored=first["expect_kind"] in SCORED,
                           right=bool(first["right"]), confidence=float(first["confidence"]),
                           answer=str(first["answer"]), x=tuple(learned.vector(features))))
    return out


# ------------------------------------------------------------------ fitting


def fit(kind: str, xs: np.ndarray, ys: np.ndarray, seed: int) -> learned.ConfidenceModel:
    """A model of the raw score (uncalibrated)."""
    if kind == "logistic":
        means = xs.mean(axis=0)
        scales = np.array(xs.std(axis=0))
        scales[scales == 0] = 1.0
        model = LogisticRegression(C=LOGISTIC_C, max_iter=2000)
        model.fit((xs - means) / scales, ys)
        return learned.ConfidenceModel(
            kind="logistic", features=learned.FEATURES, intercept=float(model.intercept_[0]),
            coefficients=tuple(float(c) for c in model.coef_[0]),
            means=tuple(float(m) for m in means), scales=tuple(float(s) for s in scales))
    booster = GradientBoostingClassifier(random_state=seed, **BOOSTING)
    booster.fit(xs, ys)
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
    tree_sum = sum(t.predict(list(xs[0])) for t in trees)
    intercept = float(booster.decision_function(xs[:1])[0]) - lr * tree_sum
    return learned.ConfidenceModel(kind="boosting", features=learned.FEATURES,
                                   intercept=intercept, learning_rate=lr, trees=tuple(trees))


def raw_scores(model: learned.ConfidenceModel, xs: Sequence[Sequence[float]]) -> np.ndarray:
    return np.array([model.raw(x) for x in xs])


CALIBRATION = "platt"  # or "isotonic" (set from --calibration)


def isotonic(raw: np.ndarray, ys: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The calibration map as points (x → probability, linear between them): isotonic
    regression's, or Platt's sigmoid sampled finely over the scores seen."""
    if CALIBRATION == "platt":
        platt = LogisticRegression(C=1e6, max_iter=1000).fit(raw.reshape(-1, 1), ys)
        xs = np.linspace(raw.min() - 1.0, raw.max() + 1.0, 256)
        ps = platt.predict_proba(xs.reshape(-1, 1))[:, 1]
        return tuple(float(v) for v in xs), tuple(float(v) for v in ps)
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0)
    iso.fit(raw, ys.astype(float))
    return (tuple(float(v) for v in iso.X_thresholds_),
            tuple(float(v) for v in iso.y_thresholds_))


def with_calibration(model: learned.ConfidenceModel, cal: tuple[tuple[float, ...], ...],
                     recommend_at: float = 0.5) -> learned.ConfidenceModel:
    return replace(model, calibration_x=cal[0], calibration_y=cal[1], recommend_at=recommend_at)


def fold_of(data: Sequence[Example]) -> list[str]:
    """The folds: families of worlds when there are two or more, else worlds, else (one
    world) five folds of its cases."""
    if len({e.family for e in data}) > 1:
        return [e.family for e in data]
    if len({e.world for e in data}) > 1:
        return [e.world for e in data]
    return [f"cases{i % 5}" for i in range(len(data))]


def out_of_world(kind: str, data: Sequence[Example], seed: int) -> np.ndarray:
    """Each example's raw score from a model fitted on the other folds (`fold_of`)."""
    folds = fold_of(data)
    raw = np.zeros(len(data))
    for fold in sorted(set(folds)):
        train = [e for e, f in zip(data, folds, strict=True) if f != fold]
        model = fit(kind, np.array([e.x for e in train]), np.array([e.right for e in train]),
                    seed)
        idx = [i for i, f in enumerate(folds) if f == fold]
        raw[idx] = raw_scores(model, [data[i].x for i in idx])
    return raw


# ------------------------------------------------------------------ answers


def told(examples_: Sequence[Example], probability: np.ndarray | None,
         line: float) -> dict[str, dict[str, int]]:
    """Per world: scored cases answered right, dead cases answered wrong, dead cases (with the
    switch on when `probability` is given, else as the eval answered)."""
    out: dict[str, dict[str, int]] = {}
    for i, e in enumerate(examples_):
        figures = out.setdefault(e.world, {"right": 0, "wrong": 0, "dead": 0, "scored": 0})
        says = (e.answer in SCORED) if probability is None else bool(probability[i] >= line)
        figures["dead"] += 1
        figures["scored"] += int(e.scored)
        if says and e.right:
            figures["right"] += int(e.scored)
        elif says:
            figures["wrong"] += 1
    return out


def choose_line(examples_: Sequence[Example], probability: np.ndarray,
                target: float) -> float:
    """The lowest line at which no world's answers are wrong for more than `target` of its
    dead cases (the highest probability seen + a hair when none is safe)."""
    for line in sorted(set(float(p) for p in probability)):
        figures = told(examples_, probability, line)
        if all(f["wrong"] <= target * f["dead"] for f in figures.values()):
            return line
    return float(probability.max()) + 1e-6


def scores(ys: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    auc = roc_auc_score(ys, probability) if 0 < ys.sum() < len(ys) else float("nan")
    return {"auc": round(float(auc), 4),
            "brier": round(float(brier_score_loss(ys, probability)), 4)}


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


def load(paths: Sequence[Path]) -> tuple[list[Example], list[str]]:
    rows_of: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        world = world_name(path)
        if world in rows_of:
            raise UsageError(f"world {world} given twice")
        rows_of[world] = read_rows(path)
    family = families({w: {str(r["dead_url"]) for r in rows} for w, rows in rows_of.items()})
    data: list[Example] = []
    for path, (world, rows) in zip(paths, rows_of.items(), strict=True):
        found = examples(world, rows, family[world])
        if not found:
            raise UsageError(f"{path}: no decided case of method 'full'")
        data.extend(found)
    return data, list(rows_of)


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


def lowo(kind: str, data: list[Example], target: float, seed: int) -> list[dict[str, Any]]:
    """The whole procedure fitted without each fold (family of worlds), judged on each of its
    worlds; inside, the calibration and line come from the other folds' out-of-fold scores."""
    report = []
    folds = fold_of(data)
    for held_fold in sorted(set(folds)):
        inner = [e for e, f in zip(data, folds, strict=True) if f != held_fold]
        held_worlds = sorted({e.world for e, f in zip(data, folds, strict=True)
                              if f == held_fold})
        inner_raw = out_of_world(kind, inner, seed)
        inner_y = np.array([e.right for e in inner])
        cal = isotonic(inner_raw, inner_y)
        model = with_calibration(fit(kind, np.array([e.x for e in inner]), inner_y, seed), cal)
        line = choose_line(inner, np.array([model.calibrate(r) for r in inner_raw]), target)
        report.extend(judge(model, line, [e for e in data if e.world in held_worlds]))
    return report


def judge(model: learned.ConfidenceModel, line: float,
          data: Sequence[Example]) -> list[dict[str, Any]]:
    report = []
    for held in sorted({e.world for e in data}):
        test = [e for e in data if e.world == held]
        prob = np.array([model.calibrate(model.raw(e.x)) for e in test])
        ys = np.array([e.right for e in test])
        on, off = told(test, prob, line)[held], told(test, None, line)[held]
        hand = np.array([e.confidence for e in test])
        report.append({"world": held, "family": test[0].family, "line": round(line, 4),
                       **scores(ys, prob),
                       "auc_ranker": scores(ys, hand)["auc"], "decided": len(test),
                       "scored": on["scored"], "right_off": off["right"],
                       "right_on": on["right"], "wrong_off": off["wrong"],
                       "wrong_on": on["wrong"]})
    return report


def train(args: argparse.Namespace) -> int:
    global CALIBRATION, LOGISTIC_C
    CALIBRATION, LOGISTIC_C = args.calibration, args.C
    data, worlds = load(args.features)
    if len(worlds) < 3:
        raise UsageError("give at least 3 worlds (leave-worlds-out needs them)")
    ys = np.array([e.right for e in data])
    print(f"{len(data)} decided cases, {int(ys.sum())} with the right page first, "
          f"{len(worlds)} worlds, {len(learned.FEATURES)} features", file=sys.stderr)
    report = lowo(args.kind, data, args.error_target, args.seed)
    print("| held-out world (family) | AUC (ranker's) | Brier | line | right off → on (of scored) | "
          "wrong off → on (of decided dead) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in report:
        print(f"| {r['world']} ({r['family']}) | {r['auc']} ({r['auc_ranker']}) | {r['brier']} | {r['line']} | "
              f"{r['right_off']} → {r['right_on']} of {r['scored']} | "
              f"{r['wrong_off']} → {r['wrong_on']} of {r['decided']} |")
    raw = out_of_world(args.kind, data, args.seed)
    cal = isotonic(raw, ys)
    model = with_calibration(fit(args.kind, np.array([e.x for e in data]), ys, args.seed), cal)
    oof = np.array([model.calibrate(r) for r in raw])
    line = choose_line(data, oof, args.error_target)
    provenance = {
        "trained": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python bench/train_confidence.py train " + " ".join(
            p.name for p in args.features) + f" --kind {args.kind} --seed {args.seed}"
                   f" --calibration {CALIBRATION} --C {LOGISTIC_C}",
        "worlds": provenance_of(worlds, args.world_root), "seed": args.seed,
        "examples": len(data), "positives": int(ys.sum()),
        "params": BOOSTING if args.kind == "boosting" else {"C": LOGISTIC_C},
        "calibration": CALIBRATION,
        "error_target": args.error_target,
        "line_rule": "lowest calibrated probability at which no world's out-of-world answers "
                     "are wrong for more than error_target of its decided dead cases",
        "out_of_world": scores(ys, oof), "leave_world_out": report,
    }
    model = with_calibration(model, cal, recommend_at=line)
    model = learned.ConfidenceModel.from_json({**model.to_json(), "provenance": provenance})
    print(f"shipped: line {line:.4f}, out-of-world {provenance['out_of_world']}",
          file=sys.stderr)
    if not args.dry_run:
        args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def measure(args: argparse.Namespace) -> int:
    """Switch off and on, from one eval (run either way): every answer for_dead decided is
    re-decided by both rules — the ranker's confidence at `policy.RECOMMEND_AT` (off), the
    model's probability at its line (on) — and the eval's own figures moved by the changes.
    `mismatch_off` / `mismatch_on` count decided cases where that rule does not give the
    answer the eval gave: 0 for the mode the eval ran in (the integration's check)."""
    model = learned.load_model(args.model) if args.model else learned.shipped_model()
    report = json.loads(args.report.read_text(encoding="utf-8"))
    answered = report["answered"]["overall"]
    by_case: dict[str, list[dict[str, Any]]] = {}
    for row in read_rows(args.features):
        if row.get("method", "full") == "full":
            by_case.setdefault(str(row["case"]), []).append(row)
    figures = {mode: {"right": answered["right"], "wrong": answered["wrong"], "mismatch": 0}
               for mode in ("off", "on")}
    # the calibration as this world met it: top candidates by learned probability band
    bands = {f"{low:.1f}-{high:.1f}": [0, 0] for low, high in BANDS}
    for case_rows in by_case.values():
        case_rows.sort(key=lambda r: int(r["rank"]))
        first = case_rows[0]
        if first["expect_kind"] == "alive" or first["answer"] not in DECIDED:
            continue
        ranked = [learned.listed_from_record(r) for r in case_rows]
        p = learned.top_probability(first["dead_url"], ranked,
                                    archived_copy=bool(first["archived_copy_found"]),
                                    model=model)
        if p is not None:
            band = bands[next(f"{low:.1f}-{high:.1f}" for low, high in BANDS
                              if p < high or high == BANDS[-1][1])]
            band[0] += 1
            band[1] += int(bool(first["right"]))
        was = first["answer"] in SCORED
        says = {"off": policy.recommends(float(first["confidence"])),
                "on": p is not None and policy.recommends(p, model.recommend_at)}
        for mode, now in says.items():
            if now == was:
                continue
            sign = 1 if now else -1
            figures[mode]["mismatch"] += 1
            if first["right"]:
                figures[mode]["right"] += sign * int(first["expect_kind"] in SCORED)
            else:
                figures[mode]["wrong"] += sign
    out: dict[str, Any] = {"world": report.get("world") or world_name(args.features),
                           "scored": answered["n"], "dead": answered["dead"],
                           "success_at_1": report["overall"]["success_at_1"]}
    for mode, f in figures.items():
        out.update({f"right_{mode}": f["right"], f"wrong_{mode}": f["wrong"],
                    f"answered_right_{mode}": round(f["right"] / answered["n"], 4),
                    f"answered_wrong_{mode}": round(f["wrong"] / answered["dead"], 4),
                    f"mismatch_{mode}": f["mismatch"]})
    out["bands"] = {band: f"{right} right of {n}" for band, (n, right) in bands.items()}
    print(json.dumps(out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("train", help="fit, validate leave-worlds-out, write the model")
    t.add_argument("features", type=Path, nargs="+", metavar="FEATURES.jsonl")
    t.add_argument("--out", type=Path, default=learned.MODEL_FILE)
    t.add_argument("--kind", choices=("boosting", "logistic"), default="boosting")
    t.add_argument("--error-target", type=float, default=0.01)
    t.add_argument("--calibration", choices=("isotonic", "platt"), default="platt")
    t.add_argument("--C", type=float, default=LOGISTIC_C, help="logistic regularisation")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--world-root", type=Path, action="append", default=[],
                   help="where mutated worlds live (their MUTATION.json: source, seed)")
    t.add_argument("--dry-run", action="store_true")
    t.set_defaults(func=train)
    m = commands.add_parser("measure", help="answered right/wrong with the switch off and on")
    m.add_argument("features", type=Path, metavar="FEATURES.jsonl")
    m.add_argument("report", type=Path, metavar="REPORT.json")
    m.add_argument("--model", type=Path, default=None)
    m.set_defaults(func=measure)
    args = parser.parse_args(argv)
    paths = args.features if args.command == "train" else [args.features, args.report]
    for path in paths:
        if not path.is_file():
            print(f"error: {path}: no such file", file=sys.stderr)
            return 2
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
