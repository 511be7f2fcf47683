"""bench/calibrate.py's leave-one-world-out: each world measured by a fit on the others only.

Hand-made worlds of judged candidates (as tests/test_calibrate.py builds them)."""

from __future__ import annotations

import pytest
from bench_scripts import load_bench

from pagetrail.tools.ranking.rank import CANDIDATE_FEATURES

calibrate = load_bench("calibrate", "pagetrail_bench_calibrate_lowo")
Judged = calibrate.Judged


def _row(**values: float) -> dict[str, float]:
    return {name: values.get(name, 0.0) for name in CANDIDATE_FEATURES}


def _case(world: str, n: int, *, url_misleads: bool = False, kind: str = "replacement") -> Judged:
    """A right candidate whose content matches, and a wrong one; in a world where the URL
    misleads, the wrong one looks more like the dead URL than the right one does."""
    good = (_row(final=0.6, content_cosine=0.8, content_lm=0.7, url_similarity=0.2), True)
    bad = (_row(final=0.5, content_cosine=0.2, content_lm=0.2,
                url_similarity=0.9 if url_misleads else 0.1), False)
    samples = [bad, good] if kind in ("moved", "replacement") else [bad]
    return Judged(world, {"id": f"{world}-{n:03d}", "expect": {"kind": kind}}, samples)


def test_each_world_is_judged_by_a_fit_that_never_saw_it(monkeypatch):
    judged = [_case("dev", i) for i in range(8)] + [_case("dev2", i) for i in range(8)] \
        + [_case("dev3", i, url_misleads=True) for i in range(8)] \
        + [_case("dev3", 100 + i, kind="none") for i in range(3)]
    fits: list[set[str]] = []
    real_fit = calibrate.fit_calibration
    trained: list[str] = []

    def spy(rows, **kwargs):
        fits.append(set(trained))
        return real_fit(rows, **kwargs)

    real_rows = calibrate.training_rows

    def rows_spy(items):
        trained[:] = sorted({item.world for item in items})
        return real_rows(items)

    monkeypatch.setattr(calibrate, "fit_calibration", spy)
    monkeypatch.setattr(calibrate, "training_rows", rows_spy)
    result = calibrate.leave_one_world_out(judged)
    assert fits == [{"dev2", "dev3"}, {"dev", "dev3"}, {"dev", "dev2"}]
    assert result["fitted_on"] == {"dev": ["dev2", "dev3"], "dev2": ["dev", "dev3"],
                                   "dev3": ["dev", "dev2"]}
    assert set(result["held_out"]) == {"dev", "dev2", "dev3"}
    assert result["held_out"]["dev3"]["n"] == 8
    assert result["held_out"]["dev3"]["abstention_n"] == 3
    assert result["held_out"]["dev"]["success_at_1"] == 1.0
    assert result["worst"] in result["held_out"]
    worst = result["held_out"][result["worst"]]["success_at_1"]
    assert worst == min(r["success_at_1"] for r in result["held_out"].values())


def test_one_world_cannot_be_left_out():
    with pytest.raises(ValueError, match="at least two worlds"):
        calibrate.leave_one_world_out([_case("dev", i) for i in range(3)])
