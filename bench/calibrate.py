"""Fit the confidence calibration of the ranking on one or more testbed worlds.

    python bench/calibrate.py WORLD [WORLD ...] [--out FILE (default: policy.FITTED_FILE)]
        [--folds 5] [--samples FILE [--reuse]] [--dry-run]

Serves each WORLD with the testbed runner, recovers every case with the full pipeline (a fresh
store per case, no cache), and fits `rank.fit_calibration` on the top-10 live candidates of
every non-alive case of every world (label: the candidate is one of the case's expected URLs).
Before writing, it reports a k-fold cross-validated success@1 and confident-wrong rate of the
re-ranking per world and overall: folds are drawn by case (all candidates of a case fall in
the same fold), stratified by world, so a refit is measured on cases it was not fitted on.
With two worlds or more it also reports **leave-one-world-out**: for each world, a fit on the
other worlds only, measured on that world (the figure for a web the fit has never seen),
with the worst held-out world named; `--lowo-only` prints that and stops.

`--samples FILE` keeps every judged live candidate of every case (collect once, ~6-8 min a
world); `--reuse` refits from that file without serving anything, so fits can be compared in
seconds. The per-ranking features (`rank.ranking_features`) are recomputed from the stored
candidates, so a feature change needs no new collection.

The samples also keep each case's live candidates as ranked (`Candidate` with its `Scores`,
which carry what is weighed after the calibration: listing degree, offshoot, text shortfall),
and a case is judged by re-ranking them as the pipeline does (`ranking.replay`: direct-evidence
floors, the after-calibration factors, the weak-anchor clamp), so the figures are those of the
ranking a user gets; `replay` reports how many re-ranked cases differ from the pipeline's own
under the shipped values (0 expected) and `shipped` the shipped values' figures.
`--after-features` fits the after-calibration evidence as features instead of the hand-set
factors; bench/sweep_factors.py sweeps those factors leave-one-world-out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from pagetrail.store import Store
from pagetrail.tools.models import Candidate, Recovery
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.policy import CONFIDENT, FITTED_FILE, WEAK_ANCHOR_CLAMP
from pagetrail.tools.ranking.rank import (
    FEATURES,
    Calibration,
    default_calibration,
    features,
    fit_calibration,
    ranking_features,
)
from pagetrail.tools.ranking.replay import (
    AFTER_FEATURES,
    AfterFactors,
    case_has_memento,
    rerank,
    values_of,
)
from pagetrail.tools.ranking.replay import (
    live as kept_by_ranking,
)
from pagetrail.tools.recovery.pipeline import recover
from pagetrail.tools.testbed import Testbed, load_world

Sample = tuple[dict[str, float], bool]
TRAIN_TOP = 10  # candidates of a case the fit sees: what a person would look at
SUCCESS_KINDS = ("moved", "replacement")


@dataclass
class Judged:
    """One non-alive case of a world and its live candidates, in the pipeline's order."""

    world: str
    case: dict[str, Any]
    samples: list[Sample]
    # The same live candidates as the pipeline ranked them (`Candidate.model_dump`: URL,
    # confidence, scores with what is weighed after the calibration): empty in samples
    # collected before they were kept.
    live: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        return self.case["expect"]["kind"] in SUCCESS_KINDS

    @cached_property
    def candidates(self) -> list[Candidate]:
        return kept_by_ranking([Candidate.model_validate(c) for c in self.live])

    @cached_property
    def values(self) -> list[dict[str, float]]:
        """The candidates' features within their ranking, as the ranking computes them."""
        return values_of(self.candidates, case_has_memento(self.candidates))

    @cached_property
    def labels(self) -> list[bool]:
        expected = {normalize_url(u) for u in self.case["expect"].get("urls", [])}
        return [normalize_url(c.url) in expected for c in self.candidates]

    @cached_property
    def weak_anchor(self) -> bool:
        """The answer step clamped every confidence (a weak anchor, `policy.WEAK_ANCHOR_CLAMP`):
        seen as stored confidences all at or under the clamp where the shipped ranking gives
        more."""
        if not self.candidates or any(c.confidence > WEAK_ANCHOR_CLAMP for c in self.candidates):
            return False
        return any(conf > WEAK_ANCHOR_CLAMP for conf, _c in self.rerank(default_calibration()))

    def rerank(self, calibration: Calibration, factors: AfterFactors | None = None
               ) -> list[tuple[float, Candidate]]:
        """The live candidates re-ranked (`replay.rerank`), before any weak-anchor clamp."""
        return rerank(self.candidates, calibration, factors, values=self.values)


async def collect(world_dir: Path, concurrency: int) -> list[tuple[dict[str, Any], Recovery]]:
    world = load_world(world_dir)
    cases = [case.raw for case in world.cases]
    limit = asyncio.Semaphore(concurrency)
    with tempfile.TemporaryDirectory(prefix="pagetrail-calibrate-") as scratch:
        async with Testbed(world) as testbed:
            async def one(case: dict[str, Any]) -> tuple[dict[str, Any], Recovery]:
                source = case.get("source") or {}
                date = case.get("link_date")
                store = Store(f"sqlite:///{Path(scratch) / (case['id'] + '.db')}")
                try:
                    async with limit:
                        recovery = await recover(
                            case["url"], source_url=source.get("url"),
                            anchor=source.get("anchor"), context=source.get("context"),
                            link_date=datetime.fromisoformat(date.replace("Z", "+00:00"))
                            if date else None,
                            settings=testbed.settings(database_url=store.url), store=store,
                            use_cache=False)
                finally:
                    store.dispose()
                return case, recovery

            return list(await asyncio.gather(*(one(c) for c in cases)))


def samples_of(case: dict[str, Any], recovery: Recovery) -> list[Sample]:
    """Every live candidate of a recovery: (features, is one of the expected URLs)."""
    expected = {normalize_url(u) for u in case["expect"].get("urls", [])}
    has_memento = recovery.memento is not None
    live = [c for c in recovery.candidates if c.kind != "archived"]
    return [(features(c.scores, has_memento and c.scores.content_cosine is not None),
             normalize_url(c.url) in expected) for c in live]


def live_of(recovery: Recovery) -> list[dict[str, Any]]:
    """The live candidates of a recovery as stored with the samples (same order)."""
    return [c.model_dump(mode="json") for c in recovery.candidates if c.kind != "archived"]


def with_ranking_features(samples: Sequence[Sample]) -> list[Sample]:
    """The samples of one case with the per-ranking features recomputed over all of them."""
    rows = ranking_features([f for f, _y in samples])
    return [(row, y) for row, (_f, y) in zip(rows, samples, strict=True)]


def assign_folds(judged: Sequence[Judged], folds: int) -> list[int]:
    """The fold of each case: round-robin within each world (in case-id order), so that a
    case's candidates never split and every fold holds a share of every world."""
    seen: dict[str, int] = {}
    out: list[int] = []
    for item in judged:
        position = seen.get(item.world, 0)
        seen[item.world] = position + 1
        out.append(position % folds)
    return out


def training_rows(judged: Sequence[Judged]) -> list[Sample]:
    """The top TRAIN_TOP candidates of each case in the pipeline's order, with the features
    the ranking computes (stored candidates) or the stored features (older samples)."""
    rows: list[Sample] = []
    for item in judged:
        if item.live:
            rows += list(zip(item.values, item.labels, strict=True))[:TRAIN_TOP]
        else:
            rows += with_ranking_features(item.samples)[:TRAIN_TOP]
    return rows


def judge(calibration: Calibration, item: Judged,
          factors: AfterFactors | None = None) -> tuple[bool, bool]:
    """(right at rank 1, confidently wrong) of a case re-ranked by `calibration`, with the
    after-calibration `factors` (default: the shipped ones) when the samples kept the
    candidates (`replay.rerank`); older samples are re-ranked by the calibration alone.

    Confidently wrong: a live candidate ranked first at ≥ CONFIDENT that is not an expected
    URL (on a scored case), or any live candidate so ranked on a case with no live answer."""
    if item.live:
        label = dict(zip((id(c) for c in item.candidates), item.labels, strict=True))
        reranked = [(conf, label[id(c)]) for conf, c in item.rerank(calibration, factors)]
        if item.weak_anchor:
            reranked = [(min(conf, WEAK_ANCHOR_CLAMP), y) for conf, y in reranked]
    else:
        reranked = sorted(((calibration.confidence(f), y)
                           for f, y in with_ranking_features(item.samples)),
                          key=lambda pair: -pair[0])
    if not reranked:
        return False, False
    confidence, correct = reranked[0]
    return correct, confidence >= CONFIDENT and not correct


def replay_check(item: Judged) -> tuple[int, bool]:
    """(candidates whose replayed confidence differs from the stored one, whether the top
    candidate differs) under the shipped calibration and factors: 0, False when the
    re-ranking reproduces the pipeline's."""
    reranked = item.rerank(default_calibration())
    if item.weak_anchor:
        reranked = [(min(conf, WEAK_ANCHOR_CLAMP), c) for conf, c in reranked]
    stored = {id(c): c.confidence for c in item.candidates}
    differ = sum(abs(conf - stored[id(c)]) > 1e-3 for conf, c in reranked)
    top_differs = bool(reranked) and reranked[0][1] is not item.candidates[0]
    return differ, top_differs


def report(judged: Sequence[Judged], outcomes: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """success@1 over scored cases and confident-wrong counts, per world and overall."""
    def summary(pairs: list[tuple[Judged, tuple[bool, bool]]]) -> dict[str, Any]:
        scored = [o for item, o in pairs if item.scored]
        abstain = [o for item, o in pairs if not item.scored]
        return {"n": len(scored),
                "success_at_1": round(sum(top for top, _w in scored) / max(len(scored), 1), 4),
                "confident_wrong": sum(w for _t, w in scored),
                "abstention_n": len(abstain),
                "abstention_confident_wrong": sum(w for _t, w in abstain)}

    pairs = list(zip(judged, outcomes, strict=True))
    out = {world: summary([p for p in pairs if p[0].world == world])
           for world in dict.fromkeys(item.world for item in judged)}
    out["all"] = summary(pairs)
    return out


def cross_validate(judged: Sequence[Judged], folds: int, *, regularization: float = 1.0,
                   names: Sequence[str] = FEATURES, factors: AfterFactors | None = None
                   ) -> dict[str, Any]:
    """k-fold cross-validated `report` (each case judged by a fit that never saw it)."""
    fold_of = assign_folds(judged, folds)
    outcomes: list[tuple[bool, bool] | None] = [None] * len(judged)
    for fold in range(folds):
        train = [item for item, f in zip(judged, fold_of, strict=True) if f != fold]
        calibration = fit_calibration(training_rows(train), regularization=regularization,
                                      names=names)
        for i, f in enumerate(fold_of):
            if f == fold:
                outcomes[i] = judge(calibration, judged[i], factors)
    return report(judged, [o for o in outcomes if o is not None])


def leave_one_world_out(judged: Sequence[Judged], *, regularization: float = 1.0,
                        names: Sequence[str] = FEATURES, factors: AfterFactors | None = None
                        ) -> dict[str, Any]:
    """For each world: fit on every other world, judge that world's cases (`report` of the
    held-out world), plus `worst` (the held-out world with the lowest success@1) and the
    `fitted_on` worlds of each fit. Needs at least two worlds."""
    worlds = list(dict.fromkeys(item.world for item in judged))
    if len(worlds) < 2:
        raise ValueError("leave-one-world-out needs samples of at least two worlds")
    held_out: dict[str, Any] = {}
    fitted_on: dict[str, list[str]] = {}
    for world in worlds:
        train = [item for item in judged if item.world != world]
        test = [item for item in judged if item.world == world]
        calibration = fit_calibration(training_rows(train), regularization=regularization,
                                      names=names)
        held_out[world] = report(test, [judge(calibration, item, factors)
                                        for item in test])[world]
        fitted_on[world] = [w for w in worlds if w != world]
    worst = min(worlds, key=lambda w: (held_out[w]["success_at_1"],
                                       -held_out[w]["confident_wrong"]))
    return {"held_out": held_out, "fitted_on": fitted_on, "worst": worst}


def in_sample(judged: Sequence[Judged], calibration: Calibration,
              factors: AfterFactors | None = None) -> dict[str, Any]:
    return report(judged, [judge(calibration, item, factors) for item in judged])


def load_samples(path: Path) -> list[Judged]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Judged(str(row["world"]), row["case"],
                   [(dict(f), bool(y)) for f, y in row["samples"]], list(row.get("live", [])))
            for row in data]


def save_samples(path: Path, judged: Sequence[Judged]) -> None:
    path.write_text(json.dumps([{"world": j.world, "case": j.case, "samples": j.samples,
                                 "live": j.live} for j in judged]), encoding="utf-8")


def judged_of(world: str, results: Sequence[tuple[Mapping[str, Any], Recovery]]) -> list[Judged]:
    return [Judged(world, dict(case), samples_of(dict(case), recovery), live_of(recovery))
            for case, recovery in
            sorted(results, key=lambda item: str(item[0]["id"]))
            if case["expect"]["kind"] != "alive"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("worlds", type=Path, nargs="+", metavar="WORLD")
    parser.add_argument("--out", type=Path, default=FITTED_FILE)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--regularization", type=float, default=1.0,
                        help="inverse L2 strength of the logistic fit (sklearn's C)")
    parser.add_argument("--samples", type=Path,
                        help="also write the judged candidates here (JSON), to compare fits "
                             "without recovering again; with --reuse, read them from here")
    parser.add_argument("--reuse", action="store_true",
                        help="fit on the samples of --samples instead of serving the worlds")
    parser.add_argument("--lowo-only", action="store_true",
                        help="report leave-one-world-out (fit on the other worlds, measure on "
                             "each) and the cross-validation, write nothing")
    parser.add_argument("--after-features", action="store_true",
                        help="fit the evidence weighed after the calibration (listing degree, "
                             "offshoot, text shortfall: replay.AFTER_FEATURES) as features, "
                             "with the hand-set factors off")
    parser.add_argument("--dry-run", action="store_true",
                        help="report the cross-validation and in-sample figures, write nothing")
    args = parser.parse_args()
    names = [w.name for w in args.worlds]
    if args.lowo_only and len(names) < 2:
        parser.error("--lowo-only needs at least two worlds")
    if args.reuse:
        if args.samples is None:
            parser.error("--reuse needs --samples FILE")
        judged = [j for j in load_samples(args.samples) if j.world in names]
        missing = sorted(set(names) - {j.world for j in judged})
        if missing:
            parser.error(f"{args.samples} holds no samples of: {', '.join(missing)}")
    else:
        judged = []
        for world in args.worlds:
            judged += judged_of(world.name, asyncio.run(collect(world, args.concurrency)))
            if args.samples is not None:  # after each world: a long run keeps what it did
                save_samples(args.samples, judged)
    replayed = [item for item in judged if item.live]
    if replayed:
        checks = [replay_check(item) for item in replayed]
        print(json.dumps({"replay": {
            "cases": len(replayed), "top_differs": sum(top for _n, top in checks),
            "confidences_differ": sum(n for n, _top in checks),
            "candidates": sum(len(item.live) for item in replayed)}}))
        print(json.dumps({"shipped": in_sample(judged, default_calibration())}))
    fitted = FEATURES + AFTER_FEATURES if args.after_features else FEATURES
    factors = AfterFactors.neutral() if args.after_features else None
    options = {"regularization": args.regularization, "names": fitted, "factors": factors}
    print(json.dumps({"cross_validated": cross_validate(judged, args.folds, **options)}))
    if len(names) > 1:
        print(json.dumps({"leave_one_world_out": leave_one_world_out(judged, **options)}))
    if args.lowo_only:
        return
    calibration = fit_calibration(training_rows(judged), regularization=args.regularization,
                                  names=fitted)
    print(json.dumps({"in_sample": in_sample(judged, calibration, factors)}))
    if args.dry_run:
        print(calibration.to_json())
        return
    calibration.save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
