"""The learned ranking and answer (`ranking.learned`, bench/train_ranking.py, the switch in
`recovery.answer.for_dead`): hand-made candidate lists, the shipped model, a train → save →
load round trip on small synthetic worlds, `measure`'s re-decision."""

from __future__ import annotations

import json
import random
from datetime import datetime
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
            best_rank=1, rrf=0.05, final=0.9, context_similarity=0.8),
    "Solar farms double in a year")
# A tag page: one word of the slug, a list of links, little of the copy's text.
TAG = learned.Listed(
    "https://old.example/tag/solar/", 0.08, ("LINKS",),
    _scores(content_cosine=0.2, content_lm=0.15, title_similarity=0.2, url_similarity=0.2,
            same_site=True, query_votes=1, best_rank=6, rrf=0.01, final=0.2, listing=1.0),
    "Solar")


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


def test_title_alignment_reads_the_slug_in_the_title():
    # the right page: its title is the slug's words (umlauts and accents as slugs write them)
    right = learned.title_alignment("https://a.example/2016/01/medienpaedagogin-in-muenchen-gesucht/",
                                    "Medienpädagogin in München gesucht")
    assert right == {"title_known_text": 1.0, "title_slug_in_order": 1.0, "title_slug_share": 1.0,
                     "title_extra_words": 0.0, "title_extra_share": 0.0}
    # a page that repeats the slug with other words: the words the slug has not are counted
    edition = learned.title_alignment(DEAD, "Solar farms double in a year: the second look")
    assert edition["title_slug_in_order"] == 1.0 and edition["title_extra_words"] == 3.0
    assert edition["title_extra_share"] == pytest.approx(3 / 9)
    # a tag page's title holds one of the slug's words
    tag = learned.title_alignment(DEAD, "Solar")
    assert tag["title_slug_in_order"] == pytest.approx(1 / 6) and tag["title_extra_words"] == 0.0
    assert learned.title_alignment(DEAD, "")["title_known_text"] == 0.0


def test_kinship_reads_which_candidate_is_another_ones_derivative():
    base = learned.Listed("https://old.example/read/solar-farms-double-in-a-year", 0.4,
                          title="Solar farms double in a year")
    edition = learned.Listed("https://old.example/news/solar-farms-double-in-a-year-2024", 0.5,
                             title="Solar farms double in a year (2024 edition)")
    ranked = [edition, base, TAG]
    assert learned.kinship(ranked, 0) == {"title_extends_other": 1.0, "title_base_of_other": 0.0,
                                          "name_extends_other": 1.0, "name_base_of_other": 0.0}
    assert learned.kinship(ranked, 1) == {"title_extends_other": 0.0, "title_base_of_other": 1.0,
                                          "name_extends_other": 0.0, "name_base_of_other": 1.0}
    # a one-word title or page name is nobody's base (every title "extends" a tag's word)
    assert learned.kinship(ranked, 2)["title_base_of_other"] == 0.0
    assert learned.kinship([edition, TAG], 0)["title_extends_other"] == 0.0
    # the same title twice: neither adds to the other
    twin = learned.Listed("https://mirror.example/solar", 0.3, title=base.title)
    assert set(learned.kinship([base, twin], 0).values()) == {0.0}
    assert learned.candidate_features(DEAD, ranked, 0, archived_copy=True)[
        "title_extends_other"] == 1.0


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


def test_an_eval_row_keeps_the_hand_rankings_view():
    # a row of an eval run with the learned ranking: placed 1st at 0.97, the hand ranking had
    # it 3rd at 0.2 — training reads the hand ranking's place and confidence
    rows = [{"url": u, "rank": r, "confidence": c, "scores": _scores(hand_rank=h, hand_confidence=hc)}
            for u, r, c, h, hc in (("https://a.example/x", 1, 0.97, 3, 0.2),
                                   ("https://a.example/y", 2, 0.4, 1, 0.6),
                                   ("https://a.example/z", 3, 0.1, 2, 0.3))]
    ordered = learned.hand_order(rows)
    assert [r["url"] for r in ordered] == ["https://a.example/y", "https://a.example/z",
                                           "https://a.example/x"]
    assert [learned.listed_from_record(r).confidence for r in ordered] == [0.6, 0.3, 0.2]
    # rows without the hand fields (an eval of the hand ranking) keep their own
    plain = [{"url": "https://a.example/q", "rank": 1, "confidence": 0.5, "scores": {}}]
    assert learned.listed_from_record(learned.hand_order(plain)[0]).confidence == 0.5


def test_the_shipped_model_loads_with_its_provenance():
    model = learned.shipped_model()
    assert model.ranking.features == learned.FEATURES and model.ranking.kind == "boosting"
    assert model.answer.kind == "logistic" and set(model.answer.features) <= set(learned.ANSWER_FEATURES)
    assert list(model.answer.features) == model.provenance["answer_params"]["inputs"]
    assert model.depth == policy.LEARNED_DEPTH and 0.0 < model.recommend_at <= 1.0
    provenance = model.provenance
    assert len(provenance["worlds"]) >= 3 and all("world" in w for w in provenance["worlds"])
    assert provenance["error_target"] == pytest.approx(0.01)
    assert provenance["trained"] and "seed" in provenance and provenance["cases"] > 100
    assert 0.5 < provenance["out_of_fold_ranking"]["auc"] <= 1.0
    assert 0.5 < provenance["out_of_fold_answer"]["auc"] <= 1.0
    assert {r["world"] for r in provenance["out_of_fold_table"]} == {
        w["world"] for w in provenance["worlds"]}


def test_the_shipped_model_says_the_right_page_and_not_a_tag_page():
    model = learned.shipped_model()
    decision = learned.decide(DEAD, [SURE, TAG], archived_copy=True)
    assert decision == learned.decide(DEAD, [SURE, TAG], archived_copy=True)  # pure
    assert decision.order == (0, 1)
    assert decision.probabilities[0] > decision.probabilities[1]
    assert decision.answer >= model.recommend_at == decision.recommend_at
    # a tag page first, a category page beside it — what a thin search leaves — is not said.
    # (The models fitted on full lists alone read the hand ranking's lead as the answer and
    # said it at 0.92-0.99; since the ranking is also fitted on each list's listing pages
    # alone, `--augment-listings`, it is not: `train_ranking measure` counts the same on
    # real lists, its `listing_alone`.)
    category = learned.Listed("https://old.example/category/energy/", 0.05, ("LINKS",),
                              dict(TAG.scores), "Energy")
    listing = learned.decide(DEAD, [TAG, category], archived_copy=True)
    assert listing.order == (0, 1) and listing.answer < decision.answer - 0.05
    assert not policy.recommends(listing.answer, listing.recommend_at)
    with pytest.raises(ValueError, match="at least one"):
        learned.decide(DEAD, [], archived_copy=True)
    calibration = model.answer
    assert list(calibration.calibration_y) == sorted(calibration.calibration_y)
    grid = np.linspace(min(calibration.calibration_x) - 1, max(calibration.calibration_x) + 1, 400)
    calibrated = [calibration.calibrate(float(x)) for x in grid]
    assert calibrated == sorted(calibrated) and 0.0 <= calibrated[0] <= calibrated[-1] <= 1.0


def _by_hand(weights: dict[str, float], intercept: float, names: tuple[str, ...]) -> learned.Scorer:
    """A logistic scorer over a few named features (the others weigh nothing)."""
    return learned.Scorer(kind="logistic", features=names, intercept=intercept,
                          coefficients=tuple(weights.get(n, 0.0) for n in names),
                          means=(0.0,) * len(names), scales=(1.0,) * len(names))


# A model made by hand: the page whose text is the archived copy's is the right one, and an
# answer is right when the first is far surer than the second.
CONTENT_MODEL = learned.AnswerModel(
    ranking=_by_hand({"content_cosine": 12.0}, -6.0, learned.FEATURES),
    answer=_by_hand({"learned_gap": 1.0}, 0.0, learned.ANSWER_FEATURES), depth=10,
    recommend_at=0.9)


def test_only_the_first_depth_candidates_are_reordered():
    shallow = learned.AnswerModel(ranking=CONTENT_MODEL.ranking, answer=CONTENT_MODEL.answer,
                                  depth=1, recommend_at=CONTENT_MODEL.recommend_at)
    loud_tag = learned.Listed(TAG.url, 0.6, TAG.methods, TAG.scores)
    assert learned.decide(DEAD, [loud_tag, SURE], archived_copy=True,
                          model=CONTENT_MODEL).order == (1, 0)
    decision = learned.decide(DEAD, [loud_tag, SURE], archived_copy=True, model=shallow)
    assert decision.order == (0, 1) and len(decision.probabilities) == 1


def _synthetic(seed: int, worlds: tuple[str, ...] = ("w1", "w2", "w3")) -> list[dict[str, object]]:
    """Feature rows of small worlds. The hand ranking often puts a tag page over the right
    page; the right page's content matches the archived copy, the tag page's does not."""
    rng = random.Random(seed)
    rows = []
    for world in worlds:
        for case in range(60):
            gone = case % 5 == 4  # no right page anywhere
            dead = f"https://{world}.example/news/story-{case}-about-things"
            right_url = f"https://{world}.example/read/story-{case}-about-things"
            tag_url = f"https://{world}.example/tag/things-{case}/"
            match = rng.uniform(0.7, 1.0)
            right_row = (right_url, rng.uniform(0.2, 0.9), match, not gone)
            tag_row = (tag_url, rng.uniform(0.2, 0.9), rng.uniform(0.0, 0.3), False)
            listed = [right_row, tag_row] if gone or rng.random() < 0.5 else [tag_row, right_row]
            if gone:
                listed = [tag_row]
            listed.sort(key=lambda r: -r[1])
            for rank, (url, confidence, content, right) in enumerate(listed, 1):
                rows.append({"world": world, "case": f"c{case}", "method": "full",
                             "dead_url": dead, "expect_kind": "gone" if gone else "moved",
                             "archived_copy_found": True, "answer": "none", "rank": rank,
                             "url": url, "confidence": confidence, "methods": ["SITE"],
                             "scores": _scores(content_cosine=content, url_similarity=content),
                             "right": right})
    return rows


def _write_worlds(tmp_path: Path, rows: list[dict[str, object]]) -> list[Path]:
    paths = []
    for world in dict.fromkeys(str(r["world"]) for r in rows):
        path = tmp_path / f"{world}.features.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["world"] == world))
        paths.append(path)
    return paths


def test_train_save_load_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = load_bench("train_ranking")
    paths = _write_worlds(tmp_path, _synthetic(7))
    out = tmp_path / "model.json"
    assert bench.main(["train", *map(str, paths), "--folds", "world", "--out", str(out),
                       "--error-target", "0.05"]) == 0
    table = capsys.readouterr().out
    assert "| w1 (w1) |" in table and "success@1 hand → learned" in table
    model = learned.load_model(out)
    assert model.provenance["cases"] == 180 and model.provenance["folds"] == "world"
    assert [w["world"] for w in model.provenance["worlds"]] == ["w1", "w2", "w3"]
    # out of fold, the learned ranking puts the right page first where the hand one did not
    for row in model.provenance["out_of_fold_table"]:
        assert row["success_at_1_learned"] > row["success_at_1_hand"]
    # the pure evaluator gives the raw score scikit-learn's model gives
    data, _, _ = bench.load(paths)
    xs = np.vstack([c.x for c in data])
    booster, scorer = bench.fit_booster(data, 0)
    assert [scorer.raw(list(x)) for x in xs] == pytest.approx(
        list(booster.decision_function(xs)), abs=1e-9)
    assert [model.ranking.raw(list(x)) for x in xs] == pytest.approx(
        [scorer.raw(list(x)) for x in xs])
    # a case the hand ranking got wrong is re-ordered and said; a gone case is not said
    rows = _synthetic(7)
    wrong_first = next(r for r in rows if r["rank"] == 1 and not r["right"]
                       and r["expect_kind"] == "moved")
    case = [r for r in rows if r["world"] == wrong_first["world"]
            and r["case"] == wrong_first["case"]]
    decision = learned.decide(str(case[0]["dead_url"]),
                              [learned.listed_from_record(r) for r in case],
                              archived_copy=True, model=model)
    assert decision.order[0] == 1 and decision.answer >= model.recommend_at
    gone = [r for r in rows if r["expect_kind"] == "gone"][:1]
    assert learned.decide(str(gone[0]["dead_url"]), [learned.listed_from_record(gone[0])],
                          archived_copy=True, model=model).answer < model.recommend_at


def test_a_model_naming_an_unknown_feature_or_of_another_format_is_refused(tmp_path: Path):
    data = learned.shipped_model().to_json()
    bad = json.loads(json.dumps(data))
    bad["ranking"]["features"] = [*bad["ranking"]["features"][:-1], "host_is_example_com"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ModelMissing, match="host_is_example_com"):
        learned.load_model(path)
    path.write_text(json.dumps({**data, "format": 1}))
    with pytest.raises(ModelMissing, match="format 1"):
        learned.load_model(path)
    path.write_text(json.dumps({**data, "depth": 0}))
    with pytest.raises(ModelMissing, match="depth 0"):
        learned.load_model(path)


def _memento(dead: DeadURL) -> Memento:
    return Memento(original_url=dead, memento_url="https://archive.example/2019/x",
                   raw_url="https://archive.example/2019id_/x",
                   datetime=datetime(2019, 6, 1), archive="a.example")


def _candidate(listed: learned.Listed) -> Candidate:
    return Candidate(url=listed.url, kind="moved", confidence=listed.confidence,
                     methods=list(listed.methods), scores=Scores(**listed.scores),
                     evidence="same text")


def test_the_switch_reorders_the_list_and_lets_the_learned_answer_decide(
        monkeypatch: pytest.MonkeyPatch):
    dead = DeadURL(DEAD)
    loud_tag = learned.Listed(TAG.url, 0.6, TAG.methods, TAG.scores)
    shy = learned.Listed(SURE.url, 0.4, SURE.methods, SURE.scores)

    def decide() -> answer.Recovery:
        return answer.for_dead(dead, Findings.start(dead, Budget()), DEAD_CHECK, _memento(dead),
                               [_candidate(loud_tag), _candidate(shy)], None, {})

    monkeypatch.setattr(learned, "shipped_model", lambda: CONTENT_MODEL)
    monkeypatch.setattr(policy, "LEARNED_ANSWER", False)
    off = decide()  # the hand ranking says its over-trusted tag page
    assert off.answer == "moved" and off.candidates[0].url == TAG.url
    assert "answer_probability" not in off.evidence
    monkeypatch.setattr(policy, "LEARNED_ANSWER", True)
    on = decide()
    decision = learned.decide(DEAD, [loud_tag, shy], archived_copy=True)
    assert decision.order == (1, 0) and decision.answer >= CONTENT_MODEL.recommend_at
    assert [c.url for c in on.candidates[:2]] == [SURE.url, TAG.url]
    assert on.evidence["answer_probability"] == pytest.approx(decision.answer, abs=1e-4)
    assert on.answer == "moved" and "hand ranking had it at place 2" in on.candidates[0].evidence
    first, second = on.candidates[0], on.candidates[1]
    assert first.confidence == pytest.approx(decision.answer, abs=1e-4)
    assert second.confidence <= first.confidence
    assert (first.scores.hand_rank, first.scores.hand_confidence) == (2, 0.4)
    assert (second.scores.hand_rank, second.scores.hand_confidence) == (1, 0.6)
    assert first.scores.learned == pytest.approx(decision.probabilities[0], abs=1e-4)
    assert on.candidates[-1].kind == "archived"
    assert on.candidates[-1].confidence == policy.ARCHIVED_AS_FALLBACK


def test_an_unreadable_model_is_named_in_the_answer_and_the_hand_ranking_decides(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    dead = DeadURL(DEAD)
    broken = tmp_path / "model.json"
    broken.write_text("{not json")
    with pytest.raises(ModelMissing, match="cannot be read"):
        learned.load_model(broken)
    monkeypatch.setattr(policy, "LEARNED_ANSWER", True)
    monkeypatch.setattr(learned, "shipped_model", lambda: learned.load_model(broken))
    loud_tag = learned.Listed(TAG.url, 0.95, TAG.methods, TAG.scores)
    found = Findings.start(dead, Budget())
    result = answer.for_dead(dead, found, DEAD_CHECK, None,
                             [_candidate(loud_tag), _candidate(SURE)], None, {})
    assert result.answer == "moved" and result.candidates[0].url == TAG.url  # hand order
    assert "answer_probability" not in result.evidence
    assert [f.engine for f in result.failures] == ["confidence"]
    assert result.failures[0].error.startswith("model_missing:")


def test_measure_redecides_each_answer_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = load_bench("train_ranking")
    rows = _synthetic(11)
    model_path = tmp_path / "model.json"
    assert bench.main(["train", *map(str, _write_worlds(tmp_path, rows)), "--folds", "world",
                       "--out", str(model_path)]) == 0
    model = learned.load_model(model_path)
    # w1 as an eval of the hand ranking answered it: the first's confidence at 0.5
    w1 = [dict(r) for r in rows if r["world"] == "w1"]
    by_case: dict[str, list[dict[str, object]]] = {}
    for row in w1:
        by_case.setdefault(str(row["case"]), []).append(row)
    for case_rows in by_case.values():
        said = policy.recommends(float(case_rows[0]["confidence"]))
        for row in case_rows:
            row["answer"] = "moved" if said else "none"
    firsts = [c[0] for c in by_case.values()]
    scored = [r for r in firsts if r["expect_kind"] == "moved"]
    report = {"world": "w1", "overall": {"success_at_1": sum(r["right"] for r in scored) / len(scored)},
              "answered": {"overall": {
                  "n": len(scored), "dead": len(firsts),
                  "right": sum(1 for r in scored if r["answer"] == "moved" and r["right"]),
                  "wrong": sum(1 for r in firsts if r["answer"] == "moved" and not r["right"])}}}
    features = tmp_path / "eval" / "w1.features.jsonl"
    features.parent.mkdir()
    features.write_text("".join(json.dumps(r) + "\n" for r in w1))
    report_path = tmp_path / "w1.json"
    report_path.write_text(json.dumps(report))
    capsys.readouterr()
    assert bench.main(["measure", str(features), str(report_path), "--model", str(model_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mismatch_hand"] == 0 and out["right_hand"] == report["answered"]["overall"]["right"]
    assert out["success_at_1_hand"] == pytest.approx(report["overall"]["success_at_1"], abs=1e-4)
    right_on = wrong_on = top_on = 0
    for case_rows in by_case.values():
        decision = learned.decide(str(case_rows[0]["dead_url"]),
                                  [learned.listed_from_record(r) for r in case_rows],
                                  archived_copy=True, model=model)
        first = case_rows[decision.order[0]]
        top_on += int(bool(first["right"]))
        if decision.answer >= model.recommend_at:
            right_on += int(bool(first["right"]))
            wrong_on += int(not first["right"])
    assert (out["right_learned"], out["wrong_learned"]) == (right_on, wrong_on)
    assert out["success_at_1_learned"] == pytest.approx(top_on / len(scored), abs=1e-4)
    assert out["success_at_1_learned"] > out["success_at_1_hand"]
    # a run whose recoveries were starved of time measures the machine: refused, named
    report["by_method"] = {"full": {}}
    report["results"] = [{"id": str(c), "method": "full", "failures": {"budget": 1}}
                         for c in by_case]
    report_path.write_text(json.dumps(report))
    assert bench.main(["measure", str(features), str(report_path), "--model",
                       str(model_path)]) == 2
    err = capsys.readouterr().err
    assert f"the time budget ran out on {len(by_case)} of {len(by_case)} recoveries" in err


def test_listing_alone_decides_the_listing_pages_of_each_list_without_the_others():
    bench = load_bench("train_ranking")

    def row(case: str, rank: int, url: str, content: float, right: bool, listing: float,
            kind: str = "gone") -> dict[str, object]:
        return {"case": case, "method": "full", "dead_url": "https://a.example/news/x",
                "expect_kind": kind, "archived_copy_found": True, "answer": "none",
                "rank": rank, "url": url, "confidence": 0.5 - rank / 10, "methods": ["SITE"],
                "scores": _scores(content_cosine=content, listing=listing), "right": right}

    rows = [
        # a gone page: the tag page's text is the copy's (said alone), the category's is not
        row("c1", 1, "https://a.example/tag/x/", 0.95, False, 1.0),
        row("c1", 2, "https://a.example/category/y/", 0.1, False, 1.0),
        # moved: the right page, and two listing pages alike, neither the copy's text: left
        # alone, neither stands out (not said)
        row("c2", 1, "https://a.example/read/x", 0.95, True, 0.0, "moved"),
        row("c2", 2, "https://a.example/tag/x/", 0.1, False, 1.0, "moved"),
        row("c2", 3, "https://a.example/tag/y/", 0.1, False, 1.0, "moved"),
        # a listing page that is the right page: not a listing left alone by mistake
        row("c3", 1, "https://a.example/topics/x/", 0.95, True, 1.0, "moved"),
        # no listing page: nothing to leave alone
        row("c4", 1, "https://a.example/read/z", 0.95, False, 0.0),
    ]
    assert bench.listing_alone(rows, CONTENT_MODEL) == {"cases": 2, "said": 1}


def test_too_few_worlds_and_malformed_rows_are_named_usage_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = load_bench("train_ranking")
    paths = _write_worlds(tmp_path, _synthetic(3))
    assert bench.main(["train", str(paths[0]), "--dry-run"]) == 2
    assert "at least 3 worlds" in capsys.readouterr().err
    assert bench.main(["train", str(tmp_path / "absent.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    for payload, message in (("{not json\n", "not JSON"), ("[1, 2]\n", "not a feature row"),
                             ('{"case": "c1"}\n', "without dead_url"),
                             ('{"case": "c1", "dead_url": "u", "rank": 1, "url": "v", '
                              '"confidence": 0.1, "expect_kind": "alive", "answer": "alive", '
                              '"right": false}\n', "no decided case")):
        paths[0].write_text(payload)
        assert bench.main(["train", *map(str, paths), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    # a model file that cannot be written: named, exit 2, no traceback
    good = _write_worlds(tmp_path, _synthetic(3))
    unwritable = tmp_path / "no-such-dir" / "model.json"
    assert bench.main(["train", *map(str, good), "--out", str(unwritable)]) == 2
    err = capsys.readouterr().err
    assert str(unwritable) in err and "Traceback" not in err


def test_the_line_is_chosen_from_the_pooled_count_and_its_uncertainty():
    bench = load_bench("train_ranking")
    binomial = __import__("scipy.stats", fromlist=["binom"]).binom
    # more wrong answers, a riskier world; a world at 3 % is over 1 % for sure
    risks = [bench.world_risk(wrong, 1000, 250, 0.01) for wrong in (0, 1, 3, 10, 30)]
    assert risks == sorted(risks) and risks[0] < 0.01 and risks[-1] > 0.9
    # the same rate on less evidence is less sure: the tail is fatter than the binomial's
    # at the point rate, and tends to it as the evidence grows
    point = float(binomial.sf(2, 250, 0.002))
    few, many = bench.world_risk(3, 1500, 250, 0.01), bench.world_risk(300, 150_000, 250, 0.01)
    assert few > many > point * 0.95 and many == pytest.approx(point, rel=0.1)
    assert few > 1.5 * point
    with pytest.raises(ValueError, match="wrong of"):
        bench.world_risk(5, 3, 250, 0.01)

    def case(world: str, number: int) -> object:
        return bench.Case(world=world, family=world, case=f"c{number}", scored=True,
                          answer="moved", hand_confidence=0.5, features=({},), right=(True,))

    data = [case(w, i) for w in ("a", "b") for i in range(100)]
    probability = np.linspace(0.01, 0.99, len(data))
    right = [True] * len(data)
    right[100] = right[120] = False  # two wrong answers, both in world "b"
    line = bench.choose_line(data, probability, right, 0.01, 0.05)
    # a world of 100 dead cases may be wrong once; after 1 wrong of 200 a second wrong
    # answer is too likely (over 5 %), so the line passes both wrong ones
    assert bench.world_risk(1, 200, 100, 0.01) > 0.05 >= bench.world_risk(0, 200, 100, 0.01)
    assert line == pytest.approx(probability[121])
    loose = bench.world_risk(1, 200, 100, 0.01) + 0.01
    assert bench.choose_line(data, probability, right, 0.01, loose) == pytest.approx(
        probability[101])  # a looser risk keeps one of them
    nothing_safe = bench.choose_line(data, probability, [False] * len(data), 0.01, 0.05)
    assert nothing_safe > probability.max()


def test_lists_without_their_right_page_train_the_ranking_only(tmp_path: Path):
    bench = load_bench("train_ranking")
    rows = _synthetic(7)
    paths = _write_worlds(tmp_path, rows)
    data, _, variants = bench.load(paths, augment=True)
    with_right = [c for c in data if any(c.right)]
    assert len(variants) == len(with_right) > 0
    assert not any(any(v.right) for v in variants)  # the right page is gone, all are wrong
    assert all(v.case.endswith("#missing") and not v.scored for v in variants)
    # a variant is its case's list less the right page: the tag page alone, first
    case = with_right[0]
    variant = next(v for v in variants if v.case == f"{case.case}#missing"
                   and v.world == case.world)
    assert len(variant.features) == len(case.features) - 1
    assert variant.features[0]["rank_inverse"] == 1.0
    # the variants are fitted on, never judged: the answer, the line and the table count
    # the real cases only
    out = tmp_path / "model.json"
    assert bench.main(["train", *map(str, paths), "--augment-missing", "--out", str(out)]) == 0
    provenance = learned.load_model(out).provenance
    assert provenance["missing_variants"] == len(variants)
    assert provenance["cases"] == len(data) == 180
    assert "--augment-missing" in provenance["command"]
    assert sum(r["decided"] for r in provenance["out_of_fold_table"]) == len(data)


def test_worlds_dealt_into_fold_groups_and_fitted_in_parallel(tmp_path: Path):
    bench = load_bench("train_ranking")
    rows = _synthetic(7, worlds=("w1", "w2", "w3", "w4", "w5"))
    paths = _write_worlds(tmp_path, rows)
    data, _, variants = bench.load(paths, augment=True)
    folds = bench.fold_of(data, "world", 2)
    assert sorted(set(folds)) == ["group0", "group1"]
    # a world is never split across folds: held out, all of its cases are held out together
    by_world: dict[str, set[str]] = {}
    for case, fold in zip(data, folds, strict=True):
        by_world.setdefault(case.world, set()).add(fold)
    assert all(len(f) == 1 for f in by_world.values()) and len(by_world) == 5
    assert bench.fold_of(data, "world", 9) == [c.world for c in data]  # more groups than worlds
    one = bench.out_of_fold_ranking(data, folds, 0, variants, "world", jobs=1)
    two = bench.out_of_fold_ranking(data, folds, 0, variants, "world", jobs=2)
    assert all(np.array_equal(a, b) for a, b in zip(one, two, strict=True))
    # a fold's variants train the other fold only: held out together with their world
    alone = bench.out_of_fold_ranking(data, folds, 0, (), "world", jobs=1)
    assert not all(np.array_equal(a, b) for a, b in zip(one, alone, strict=True))
    out = tmp_path / "model.json"
    assert bench.main(["train", *map(str, paths), "--fold-groups", "2", "--jobs", "2",
                       "--out", str(out)]) == 0
    provenance = learned.load_model(out).provenance
    assert provenance["fold_groups"] == 2 and "--fold-groups 2" in provenance["command"]
    assert bench.main(["train", *map(str, paths), "--fold-groups", "1", "--dry-run"]) == 2


def test_a_lists_listing_pages_alone_train_the_ranking_only(tmp_path: Path):
    bench = load_bench("train_ranking")
    rows = _synthetic(7)
    for row in rows:  # the synthetic tag pages are listing pages
        if "/tag/" in str(row["url"]):
            row["scores"] = {**dict(row["scores"]), "listing": 1.0}  # type: ignore[arg-type]
    paths = _write_worlds(tmp_path, rows)
    data, _, variants = bench.load(paths, listings=True)
    # a list of the tag page and the right page gives its tag page alone, all wrong; a list of
    # the tag page alone (a gone case) is already what a thin search gives: no variant
    two = [c for c in data if len(c.features) == 2]
    assert len(variants) == len(two) > 0
    assert all(v.case.endswith("#listings") and not v.scored and v.right == (False,)
               for v in variants)
    assert all(v.features[0]["listing"] == 1.0 and v.features[0]["lead"] == v.features[0][
        "confidence"] for v in variants)  # re-read in its own list: first, alone
    out = tmp_path / "model.json"
    assert bench.main(["train", *map(str, paths), "--augment-listings", "--out", str(out)]) == 0
    provenance = learned.load_model(out).provenance
    assert provenance["listing_variants"] == len(variants)
    assert provenance["missing_variants"] == 0 and provenance["cases"] == len(data)
    assert "--augment-listings" in provenance["command"]


def test_the_line_is_chosen_again_on_worlds_the_model_never_saw(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = load_bench("train_ranking")
    trained = tmp_path / "trained"
    trained.mkdir()
    model_path = tmp_path / "model.json"
    assert bench.main(["train", *map(str, _write_worlds(trained, _synthetic(5))),
                       "--folds", "world", "--out", str(model_path)]) == 0
    model = learned.load_model(model_path)
    unseen = tmp_path / "unseen"
    unseen.mkdir()
    paths = _write_worlds(unseen, _synthetic(6, ("h1", "h2", "h3")))
    for path in paths:  # an eval report whose recoveries all finished
        path.with_name(path.name.replace(".features.jsonl", ".json")).write_text("{}")
    out = tmp_path / "relined.json"
    capsys.readouterr()
    # worlds of 48 dead cases: 1 % of one is no wrong answer at all, which 144 answers
    # cannot promise; 5 % is two
    assert bench.main(["line", *map(str, paths), "--model", str(model_path),
                       "--out", str(out), "--risk", "0.05", "--error-target", "0.05"]) == 0
    table = capsys.readouterr().out
    assert "| h1 |" in table and "| h3 |" in table
    relined = learned.load_model(out)
    line = relined.provenance["line"]
    assert [w["world"] for w in line["worlds"]] == ["h1", "h2", "h3"]
    assert line["trained_line"] == pytest.approx(model.recommend_at)
    assert relined.recommend_at == pytest.approx(line["chosen"], abs=1e-6)
    # the models are the trained ones; only the line moved
    assert relined.ranking.to_json() == model.ranking.to_json()
    assert relined.provenance["worlds"] == model.provenance["worlds"]
    # the line is the rule's over the model's own decisions on the unseen worlds
    held = [bench.held_out(bench.world_name(p), bench.read_rows(p), model) for p in paths]
    answers = np.concatenate([h.answers for h in held])
    wrong = np.concatenate([h.wrong for h in held])
    dead = int(np.median([len(h.answers) for h in held]))
    safe = bench.lowest_safe_line(answers, list(wrong), dead, 0.05, 0.05)
    assert line["cases"] == pytest.approx(safe, abs=1e-6)  # the provenance's, rounded
    assert safe <= float(answers.max())  # a safe line was found
    told = sum(h.told(relined.recommend_at)["wrong"] for h in held)
    assert bench.world_risk(told, len(answers), dead, 0.05) <= 0.05
    lower = [a for a in answers if a < safe]
    if lower:  # one step lower the rule is broken
        below = max(lower)
        assert bench.world_risk(int(((answers >= below) & wrong).sum()), len(answers),
                                dead, 0.05) > 0.05
    assert sum(r["right"] for r in line["table"]) == sum(
        h.told(relined.recommend_at)["right"] for h in held) > 0
    pooled = sum(h.told(relined.recommend_at)["wrong"] for h in held)
    dead_all = sum(len(h.answers) for h in held)
    assert f"| **all** | {relined.recommend_at:.3f} |" in table
    assert f" {pooled} of {dead_all} |" in table.split(f"| **all** | {relined.recommend_at:.3f}")[1]


def test_a_line_is_refused_on_training_worlds_few_worlds_or_starved_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = load_bench("train_ranking")
    trained = _write_worlds(tmp_path, _synthetic(5))
    model_path = tmp_path / "model.json"
    assert bench.main(["train", *map(str, trained), "--folds", "world",
                       "--out", str(model_path)]) == 0
    unseen = tmp_path / "unseen"
    unseen.mkdir()
    paths = _write_worlds(unseen, _synthetic(6, ("h1", "h2", "h3")))
    capsys.readouterr()

    def refused(args: list[Path], message: str) -> None:
        assert bench.main(["line", *map(str, args), "--model", str(model_path),
                           "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err

    refused(paths, "h1.json is missing")
    for path in paths:
        path.with_name(path.name.replace(".features.jsonl", ".json")).write_text("{}")
    refused([trained[0], *paths], "w1: the model was trained on it")
    refused(paths[:2], "at least 3 worlds")
    starved = {"by_method": {"full": {}},
               "results": [{"id": f"c{i}", "method": "full", "failures": {"budget": 1}}
                           for i in range(20)]}
    (unseen / "h2.json").write_text(json.dumps(starved))
    refused(paths, "the time budget ran out on 20 of 20 recoveries")


def test_the_line_also_keeps_thin_lists_untold():
    bench = load_bench("train_ranking")

    def world(name: str, thin: list[float]) -> object:
        answers = np.linspace(0.05, 0.99, 200)
        wrong = np.zeros(200, dtype=bool)
        return bench.HeldOut(world=name, answers=answers, wrong=wrong, scored=~wrong,
                             scored_right=~wrong, thin=np.array(thin))

    # every decided answer right, thin lists under them: everything is said
    quiet = bench.line_on_held_out([world(n, [0.01, 0.02]) for n in "abc"], 0.01, 0.01)
    assert quiet["cases"] == pytest.approx(0.05) and quiet["chosen"] == pytest.approx(0.05)
    # thin lists whose listing pages the model is sure of: the line rises over most of them
    loud = bench.line_on_held_out([world(n, [0.6, 0.7, 0.8, 0.9]) for n in "abc"], 0.01, 0.01)
    assert loud["thin_lists"] > 0.8 and loud["chosen"] == loud["thin_lists"]
    assert loud["median_dead"] == 200
