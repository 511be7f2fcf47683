"""bench/calibrate.py: folds by case and world, per-world cross-validated report, samples file."""

from __future__ import annotations

import random

from bench_scripts import load_bench

from pagetrail.tools.ranking.rank import CANDIDATE_FEATURES, Calibration

calibrate = load_bench("calibrate")
Judged = calibrate.Judged


def _row(**values: float) -> dict[str, float]:
    return {name: values.get(name, 0.0) for name in CANDIDATE_FEATURES}


def _case(world: str, n: int, kind: str = "replacement") -> Judged:
    good = (_row(final=0.8, content_cosine=0.8, content_lm=0.7), True)
    bad = (_row(final=0.3, content_cosine=0.2, content_lm=0.2, url_similarity=0.5), False)
    samples = [bad, good] if kind in ("moved", "replacement") else [bad]
    return Judged(world, {"id": f"{world}-{n:03d}", "expect": {"kind": kind}}, samples)


def test_folds_keep_a_case_whole_and_spread_every_world():
    judged = [_case("a", i) for i in range(7)] + [_case("b", i) for i in range(3)]
    folds = calibrate.assign_folds(judged, 3)
    assert len(folds) == len(judged)  # one fold per case: its candidates cannot split
    for world in ("a", "b"):
        of_world = [f for j, f in zip(judged, folds, strict=True) if j.world == world]
        assert set(of_world) == {0, 1, 2}  # each fold holds a share of each world
    sizes = [folds.count(f) for f in range(3)]
    assert max(sizes) - min(sizes) <= 1


def test_cross_validation_reports_each_world_and_never_tests_on_training_cases(monkeypatch):
    judged = [_case("dev", i) for i in range(10)] + [_case("dev2", i) for i in range(10)] \
        + [_case("dev2", 100 + i, kind="none") for i in range(4)]
    fitted_on: list[set[str]] = []
    real_fit = calibrate.fit_calibration

    def spy(rows, **kwargs):
        fitted_on.append({repr(sorted(f.items())) for f, _y in rows})
        return real_fit(rows, **kwargs)

    judged_in_fold: list[list[str]] = []
    real_judge = calibrate.judge

    def judge_spy(calibration, item, *args):
        judged_in_fold.append([item.case["id"]])
        return real_judge(calibration, item, *args)

    monkeypatch.setattr(calibrate, "fit_calibration", spy)
    monkeypatch.setattr(calibrate, "judge", judge_spy)
    result = calibrate.cross_validate(judged, 4)
    assert len(fitted_on) == 4 and len(judged_in_fold) == len(judged)  # each case judged once
    assert set(result) == {"dev", "dev2", "all"}
    assert result["dev"]["n"] == 10 and result["dev2"]["n"] == 10
    assert result["dev2"]["abstention_n"] == 4 and result["dev"]["abstention_n"] == 0
    assert result["all"]["n"] == 20
    # the good candidate is separable: every held-out case is right at rank 1
    assert result["dev"]["success_at_1"] == 1.0 and result["dev2"]["success_at_1"] == 1.0


def test_report_counts_success_and_confident_wrong_per_world():
    judged = [_case("x", 0), _case("x", 1), _case("y", 0), _case("y", 1, kind="none")]
    outcomes = [(True, False), (False, True), (False, False), (False, True)]
    result = calibrate.report(judged, outcomes)
    assert result["x"] == {"n": 2, "success_at_1": 0.5, "confident_wrong": 1,
                           "abstention_n": 0, "abstention_confident_wrong": 0}
    assert result["y"]["abstention_confident_wrong"] == 1 and result["y"]["success_at_1"] == 0.0
    assert result["all"]["n"] == 3 and result["all"]["confident_wrong"] == 1


def test_judge_reranks_by_the_calibration_and_flags_confident_wrong():
    item = _case("w", 0)  # wrong candidate listed first, right one second
    by_content = Calibration(-2.0, {"content_cosine": 6.0})
    by_url = Calibration(-2.0, {"url_similarity": 9.0})
    assert calibrate.judge(by_content, item) == (True, False)
    assert calibrate.judge(by_url, item) == (False, True)  # conf of the wrong one: σ(2.5) ≥ 0.5
    nothing = Judged("w", {"id": "e", "expect": {"kind": "none"}}, [])
    assert calibrate.judge(by_content, nothing) == (False, False)


def test_training_keeps_the_top_of_each_case_with_ranking_features():
    many = Judged("w", {"id": "m", "expect": {"kind": "replacement"}},
                  [(_row(content_cosine=0.1 * (i % 10)), i == 3) for i in range(25)])
    rows = calibrate.training_rows([many])
    assert len(rows) == calibrate.TRAIN_TOP
    # content_lead compares with every candidate of the case, not only with the top 10:
    # the best (0.9, four of them) ties with the others and leads by nothing
    assert max(f["content_lead"] for f, _y in rows) == 0.0
    assert [y for _f, y in rows].count(True) == 1


def test_samples_round_trip(tmp_path):
    judged = [_case("dev", 0), _case("dev2", 1, kind="none")]
    path = tmp_path / "samples.json"
    calibrate.save_samples(path, judged)
    assert calibrate.load_samples(path) == judged


def test_fit_improves_on_synthetic_worlds_where_url_misleads():
    """A world where a look-alike URL beats content in raw score: the cross-validated fit
    learns to prefer content, on both worlds."""
    rng = random.Random(7)

    def case(world: str, i: int) -> Judged:
        right = _row(content_cosine=rng.uniform(0.5, 0.9), url_similarity=rng.uniform(0, 0.3),
                     final=0.5)
        lookalike = _row(content_cosine=rng.uniform(0.1, 0.45), url_similarity=rng.uniform(0.6, 1),
                         final=0.55, same_site=1.0)
        return Judged(world, {"id": f"{world}{i}", "expect": {"kind": "replacement"}},
                      [(lookalike, False), (right, True)])

    judged = [case("a", i) for i in range(30)] + [case("b", i) for i in range(30)]
    result = calibrate.cross_validate(judged, 5)
    assert result["a"]["success_at_1"] >= 0.9 and result["b"]["success_at_1"] >= 0.9
