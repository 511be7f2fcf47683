"""Leave-one-world-out for the factors weighed after the calibration, from calibration samples.

    python bench/sweep_factors.py SAMPLES.json [--refit] [--regularization 1.0]

SAMPLES.json is what `bench/calibrate.py WORLD... --samples FILE` collected: every live
candidate the pipeline ranked, with the scores it was ranked on (listing degree, offshoot,
text shortfall included). Each quantity — `policy.OFFSHOOT_FACTOR`, the text shortfall's
threshold and slope (`TEXT_SHORTFALL_FROM`, `TEXT_SHORTFALL_SLOPE`), `LISTING_PENALTY` — is
swept over a grid, the others kept at their shipped values, and the candidates re-ranked as
the pipeline ranks them (`ranking.replay`). For each world, the value that scores best on the
*other* worlds (mean success@1, then fewer confidently wrong, ties to the mildest value) is
scored on it: the figure for a web the value was not chosen on. With `--refit` the calibration
is refitted on the other worlds too (the whole ranking fitted leave-one-world-out); without,
the shipped calibration is kept. A re-sort cannot redo how the ranking steered the search
(the stop rule, which pages were read): confirm a chosen value with `pagetrail eval`.
(bench/sweep_offshoot.py does the offshoot factor alone from eval reports.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pagetrail.tools.policy import CONFIDENT, WEAK_ANCHOR_CLAMP
from pagetrail.tools.ranking.rank import Calibration, default_calibration, fit_calibration
from pagetrail.tools.ranking.replay import AfterFactors, calibrated, order

_spec = importlib.util.spec_from_file_location(
    "pagetrail_bench_calibrate", Path(__file__).resolve().parent / "calibrate.py")
assert _spec is not None and _spec.loader is not None
calibrate = sys.modules.get(_spec.name) or importlib.util.module_from_spec(_spec)
if _spec.name not in sys.modules:
    sys.modules[_spec.name] = calibrate  # dataclasses resolve their module by name
    _spec.loader.exec_module(calibrate)
Judged = calibrate.Judged

SHIPPED = AfterFactors()
# One grid per quantity (the others at SHIPPED): name → factor settings to try.
GRIDS: dict[str, list[AfterFactors]] = {
    "offshoot_factor": [replace(SHIPPED, offshoot_factor=f)
                        for f in (1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05)],
    "text_shortfall": [replace(SHIPPED, shortfall_from=t, shortfall_slope=s)
                       for t in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
                       for s in (0.0, 2.0, 4.0, 6.0, 8.0, 12.0)],
    "listing_penalty": [replace(SHIPPED, listing_penalty=p)
                        for p in (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0)],
}
_TYPICAL_SHORTFALLS = (0.15, 0.25, 0.4)


def mildness(factors: AfterFactors) -> float:
    """How little the factors change confidences (higher: milder), for breaking ties."""
    text = sum(factors.shortfall_factor(s) for s in _TYPICAL_SHORTFALLS) / len(_TYPICAL_SHORTFALLS)
    return factors.offshoot_factor + text + (1.0 - factors.listing_penalty)


def outcome(item: Any, base: Sequence[float], factors: AfterFactors) -> tuple[bool, bool]:
    """(right at rank 1, confidently wrong) of one case (see calibrate.judge)."""
    ranked = order(item.candidates, base, factors)
    if not ranked:
        return False, False
    confidence, top = ranked[0]
    if item.weak_anchor:
        confidence = min(confidence, WEAK_ANCHOR_CLAMP)
    correct = item.labels[next(i for i, c in enumerate(item.candidates) if c is top)]
    return correct, confidence >= CONFIDENT and not correct


def world_scores(items: Sequence[Any], bases: Sequence[Sequence[float]],
                 factors: AfterFactors) -> dict[str, tuple[float, int]]:
    """World → (success@1 over scored cases, confidently wrong among them)."""
    tally: dict[str, list[int]] = {}
    for item, base in zip(items, bases, strict=True):
        if not item.scored:
            continue
        right, wrong = outcome(item, base, factors)
        row = tally.setdefault(item.world, [0, 0, 0])
        row[0] += right
        row[1] += wrong
        row[2] += 1
    return {w: (r[0] / max(r[2], 1), r[1]) for w, r in tally.items()}


def choose(grid: Sequence[AfterFactors], table: Sequence[dict[str, tuple[float, int]]],
           worlds: Sequence[str]) -> int:
    """Index of the grid value best on `worlds`: mean success@1, then fewer confidently
    wrong, then the mildest."""
    def key(i: int) -> tuple[float, int, float]:
        rows = [table[i][w] for w in worlds]
        return (round(sum(s for s, _c in rows) / len(rows), 9), -sum(c for _s, c in rows),
                mildness(grid[i]))
    return max(range(len(grid)), key=key)


def sweep(items: Sequence[Any], grid: Sequence[AfterFactors],
          calibration_for: Callable[[str | None], Calibration]) -> dict[str, Any]:
    """Leave-one-world-out of one grid: per held-out world, the value chosen on the others
    and its figures there, next to the shipped value's; plus the value chosen on all."""
    worlds = list(dict.fromkeys(item.world for item in items))
    out: dict[str, Any] = {"held_out": {}}
    for held in [*worlds, None]:
        calibration = calibration_for(held)
        bases = [calibrated(item.candidates, calibration, item.values) for item in items]
        table = [world_scores(items, bases, factors) for factors in grid]
        others = [w for w in worlds if w != held]
        best = choose(grid, table, others)
        shipped = world_scores(items, bases, SHIPPED)
        if held is None:
            out["fitted_on_all"] = {"value": _describe(grid[best]),
                                    "per_world": {w: table[best][w] for w in worlds},
                                    "shipped": shipped}
            continue
        out["held_out"][held] = {"fitted_on": others, "value": _describe(grid[best]),
                                 "success_at_1": round(table[best][held][0], 4),
                                 "confident_wrong": table[best][held][1],
                                 "shipped_success_at_1": round(shipped[held][0], 4),
                                 "shipped_confident_wrong": shipped[held][1]}
    return out


def _describe(factors: AfterFactors) -> dict[str, float]:
    return {k: v for k, v in vars(factors).items() if not math.isnan(v)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", type=Path)
    parser.add_argument("--refit", action="store_true",
                        help="refit the calibration on the worlds each value is chosen on")
    parser.add_argument("--regularization", type=float, default=1.0)
    parser.add_argument("--grid", choices=sorted(GRIDS), action="append")
    args = parser.parse_args()
    items = calibrate.load_samples(args.samples)  # a case without candidates counts, as a miss
    if not any(item.live for item in items):
        parser.error(f"{args.samples} keeps no candidates (collected before they were kept)")
    fits: dict[str | None, Calibration] = {}

    def calibration_for(held: str | None) -> Calibration:
        if not args.refit:
            return default_calibration()
        if held not in fits:
            train = [item for item in items if item.world != held]
            fits[held] = fit_calibration(calibrate.training_rows(train),
                                         regularization=args.regularization)
        return fits[held]

    for name in args.grid or sorted(GRIDS):
        print(json.dumps({name: sweep(items, GRIDS[name], calibration_for)}))


if __name__ == "__main__":
    main()
