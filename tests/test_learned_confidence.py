"""The learned answer confidence (`ranking.learned`, bench/train_confidence.py, the switch in
`recovery.answer.for_dead`): hand-made candidate lists, the shipped model, a train → save →
load round trip on a tiny synthetic dataset."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from pagetrail.tools import policy
from pagetrail.tools.errors import ModelMissing
from pagetrail.tools.models import Candidate, CheckResult, Memento, Scores
from pagetrail.tools.ranking import learned
from pagetrail.tools.recovery import answer
from pagetrail.tools.recovery.context import Budget, DeadURL, Findings
from tests.bench_scripts import load_bench

DEAD = "https://old.example/news/solar-farms-double-in-a-year.html"
DEAD_CHECK = CheckResult(url=DEAD, verdict="dead", status=404)


def _scores(**values: object) -> dict[str, object]:
    return Scores(**values).model_dump(mode="json")  # type: ignore[arg-type]


# The right page: the dead slug under a new folder, its text and title the archived copy's.
SURE = learned.Listed(
    "https://old.example/articles/solar-farms-double-in-a-year", 0.93, ("SITE", "TI", "URL"),
    _scores(content_cosine=0.97, content_lm=0.95, content_resemblance=0.9,
            title_similarity=1.0, url_similarity=0.8, same_site=True, query_votes=3,
            best_rank=1, rrf=0.05, final=0.9, context_similarity=0.8))
# A tag page: one word of the slug, a list of links, little of the copy's text.
TAG = learned.Listed(
    "https://old.example/tag/solar/", 0.08, ("LINKS",),
    _scores(content_cosine=0.2, content_lm=0.15, title_similarity=0.2, url_similarity=0.2,
            same_site=True, query_votes=1, best_rank=6, rrf=0.01, final=0.2, listing=1.0))


def test_url_alignment_reads_what_was_inserted_cut_and_kept():
    moved = learned.url_alignment(DEAD, "https://old.example/2021/05/solar-farms-double-in-a-year-48213")
    assert moved["url_slug_in_order"] == 1.0 and moved["url_slug_words_in_order"] == 1.0
    assert moved["url_inserted_dates"] == 1.0  # 2021 (05 is a short number: an id)
    assert moved["url_slug_extra_ids"] == 1.0 and moved["url_slug_extra_words"] == 0.0
    assert moved["url_cut_words"] == 1.0 and moved["url_same_host"] == 1.0  # the folder "news"
    edition = learned.url_alignment(DEAD, "https://old.example/news/solar-farms-double-in-a-year-update")
    assert edition["url_slug_extra_words"] == 1.0 and edition["url_slug_in_order"] == 1.0
    tag = learned.url_alignment(DEAD, "https://other.example/tag/solar/")
    assert tag["url_slug_in_order"] == pytest.approx(1 / 6)
    assert tag["url_cut_words"] == 6.0 and tag["url_same_site"] == 0.0 and tag["url_short"] == 1.0
    assert [learned.token_kind(t) for t in ("2019", "20190312", "a1b2c3d4e5", "48213", "solar")] \
        == ["date", "date", "id", "id", "word"]


def test_a_candidates_features_in_its_list():
    ranked = [SURE, TAG]
    top = learned.candidate_features(DEAD, ranked, 0, archived_copy=True)
    second = learned.candidate_features(DEAD, ranked, 1, archived_copy=True)
    assert tuple(top) == learned.FEATURES == tuple(second)
    assert top["margin"] == pytest.approx(0.85) and top["lead"] == pytest.approx(0.85)
    assert second["lead"] == pytest.approx(-0.85) and second["rank_inverse"] == 0.5
    assert top["method_SITE"] == 1.0 and top["method_LINKS"] == 0.0 and top["archived_copy"] == 1.0
    assert top["other_url_similarity"] == pytest.approx(0.2)
    assert top["content_known"] == 1.0 and top["anchor_known"] == 0.0  # None: not measured
    # the same candidate read from an eval row or from a ranked Candidate: one vector
    row = {"url": SURE.url, "confidence": SURE.confidence, "methods": list(SURE.methods),
           "scores": dict(SURE.scores)}
    candidate = Candidate(url=SURE.url, kind="moved", confidence=SURE.confidence,
                          methods=list(SURE.methods), scores=Scores(**SURE.scores))
    assert learned.listed_from_record(row) == learned.listed_from_candidate(candidate)


def test_the_shipped_model_loads_with_its_provenance():
    model = learned.shipped_model()
    assert model.features == learned.FEATURES
    assert 0.0 < model.recommend_at <= 1.0
    provenance = model.provenance
    assert len(provenance["worlds"]) >= 3 and all("world" in w for w in provenance["worlds"])
    assert provenance["error_target"] == pytest.approx(0.01)
    assert provenance["trained"] and "seed" in provenance and provenance["examples"] > 100
    assert 0.5 < provenance["out_of_world"]["auc"] <= 1.0
    assert {r["world"] for r in provenance["leave_world_out"]} == {
        w["world"] for w in provenance["worlds"]}


def test_the_shipped_model_is_deterministic_calibrated_and_monotone_in_its_score():
    model = learned.shipped_model()
    sure = learned.top_probability(DEAD, [SURE, TAG], archived_copy=True)
    assert sure == learned.top_probability(DEAD, [SURE, TAG], archived_copy=True)
    tag = learned.top_probability(DEAD, [TAG], archived_copy=True)
    assert sure is not None and tag is not None
    assert sure >= model.recommend_at > tag  # the right page is said, the tag page is not
    assert learned.top_probability(DEAD, [], archived_copy=True) is None
    assert list(model.calibration_y) == sorted(model.calibration_y)
    grid = np.linspace(min(model.calibration_x) - 1, max(model.calibration_x) + 1, 400)
    calibrated = [model.calibrate(float(x)) for x in grid]
    assert calibrated == sorted(calibrated) and 0.0 <= calibrated[0] <= calibrated[-1] <= 1.0


def _synthetic(seed: int) -> list[dict[str, object]]:
    """Feature rows of three small worlds: the top is right when its content and URL match."""
    rng = random.Random(seed)
    rows = []
    for world in ("w1", "w2", "w3"):
        for case in range(60):
            right = rng.random() < 0.6
            match = rng.uniform(0.6, 1.0) if right else rng.uniform(0.0, 0.4)
            kind = "moved" if right or case % 2 else "archived"  # a gone case: no right page
            dead = f"https://{world}.example/news/story-{case}-about-things"
            top = (f"https://{world}.example/read/story-{case}-about-things" if right
                   else f"https://{world}.example/tag/things/")
            for rank, (url, confidence) in enumerate([(top, match), (dead + "-2", 0.05)], 1):
                rows.append({"world": world, "case": f"c{case}", "method": "full",
                             "dead_url": dead, "expect_kind": kind,
                             "archived_copy_found": case % 3 == 0, "answer": "none", "rank": rank,
                             "url": url, "confidence": confidence, "methods": ["SITE"],
                             "scores": _scores(content_cosine=match, url_similarity=match),
                             "right": right and rank == 1})
    return rows


@pytest.mark.parametrize("kind", ["logistic", "boosting"])
def test_train_save_load_round_trip(tmp_path: Path, kind: str):
    bench = load_bench("train_confidence")
    paths = []
    rows = _synthetic(7)
    for world in ("w1", "w2", "w3"):
        path = tmp_path / f"{world}.features.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["world"] == world))
        paths.append(path)
    out = tmp_path / "model.json"
    assert bench.main(["train", *map(str, paths), "--kind", kind, "--out", str(out)]) == 0
    model = learned.load_model(out)
    assert model.kind == kind and model.provenance["examples"] == 180
    assert [w["world"] for w in model.provenance["worlds"]] == ["w1", "w2", "w3"]
    # the pure evaluator gives the raw score scikit-learn's model gives
    data, _ = bench.load(paths)
    xs = np.array([e.x for e in data])
    ys = np.array([e.right for e in data])
    fitted = bench.fit(kind, xs, ys, 0)
    again = learned.ConfidenceModel.from_json(json.loads(json.dumps(fitted.to_json() | {
        "recommend_at": 0.5})))
    assert [again.raw(x) for x in xs] == pytest.approx([fitted.raw(x) for x in xs])
    if kind == "boosting":
        from sklearn.ensemble import GradientBoostingClassifier
        reference = GradientBoostingClassifier(random_state=0, **bench.BOOSTING).fit(xs, ys)
        assert [fitted.raw(x) for x in xs] == pytest.approx(
            list(reference.decision_function(xs)), abs=1e-9)
    # a clear right top is said at the chosen line, a clear wrong one is not
    right = next(e for e in data if e.right and e.x[0] > 0.9)
    wrong = next(e for e in data if not e.right and e.x[0] < 0.1)
    assert model.calibrate(model.raw(right.x)) >= model.recommend_at
    assert model.calibrate(model.raw(wrong.x)) < model.recommend_at


def test_a_model_naming_an_unknown_feature_is_refused(tmp_path: Path):
    data = learned.shipped_model().to_json()
    data["features"] = [*data["features"][:-1], "host_is_example_com"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ModelMissing, match="host_is_example_com"):
        learned.load_model(path)


def test_the_switch_lets_the_learned_probability_decide(monkeypatch: pytest.MonkeyPatch):
    dead = DeadURL(DEAD)
    memento = Memento(original_url=dead, memento_url="https://archive.example/2019/x",
                      raw_url="https://archive.example/2019id_/x",
                      datetime=__import__("datetime").datetime(2019, 6, 1), archive="a.example")

    def decide(top: learned.Listed):
        ranked = [Candidate(url=top.url, kind="moved", confidence=top.confidence,
                            methods=list(top.methods), scores=Scores(**top.scores),
                            evidence="same text")]
        return answer.for_dead(dead, Findings.start(dead, Budget()), DEAD_CHECK, memento, ranked,
                               None, {})

    # a right page the ranker scores below its line: silent with the switch off …
    shy = learned.Listed(SURE.url, 0.4, SURE.methods, SURE.scores)
    monkeypatch.setattr(policy, "LEARNED_CONFIDENCE", False)
    off = decide(shy)
    assert off.answer == "archived" and "answer_probability" not in off.evidence
    monkeypatch.setattr(policy, "LEARNED_CONFIDENCE", True)
    on = decide(shy)
    p = learned.top_probability(DEAD, [shy], archived_copy=True)
    assert on.evidence["answer_probability"] == pytest.approx(p, abs=1e-4)
    assert on.answer == ("moved" if p >= learned.shipped_model().recommend_at else "archived")
    assert on.candidates[-1].confidence == (
        policy.ARCHIVED_AS_FALLBACK if on.answer == "moved" else policy.ARCHIVED_AS_ANSWER)
    # … and a tag page the ranker over-trusts is not said with it on
    loud = learned.Listed(TAG.url, 0.6, TAG.methods, TAG.scores)
    assert decide(loud).answer == "archived"


def test_an_unreadable_model_is_named_in_the_answer_and_the_ranked_line_decides(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    dead = DeadURL(DEAD)
    broken = tmp_path / "model.json"
    broken.write_text("{not json")
    with pytest.raises(ModelMissing, match="cannot be read"):
        learned.load_model(broken)
    monkeypatch.setattr(policy, "LEARNED_CONFIDENCE", True)
    monkeypatch.setattr(learned, "shipped_model", lambda: learned.load_model(broken))
    sure = Candidate(url=SURE.url, kind="moved", confidence=0.95, methods=list(SURE.methods),
                     scores=Scores(**SURE.scores), evidence="same text")
    found = Findings.start(dead, Budget())
    result = answer.for_dead(dead, found, DEAD_CHECK, None, [sure], None, {})
    assert result.answer == "moved"  # 0.95 ≥ RECOMMEND_AT: the ranked confidence decided
    assert "answer_probability" not in result.evidence
    assert [f.engine for f in result.failures] == ["confidence"]
    assert result.failures[0].error.startswith("model_missing:")


def test_measure_redecides_each_answer_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = load_bench("train_confidence")
    rows = _synthetic(11)
    paths = []
    for world in ("w1", "w2", "w3"):
        path = tmp_path / f"{world}.features.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["world"] == world))
        paths.append(path)
    model_path = tmp_path / "model.json"
    assert bench.main(["train", *map(str, paths), "--out", str(model_path)]) == 0
    model = learned.load_model(model_path)
    # w1 as an eval with the switch off answered it: the ranker's confidence at 0.5
    first = [r for r in rows if r["world"] == "w1" and r["rank"] == 1]
    for row in first:
        row["answer"] = "moved" if row["confidence"] >= policy.RECOMMEND_AT else "none"
    scored = [r for r in first if r["expect_kind"] == "moved"]
    report = {"world": "w1", "overall": {"success_at_1": 0.5}, "answered": {"overall": {
        "n": len(scored), "dead": len(first),
        "right": sum(1 for r in scored if r["answer"] == "moved" and r["right"]),
        "wrong": sum(1 for r in first if r["answer"] == "moved" and not r["right"])}}}
    for row in rows:
        if row["world"] == "w1" and row["rank"] == 2:
            row["answer"] = next(f["answer"] for f in first if f["case"] == row["case"])
    features = tmp_path / "w1-eval.features.jsonl"
    features.write_text("".join(json.dumps(r) + "\n" for r in rows if r["world"] == "w1"))
    report_path = tmp_path / "w1.json"
    report_path.write_text(json.dumps(report))
    capsys.readouterr()
    assert bench.main(["measure", str(features), str(report_path), "--model", str(model_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mismatch_off"] == 0 and out["right_off"] == report["answered"]["overall"]["right"]
    on = [r for r in first if learned.top_probability(
        r["dead_url"], [learned.listed_from_record(x) for x in rows
                        if x["world"] == "w1" and x["case"] == r["case"]],
        archived_copy=r["archived_copy_found"], model=model) >= model.recommend_at]
    assert out["right_on"] == sum(1 for r in on if r["right"] and r["expect_kind"] == "moved")
    assert out["wrong_on"] == sum(1 for r in on if not r["right"])


def test_too_few_worlds_is_a_named_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = load_bench("train_confidence")
    path = tmp_path / "w1.features.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _synthetic(3) if r["world"] == "w1"))
    assert bench.main(["train", str(path), "--dry-run"]) == 2
    assert "at least 3 worlds" in capsys.readouterr().err
    assert bench.main(["train", str(tmp_path / "absent.jsonl")]) == 2
