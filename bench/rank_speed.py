"""How much CPU one ranking takes: `rank_candidates` over N fetched candidates.

    python bench/rank_speed.py [--candidates 40] [--runs 20] [--pages DIR]

Ranks `--candidates` candidates against an archived copy, each candidate the text of one of
the saved real pages in `--pages` (default: the ranking tests' fixtures, five news pages from
scrapinghub/article-extraction-benchmark, MIT; see their SOURCES.md) at its own address, and
prints the CPU seconds of one ranking over `--runs` runs (minimum, median, maximum), after one
warm-up ranking. CPU time (process_time), not wall time, so other work on the machine weighs
less. A speed target is a benchmark's figure, not a unit test's verdict (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from pagetrail.tools.models import Document
from pagetrail.tools.ranking.rank import CandidateEvidence, Reference, rank_candidates

PAGES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "rank"


def saved_page(path: Path) -> Document:
    """One saved page: line 1 its URL, line 2 its title, line 3 its site, a blank, the text."""
    parts = path.read_text(encoding="utf-8").split("\n", 4)
    if len(parts) < 5 or parts[3].strip():
        raise SystemExit(f"{path}: not a saved page (URL, title, site, a blank line, the text)")
    url, title, site, _blank, text = parts
    return Document(url=url, title=title, site_name=site, text=text, lang="en")


def ranking_seconds(pages: list[Document], count: int, runs: int) -> list[float]:
    """CPU seconds of each of `runs` rankings of `count` candidates against pages[0]."""
    reference = Reference(dead_url=pages[0].url, memento=pages[0])
    candidates = [
        CandidateEvidence(f"https://site{i}.example/a/page-{i}",
                          pages[i % len(pages)].model_copy(
                              update={"url": f"https://site{i}.example/a/page-{i}"}),
                          [("TI", "searxng", i % 10 + 1)])
        for i in range(count)
    ]
    rank_candidates(reference, candidates)  # warm-up: the model and the caches loaded
    seconds = []
    for _ in range(runs):
        start = time.process_time()
        rank_candidates(reference, candidates)
        seconds.append(time.process_time() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=40)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--pages", type=Path, default=PAGES,
                        help="a folder of saved pages (*.txt, the layout above)")
    args = parser.parse_args()
    paths = sorted(args.pages.glob("*.txt"))
    if not paths:
        raise SystemExit(f"{args.pages}: no saved pages (*.txt)")
    if args.candidates < 1 or args.runs < 1:
        raise SystemExit("--candidates and --runs must be at least 1")
    seconds = ranking_seconds([saved_page(p) for p in paths], args.candidates, args.runs)
    print(f"{args.candidates} candidates, {args.runs} runs, CPU seconds per ranking: "
          f"min {min(seconds):.4f}  median {statistics.median(seconds):.4f}  "
          f"max {max(seconds):.4f}")


if __name__ == "__main__":
    main()
