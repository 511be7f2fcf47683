"""What the user is told, scored by hand (tools/eval/answered.py), and the per-candidate
feature rows (tools/eval/features.py) written by `pagetrail eval --features`."""

from __future__ import annotations

import json

import pytest

from pagetrail.cli.eval_cmd import answered_lines, render_markdown
from pagetrail.tools import policy
from pagetrail.tools.eval.answered import band_label, band_of, outcome, recommended
from pagetrail.tools.eval.eval_runner import recovery_to_result
from pagetrail.tools.eval.evaluate import Answer, CaseResult, build_report, rank_of_first_correct
from pagetrail.tools.eval.features import feature_rows
from pagetrail.tools.eval.multiworld import figures
from pagetrail.tools.models import Candidate, CheckResult, Recovery, Scores

RIGHT = "https://new.example/right"
OTHER = "https://new.example/other"
COPY = "http://127.0.0.1:1/w/20190101000000id_/https://old.example/{}"


def case(cid, category, kind, urls=(), archived=True, source=True):
    return {"id": cid, "url": f"https://old.example/{cid}",
            "source": {"url": "https://blog.example/links", "anchor": "a page"} if source else None,
            "link_date": None, "category": category,
            "expect": {"kind": kind, "urls": list(urls), "archived": archived}}


def told(cid, answer, *answers, copy=False):
    return CaseResult(id=cid, verdict="dead", answer=answer,
                      answers=[Answer(u, k, c) for u, k, c in answers],
                      archived_copy=COPY.format(cid) if copy else None)


def hand_world():
    cases = [
        case("r1", "moved_same_host", "moved", [RIGHT]),                 # told right, 0.93
        case("r2", "moved_new_host", "moved", [RIGHT], archived=False),  # told right, 0.55
        case("w1", "moved_same_host", "moved", [RIGHT]),                 # told wrong, 0.75
        case("s1", "replaced", "replacement", [RIGHT], archived=False),  # right page at 0.4: silent
        case("s2", "moved_same_host", "moved", [RIGHT]),                 # archived, no live page
        case("g1", "gone", "none", archived=False),                      # told a live page: wrong
        case("g2", "gone", "archived"),                                  # told archived: right
        case("a1", "alive", "alive"),
    ]
    results = [
        told("r1", "moved", (RIGHT, "moved", 0.93), (OTHER, "moved", 0.2)),
        told("r2", "moved", (RIGHT, "moved", 0.55)),
        told("w1", "moved", (OTHER, "moved", 0.75), (RIGHT, "moved", 0.7)),
        told("s1", "archived", (RIGHT, "replacement", 0.4), (COPY.format("s1"), "archived", 0.5),
             copy=True),
        told("s2", "archived", copy=True),
        told("g1", "replacement", (OTHER, "replacement", 0.6)),
        told("g2", "archived", (OTHER, "moved", 0.05), copy=True),
        CaseResult(id="a1", verdict="ok", answer="alive"),
    ]
    return cases, results


def test_answered_right_and_wrong_by_hand():
    cases, results = hand_world()
    answered = build_report("hand", cases, results)["answered"]
    overall = answered["overall"]
    # right: r1, r2 of 5 moved/replaced; wrong: w1 and the gone case g1, of 7 dead cases
    assert (overall["n"], overall["right"], overall["answered_right"]) == (5, 2, 0.4)
    assert (overall["dead"], overall["wrong"]) == (7, 2)
    assert overall["answered_wrong"] == pytest.approx(2 / 7, abs=1e-4)
    assert overall["told"] == {"right": 2, "wrong": 2, "archived": 3, "none": 0, "other": 0}
    by_cat = answered["by_category"]
    assert (by_cat["moved_same_host"]["right"], by_cat["moved_same_host"]["wrong"]) == (1, 1)
    assert by_cat["gone"]["wrong"] == 1 and by_cat["gone"]["n"] == 0
    assert by_cat["alive"]["dead"] == 0
    with_copy, without = answered["by_archived"]["with_copy"], answered["by_archived"]["without_copy"]
    assert (with_copy["n"], with_copy["right"], with_copy["wrong"]) == (3, 1, 1)
    assert (without["n"], without["right"], without["wrong"]) == (2, 1, 1)


def test_a_wrong_recommended_answer_is_counted_wrong_even_with_the_right_page_second():
    cases, results = hand_world()
    report = build_report("hand", cases, results)
    assert outcome(cases[2], results[2]).told == "wrong"
    assert report["answered"]["by_category"]["moved_same_host"]["wrong"] == 1
    # the list holds the right page second: success@10 counts it, the answer is still wrong
    assert rank_of_first_correct(results[2].answers, [RIGHT]) == 2


def test_confidence_bands_count_top_candidates_and_answers():
    cases, results = hand_world()
    bands = {b["band"]: b for b in build_report("hand", cases, results)["answered"]["bands"]}
    assert list(bands) == ["[0,0.1)", "[0.1,0.3)", "[0.3,0.5)", "[0.5,0.7)", "[0.7,0.9)",
                           "[0.9,1]"]
    assert (bands["[0.9,1]"]["top"], bands["[0.9,1]"]["answers_right"]) == (1, 1)
    assert (bands["[0.7,0.9)"]["answers"], bands["[0.7,0.9)"]["answers_right"]) == (1, 0)
    assert (bands["[0.5,0.7)"]["top"], bands["[0.5,0.7)"]["answers"],
            bands["[0.5,0.7)"]["answers_right"]) == (2, 2, 1)  # r2 right, g1 wrong
    assert (bands["[0.3,0.5)"]["top"], bands["[0.3,0.5)"]["top_right"],
            bands["[0.3,0.5)"]["answers"]) == (1, 1, 0)  # right and not said
    assert bands["[0,0.1)"]["top"] == 1 and bands["[0,0.1)"]["top_right"] == 0
    assert sum(b["top"] for b in bands.values()) == 6  # every dead case with a live candidate


def test_band_edges():
    assert [band_of(x) for x in (0.0, 0.0999, 0.1, 0.5, 0.8999, 0.9, 1.0)] == [0, 0, 1, 3, 4, 5, 5]
    assert band_label(5) == "[0.9,1]" and band_label(0) == "[0,0.1)"


def test_results_without_an_answer_are_read_by_the_recommend_line():
    right = CaseResult(id="x", verdict="dead", answers=[Answer(RIGHT, "moved", policy.RECOMMEND_AT)])
    below = CaseResult(id="x", verdict="dead",
                       answers=[Answer(RIGHT, "moved", policy.RECOMMEND_AT - 0.01)])
    assert recommended(right) == Answer(RIGHT, "moved", policy.RECOMMEND_AT)
    assert recommended(below) is None
    assert recommended(CaseResult(id="x", error="timeout: slow",
                                  answers=[Answer(RIGHT, "moved", 0.9)])) is None
    # a redirect recommends its target
    assert recommended(told("x", "redirected", (RIGHT, "moved", 0.97))) == Answer(RIGHT, "moved", 0.97)


def test_by_archived_success_and_multiworld_figures():
    cases, results = hand_world()
    report = build_report("hand", cases, results)
    assert report["by_archived"]["with_copy"]["n"] == 3
    assert report["by_archived"]["with_copy"]["success_at_1"] == pytest.approx(1 / 3)
    assert report["by_archived"]["without_copy"]["success_at_1"] == pytest.approx(1.0)
    fig = figures(report)
    assert fig["answered_right"] == 0.4 and fig["answered_wrong"] == 2 and fig["dead"] == 7
    assert fig["without_copy.success_at_1"] == pytest.approx(1.0)
    assert fig["right_at_0.9"] == pytest.approx(1 / 5)  # r1 only


def test_the_report_leads_with_what_the_user_is_told():
    cases, results = hand_world()
    report = build_report("hand", cases, results)
    first = answered_lines(report)[0]
    assert first.startswith("answered right: 2 of 5 moved/replaced (0.400); answered wrong: 2 of 7")
    text = render_markdown(report)
    assert text.index("What the user is told") < text.index("Per method")
    assert "| [0.9,1] | 1 | 1 | 1 | 1 |" in text


def _candidate(url, confidence, **scores):
    return Candidate(url=url, kind="moved", confidence=confidence, methods=["TI"],
                     scores=Scores(**scores))


def test_feature_rows_carry_every_score_and_the_label():
    recovery = Recovery(
        url="https://old.example/r1", answer="moved",
        check=CheckResult(url="https://old.example/r1", verdict="dead", status=404),
        candidates=[_candidate(OTHER, 0.8, title_similarity=0.4, url_similarity=0.3),
                    _candidate(RIGHT, 0.6, content_cosine=0.9, offshoot=True),
                    Candidate(url=COPY.format("r1"), kind="archived", confidence=0.5)])
    result = recovery_to_result("r1", "full", recovery, seconds=1.0)
    assert result.answer == "moved" and len(result.candidates) == 2  # the archived copy is no row
    assert "candidates" not in result.to_dict()  # rows go to the feature file, not the report
    cases = [case("r1", "moved_same_host", "moved", [RIGHT], source=False)]
    rows = json.loads(json.dumps(feature_rows("hand", cases, [result])))
    assert [r["url"] for r in rows] == [OTHER, RIGHT]
    assert [r["right"] for r in rows] == [False, True]
    assert [r["recommended"] for r in rows] == [True, False]
    assert [r["rank"] for r in rows] == [1, 2] and rows[0]["margin"] == pytest.approx(0.2)
    assert set(rows[0]["scores"]) == set(Scores.model_fields)
    assert rows[1]["scores"]["content_cosine"] == 0.9 and rows[1]["scores"]["offshoot"] is True
    assert rows[0]["world"] == "hand" and rows[0]["category"] == "moved_same_host"
    assert rows[0]["source_known"] is False and rows[0]["expect_archived"] is True
    # a failed run has no rows
    assert feature_rows("hand", cases, [CaseResult(id="r1", error="timeout: x")]) == []


def test_saved_reports_are_summarised_each_mean_and_worst():
    from tests.bench_scripts import load_bench

    summarise = load_bench("eval_summary")
    cases, results = hand_world()
    better = [told(r.id, "moved", (RIGHT, "moved", 0.95)) if r.id in ("s1", "s2") else r
              for r in results]
    reports = [json.loads(json.dumps(build_report(name, cases, found)))
               for name, found in (("w1", results), ("w2", better))]
    result = summarise.summary(reports)
    s = result["summary"]
    assert s["per_world"]["w1"]["answered_right"] == 0.4
    assert s["per_world"]["w2"]["answered_right"] == 0.8
    assert s["mean"]["answered_right"] == pytest.approx(0.6)
    assert s["worst"]["answered_right"] == {"value": 0.4, "world": "w1"}
    assert s["worst"]["answered_wrong"]["value"] == 2
    text = summarise.table(result)
    assert "| **worst** | 0.400 (w1) | 2 (" in text


DEMO = __import__("pathlib").Path(__file__).resolve().parent.parent / "demo" / "world"


async def _answering_engine(url: str, **_kwargs):
    """Recommends the dead URL plus '-new' at 0.8, and a second candidate at 0.3."""
    return Recovery(url=url, answer="moved",
                    check=CheckResult(url=url, verdict="dead", status=404),
                    candidates=[_candidate(url + "-new", 0.8, title_similarity=0.5),
                                _candidate(url + "-other", 0.3)])


def test_eval_writes_the_feature_rows_and_leads_with_answers(tmp_path, capsys, monkeypatch):
    import pagetrail.cli.eval_cmd as eval_cmd
    from pagetrail.cli.main import main as cli_main
    from pagetrail.tools.eval.eval_runner import EngineChoice

    monkeypatch.setattr(eval_cmd, "resolve_eval_engine",
                        lambda: EngineChoice(_answering_engine, "test"))
    rows_file = tmp_path / "rows.jsonl"
    code = cli_main(["eval", str(DEMO), "--running", "--limit", "5", "--json",
                     "--features", str(rows_file)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert len(rows) == 2 * 5  # two live candidates a case
    assert {r["case"] for r in rows} == {r["id"] for r in report["results"]}
    assert all(r["right"] is False for r in rows)  # '-new' is never the demo's answer
    overall = report["answered"]["overall"]
    dead = sum(1 for r in report["results"]) - report["alive"]["n"]
    assert overall["wrong"] == dead  # every dead case was told a wrong live page
    assert overall["right"] == 0


def test_an_unwritable_feature_file_is_a_named_usage_error(tmp_path, capsys, monkeypatch):
    import pagetrail.cli.eval_cmd as eval_cmd
    from pagetrail.cli.main import main as cli_main
    from pagetrail.tools.eval.eval_runner import EngineChoice

    monkeypatch.setattr(eval_cmd, "resolve_eval_engine",
                        lambda: EngineChoice(_answering_engine, "test"))
    code = cli_main(["eval", str(DEMO), "--running", "--limit", "1", "--json",
                     "--features", str(tmp_path / "no-such-dir" / "rows.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert "--features: cannot write" in err and "Traceback" not in err
