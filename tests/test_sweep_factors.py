"""bench/sweep_factors.py and calibrate.judge on stored candidates (hand-made samples)."""

from __future__ import annotations

import json
import sys

from bench_scripts import load_bench

from pagetrail.tools.models import Candidate, Scores
from pagetrail.tools.ranking.rank import Calibration
from pagetrail.tools.ranking.replay import AfterFactors

sweep_factors = load_bench("sweep_factors")
calibrate = sweep_factors.calibrate

BY_URL = Calibration(-3.0, {"url_similarity": 6.0})


def _case(world: str, n: int, *, offshoot_right: bool) -> object:
    """A look-alike offshoot (URL 0.9) and another page (URL 0.7): the offshoot is the
    answer only when `offshoot_right`."""
    lookalike = Candidate(url=f"https://{world}.example/{n}/story-more", kind="replacement",
                          confidence=0.0, scores=Scores(url_similarity=0.9, offshoot=True))
    other = Candidate(url=f"https://elsewhere.example/{world}/{n}", kind="replacement",
                      confidence=0.0, scores=Scores(url_similarity=0.7))
    right = lookalike if offshoot_right else other
    case = {"id": f"{world}{n:03d}", "expect": {"kind": "replacement", "urls": [right.url]}}
    return calibrate.Judged(world, case, [], [c.model_dump(mode="json")
                                               for c in (lookalike, other)])


def test_judge_reranks_stored_candidates_with_the_factors():
    item = _case("w", 0, offshoot_right=False)
    assert calibrate.judge(BY_URL, item, AfterFactors.neutral()) == (False, True)
    assert calibrate.judge(BY_URL, item, AfterFactors(offshoot_factor=0.5))[0] is True


def test_samples_with_candidates_round_trip(tmp_path):
    items = [_case("w", 0, offshoot_right=True)]
    path = tmp_path / "samples.json"
    calibrate.save_samples(path, items)
    loaded = calibrate.load_samples(path)
    assert loaded == items and loaded[0].labels == [True, False]


def test_each_world_is_scored_by_the_value_chosen_on_the_others():
    items = [_case(w, i, offshoot_right=False) for w in ("a", "b") for i in range(4)]
    items += [_case("c", i, offshoot_right=i < 1) for i in range(4)]
    grid = sweep_factors.GRIDS["offshoot_factor"]
    result = sweep_factors.sweep(items, grid, lambda _held: BY_URL)
    held = result["held_out"]
    # a and b need the penalty: any factor under σ(1.2)/σ(2.4) ≈ 0.83 does; the mildest is 0.8
    assert held["c"]["value"]["offshoot_factor"] == 0.8
    assert held["c"]["success_at_1"] == 0.75
    assert held["a"]["success_at_1"] == 1.0
    assert held["a"]["fitted_on"] == ["b", "c"]


def test_ties_go_to_the_mildest_value():
    grid = [AfterFactors(offshoot_factor=f) for f in (0.1, 0.5, 1.0)]
    table = [{"x": (0.5, 0)}, {"x": (0.5, 0)}, {"x": (0.4, 0)}]
    assert sweep_factors.choose(grid, table, ["x"]) == 1
    table = [{"x": (0.5, 0)}, {"x": (0.5, 1)}, {"x": (0.4, 0)}]
    assert sweep_factors.choose(grid, table, ["x"]) == 0  # fewer confidently wrong first


def test_both_scripts_run_on_a_tiny_samples_file(tmp_path, monkeypatch, capsys):
    items = [_case(w, i, offshoot_right=i == 0) for w in ("a", "b") for i in range(3)]
    path = tmp_path / "samples.json"
    calibrate.save_samples(path, items)
    monkeypatch.setattr(sys, "argv", ["sweep_factors.py", str(path), "--refit",
                                      "--grid", "offshoot_factor"])
    sweep_factors.main()
    result = json.loads(capsys.readouterr().out)["offshoot_factor"]
    assert set(result["held_out"]) == {"a", "b"}
    monkeypatch.setattr(sys, "argv", ["calibrate.py", str(tmp_path / "a"), str(tmp_path / "b"),
                                      "--samples", str(path), "--reuse", "--lowo-only",
                                      "--folds", "2"])
    calibrate.main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # the hand-made candidates were stored with confidence 0: the replay says they differ
    assert lines[0]["replay"]["cases"] == 6 and lines[0]["replay"]["confidences_differ"] > 0
    assert "leave_one_world_out" in lines[-1]
