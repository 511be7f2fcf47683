"""Fit the confidence calibration of the ranking on a testbed world.

    python bench/calibrate.py WORLD [--out tools/ranking/data/rank_calibration.json] [--folds 5]

Serves WORLD with the testbed runner, recovers every case with the full pipeline (a fresh
store per case, no cache), and fits `rank.fit_calibration` on the top-10 live candidates of
every non-alive case (label: the candidate is one of the case's expected URLs). Before
writing, it reports a k-fold cross-validated success@1 and confident-wrong rate of the
re-ranking, so the effect of a refit is measured on cases it was not fitted on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from pagetrail.store import Store
from pagetrail.tools.models import Recovery
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.ranking.rank import CALIBRATION_FILE, Calibration, features, fit_calibration
from pagetrail.tools.recovery.pipeline import recover
from pagetrail.tools.testbed import Testbed, load_world

Sample = tuple[dict[str, float], bool]


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
    expected = {normalize_url(u) for u in case["expect"].get("urls", [])}
    has_memento = recovery.memento is not None
    live = [c for c in recovery.candidates if c.kind != "archived"][:10]
    return [(features(c.scores, has_memento and c.scores.content_cosine is not None),
             normalize_url(c.url) in expected) for c in live]


def cross_validate(judged: list[tuple[dict[str, Any], list[Sample]]], folds: int) -> dict:
    n = top1 = gone = wrong = 0
    for fold in range(folds):
        train = [s for i, (_c, ss) in enumerate(judged) if i % folds != fold for s in ss]
        calibration = fit_calibration(train)
        for i, (case, samples) in enumerate(judged):
            if i % folds != fold:
                continue
            ranked = sorted(((calibration.confidence(f), y) for f, y in samples),
                            key=lambda item: -item[0])
            if case["expect"]["kind"] in ("moved", "replacement"):
                n += 1
                top1 += bool(ranked) and ranked[0][1]
            else:
                gone += 1
                wrong += bool(ranked) and ranked[0][0] >= 0.5
    return {"success_at_1": top1 / max(n, 1), "n": n,
            "confident_wrong": wrong, "abstention_n": gone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("world", type=Path)
    parser.add_argument("--out", type=Path, default=CALIBRATION_FILE)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--samples", type=Path,
                        help="also write the judged candidates here (JSON), to compare fits "
                             "without recovering again; with --reuse, read them from here")
    parser.add_argument("--reuse", action="store_true",
                        help="fit on the samples of --samples instead of serving WORLD")
    args = parser.parse_args()
    if args.reuse:
        if args.samples is None:
            parser.error("--reuse needs --samples FILE")
        judged = [(case, [(f, bool(y)) for f, y in samples]) for case, samples in
                  json.loads(args.samples.read_text(encoding="utf-8"))]
    else:
        results = asyncio.run(collect(args.world, args.concurrency))
        judged = [(case, samples_of(case, recovery)) for case, recovery in
                  sorted(results, key=lambda item: item[0]["id"])
                  if case["expect"]["kind"] != "alive"]
        if args.samples is not None:
            args.samples.write_text(json.dumps(judged), encoding="utf-8")
    print(json.dumps({"cross_validated": cross_validate(judged, args.folds)}))
    calibration: Calibration = fit_calibration([s for _c, ss in judged for s in ss])
    calibration.save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
