"""bench/thin_index.py: a world whose search engine indexed less (hand-made world files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_scripts import load_bench

thin_index = load_bench("thin_index")

HTML = {"Content-Type": "text/html; charset=utf-8"}


def _world(root: Path, fmt: int = 2) -> Path:
    root.mkdir()
    (root / "blobs").mkdir()
    (root / "archive").mkdir()
    (root / "world.json").write_text(json.dumps({"format": fmt, "hosts": {}}))
    (root / "cases.jsonl").write_text("")
    pages = [{"url": f"https://a.example/{i}", "status": 200, "headers": HTML, "blob": "x"}
             for i in range(40)]
    pages += [{"url": "https://a.example/old", "status": 301,
               "headers": {"Location": "https://a.example/1"}},
              {"url": "https://a.example/f.pdf", "status": 200,
               "headers": {"Content-Type": "application/pdf"}, "blob": "y"},
              {"url": "https://a.example/hidden", "status": 200, "headers": HTML, "blob": "z",
               "indexed": False}]
    (root / "live.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pages))
    return root


def _unindexed(world: Path) -> set[str]:
    return {r["url"] for r in map(json.loads, (world / "live.jsonl").open())
            if r.get("indexed") is False}


def test_pages_leave_the_index_at_the_rate_asked_and_nothing_else_changes(tmp_path):
    world = _world(tmp_path / "w")
    assert thin_index.thin(world, tmp_path / "none", 0.0, 1) == (0, 40)
    assert _unindexed(tmp_path / "none") == {"https://a.example/hidden"}
    dropped, indexed = thin_index.thin(world, tmp_path / "half", 0.5, 7)
    assert indexed == 40 and 10 < dropped < 30
    assert len(_unindexed(tmp_path / "half")) == dropped + 1
    assert thin_index.thin(world, tmp_path / "all", 1.0, 1) == (40, 40)
    everything = {r["url"]: r for r in map(json.loads, (tmp_path / "all/live.jsonl").open())}
    assert "indexed" not in everything["https://a.example/f.pdf"]  # not an HTML page
    assert "indexed" not in everything["https://a.example/old"]  # a redirect
    assert (tmp_path / "all/blobs").resolve() == (world / "blobs").resolve()


def test_a_format_1_world_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="format-2"):
        thin_index.thin(_world(tmp_path / "w", fmt=1), tmp_path / "out", 0.5, 1)
