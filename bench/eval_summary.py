"""Each world, the mean and the worst, from saved `pagetrail eval WORLD --json` reports.

    python bench/eval_summary.py dev2-m101.json dev3-m201.json ... [--markdown]

Worlds evaluated one at a time (a long series on a shared machine, a world mutated by
bench/mutate_world.py while others were being evaluated) are put together the way
`pagetrail eval W1 W2 …` does (tools/eval/multiworld.py): what the user is told first —
answered right, answered wrong —, then success@1, with and without an archived copy.
A report whose run is void is named and left out of the mean and the worst.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pagetrail.lab import WorldRun, build_multiworld_report

COLUMNS = (
    ("answered right", "answered_right", "{:.3f}"),
    ("answered wrong", "answered_wrong", "{:g}"),
    ("dead cases", "dead", "{:g}"),
    ("success@1", "success_at_1", "{:.3f}"),
    ("success@10", "success_at_10", "{:.3f}"),
    ("archived copy: @1", "with_copy.success_at_1", "{:.3f}"),
    ("archived copy: right", "with_copy.answered_right", "{:.3f}"),
    ("no archived copy: @1", "without_copy.success_at_1", "{:.3f}"),
    ("no archived copy: right", "without_copy.answered_right", "{:.3f}"),
    ("right at ≥ 0.9", "right_at_0.9", "{:.3f}"),
    ("requests median", "requests_median", "{:g}"),
    ("seconds median", "seconds_median", "{:.2f}"),
)


def summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    multi = build_multiworld_report([WorldRun(r["world"], report=r) for r in reports])
    return {"summary": multi["summary"].get("web") or {}, "failed": multi["failed"]}


def table(result: dict[str, Any]) -> str:
    s = result["summary"]
    if not s:
        return "no complete run\n"

    def cell(row: dict[str, float], key: str, form: str) -> str:
        return "—" if key not in row else form.format(row[key])

    lines = ["| world | " + " | ".join(t for t, _k, _f in COLUMNS) + " |",
             "|---|" + "---:|" * len(COLUMNS)]
    for world, row in s["per_world"].items():
        lines.append(f"| {world} | " + " | ".join(cell(row, k, f) for _t, k, f in COLUMNS) + " |")
    lines.append("| **mean** | " + " | ".join(cell(s["mean"], k, f) for _t, k, f in COLUMNS)
                 + " |")
    worst = s["worst"]
    lines.append("| **worst** | " + " | ".join(
        f"{f.format(worst[k]['value'])} ({worst[k]['world']})" if k in worst else "—"
        for _t, k, f in COLUMNS) + " |")
    for failed in result["failed"]:
        lines.append(f"\nvoid, left out: {failed['world']}: {failed['reason']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="`pagetrail eval --json` outputs")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    reports = []
    for path in args.reports:
        try:
            reports.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            print(f"eval_summary: error: {path}: {exc}", file=sys.stderr)
            return 2
    result = summary(reports)
    print(json.dumps(result, indent=1) if args.json else table(result), end="")
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
