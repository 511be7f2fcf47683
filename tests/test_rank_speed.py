"""bench/rank_speed.py: one ranking's CPU, over the ranking tests' saved pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_scripts import load_bench

rank_speed = load_bench("rank_speed")


def test_each_run_is_timed_over_the_saved_pages():
    pages = [rank_speed.saved_page(path) for path in sorted(rank_speed.PAGES.glob("*.txt"))]
    assert len(pages) == 5 and all(page.text and page.url.startswith("https://") for page in pages)
    seconds = rank_speed.ranking_seconds(pages, count=6, runs=3)
    assert len(seconds) == 3 and all(s >= 0.0 for s in seconds)


def test_a_file_that_is_no_saved_page_is_named(tmp_path: Path):
    bad = tmp_path / "notes.txt"
    bad.write_text("https://a.example/\njust a title\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"notes\.txt: not a saved page"):
        rank_speed.saved_page(bad)
