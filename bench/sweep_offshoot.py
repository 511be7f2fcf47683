"""Leave-one-world-out for `policy.OFFSHOOT_FACTOR`, from `pagetrail eval --json` reports.

    python bench/sweep_offshoot.py ../shared/testbed/dev=dev.json \
        ../shared/testbed/dev2=dev2.json ../shared/testbed/dev3=dev3.json

Each report's answer lists were ranked with the shipped factor; for every other factor of
the grid the live answers that are offshoots of their dead URL (`ranking.offshoots`) get
their confidence rescaled (confidence / shipped × factor), the list is re-sorted, and
success@1 over the `moved` and `replacement` cases is counted again. A list without an
offshoot keeps its order. Then, for each world, the factor that scores best on the *other*
worlds (ties to the mildest) is scored on it: the figure for a web the value was not chosen
on. An approximation: the penalty also steers the stop rule and which candidates are read,
which a re-sort cannot redo, and direct evidence that lifts the penalty is not in a report.
bench/sweep_factors.py does this exactly (from calibration samples, which keep the scores)
for the offshoot, text-shortfall and listing factors, with the calibration refitted or not.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pagetrail.tools import policy
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.ranking.offshoots import is_offshoot

GRID = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)


def success_at_1(cases: dict[str, dict], results: list[dict], factor: float,
                 shipped: float) -> float:
    scored = [r for r in results if cases[r["id"]]["expect"]["kind"] in ("moved", "replacement")]
    hits = 0
    for result in scored:
        case = cases[result["id"]]
        want = {normalize_url(u) for u in case["expect"]["urls"]}
        answers = [a for a in result["answers"] if a.get("kind") != "archived"]
        if any(is_offshoot(case["url"], a["url"]) for a in answers):
            answers = sorted(answers, key=lambda a: -(a.get("confidence") or 0.0) * (
                factor / shipped if is_offshoot(case["url"], a["url"]) else 1.0))
        else:
            answers = result["answers"]  # untouched: the pipeline's own order
        hits += bool(answers) and normalize_url(answers[0]["url"]) in want
    return hits / len(scored) if scored else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="+", metavar="WORLD=REPORT.json")
    args = parser.parse_args()
    shipped = policy.OFFSHOOT_FACTOR
    table: dict[tuple[str, float], float] = {}
    names: list[str] = []
    for pair in args.pairs:
        world, report = pair.split("=", 1)
        name = Path(world).name
        names.append(name)
        cases = {c["id"]: c for c in map(json.loads, (Path(world) / "cases.jsonl").open())}
        results = [r for r in json.loads(Path(report).read_text())["results"]
                   if r.get("method", "full") == "full"]
        for factor in GRID:
            table[(name, factor)] = success_at_1(cases, results, factor, shipped)
    print("factor " + " ".join(f"{n:>7}" for n in names))
    for factor in GRID:
        print(f"{factor:6.2f} " + " ".join(f"{table[(n, factor)]:7.3f}" for n in names))
    for held in names:
        others = [n for n in names if n != held]
        best = max(GRID, key=lambda f: (sum(table[(n, f)] for n in others), f))
        print(f"held out {held}: fitted on {'+'.join(others)} → {best}; "
              f"{held} success@1 {table[(held, best)]:.3f} (shipped {shipped}: "
              f"{table[(held, shipped)]:.3f})")


if __name__ == "__main__":
    main()
