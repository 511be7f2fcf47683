"""The evaluator's arithmetic on hand-computed examples (tools/eval/evaluate.py)."""

from __future__ import annotations

import json

import pytest

from pagetrail.tools.eval.evaluate import (
    Answer,
    CaseResult,
    build_report,
    cost_summary,
    offered_archived_copy,
    original_of_archived_copy,
    percentile,
    rank_of_first_correct,
)


def case(cid, kind, urls=(), category=None, url=None):
    category = category or {
        "moved": "moved_same_host", "replacement": "replaced", "archived": "gone",
        "none": "gone", "alive": "alive",
    }[kind]
    return {
        "id": cid, "url": url or f"https://old.example/{cid}", "source": None, "link_date": None,
        "category": category,
        "expect": {"kind": kind, "urls": list(urls), "archived": kind == "archived"},
    }


def result(cid, *answers, method="full", verdict="dead", archived_copy=None, requests=0,
           seconds=0.0, error=None):
    return CaseResult(
        id=cid, method=method, verdict=verdict,
        answers=[Answer(u, k, c) for u, k, c in answers],
        archived_copy=archived_copy, requests=requests, seconds=seconds, error=error,
    )


# --- ranks and URL normalisation -----------------------------------------------------------


@pytest.mark.parametrize("answer_url", [
    "http://new.example/a/",          # http vs https, trailing slash
    "https://www.new.example/a",      # www.
    "HTTPS://New.Example/a#section",  # case of scheme/host, fragment
    "https://new.example:443/a",      # default port
])
def test_rank_matches_normalised_urls(answer_url):
    assert rank_of_first_correct([Answer(answer_url, "moved", 0.9)], ["https://new.example/a"]) == 1


def test_rank_is_first_correct_position_and_repeats_take_no_rank():
    answers = [
        Answer("https://x.example/1", "moved", 0.9),
        Answer("http://www.x.example/1/", "moved", 0.8),  # the same URL again
        Answer("https://x.example/2", "replacement", 0.7),
        Answer("https://right.example/b", "moved", 0.6),
        Answer("https://right.example/a", "moved", 0.5),
    ]
    assert rank_of_first_correct(answers, ["https://right.example/a", "https://right.example/b"]) == 3
    assert rank_of_first_correct(answers, ["https://nowhere.example/"]) is None
    assert rank_of_first_correct([], ["https://right.example/a"]) is None


def test_ties_in_confidence_keep_the_engine_order():
    answers = [Answer("https://wrong.example/", "moved", 0.7), Answer("https://right.example/", "moved", 0.7)]
    assert rank_of_first_correct(answers, ["https://right.example/"]) == 2


def test_different_path_or_query_is_not_the_same_url():
    assert rank_of_first_correct([Answer("https://new.example/a?b=1", "moved", 1)], ["https://new.example/a"]) is None
    assert rank_of_first_correct([Answer("https://new.example/ab", "moved", 1)], ["https://new.example/a"]) is None


# --- archived copies -----------------------------------------------------------------------


def test_original_of_archived_copy():
    assert original_of_archived_copy(
        "http://127.0.0.1:8080/world/20190601000000id_/https://old.example/p?q=1"
    ) == "https://old.example/p?q=1"
    assert original_of_archived_copy("https://web.archive.org/web/2019/https:/old.example/p") == (
        "https://old.example/p")
    assert original_of_archived_copy("https://old.example/p") is None


def test_archived_offered_only_for_a_copy_of_the_case_url():
    url = "https://old.example/story/"
    own = result("a", archived_copy="http://127.0.0.1:9/world/20190601000000id_/http://www.old.example/story")
    other = result("a", archived_copy="http://127.0.0.1:9/world/20190601000000id_/https://old.example/other")
    as_answer = result("a", ("http://127.0.0.1:9/world/20190601000000/https://old.example/story", "archived", 0.4))
    failed = result("a", archived_copy=own.archived_copy, error="fetch_failed: boom")
    assert offered_archived_copy(own, url)
    assert not offered_archived_copy(other, url)
    assert offered_archived_copy(as_answer, url)
    assert not offered_archived_copy(failed, url)
    assert not offered_archived_copy(None, url)


# --- the whole report ----------------------------------------------------------------------


def hand_world():
    cases = [
        case("m1", "moved", ["https://new.example/1"]),
        case("m2", "moved", ["https://new.example/2"], category="moved_new_host"),
        case("m3", "moved", ["https://new.example/3"]),
        case("r1", "replacement", ["https://other.example/r1", "https://other2.example/r1"]),
        case("m4", "moved", ["https://new.example/4"]),          # no result at all
        case("a1", "archived"),
        case("a2", "archived"),
        case("n1", "none"),
        case("n2", "none"),
        case("l1", "alive", ["https://old.example/l1"]),
        case("l2", "alive", ["https://old.example/l2"]),
    ]
    wrong = ("https://wrong.example/", "moved", 0.9)
    results = [
        result("m1", ("https://new.example/1", "moved", 0.95), requests=10, seconds=1.0),       # rank 1
        result("m2", wrong, wrong, ("http://www.new.example/2/", "moved", 0.6),
               requests=20, seconds=2.0),                                                        # rank 2
        result("m3", *[(f"https://w.example/{i}", "moved", 0.5) for i in range(10)],
               ("https://new.example/3", "moved", 0.4), requests=30, seconds=3.0),               # rank 11
        result("r1", ("https://x.example/", "replacement", 0.6), ("https://x.example/2", "replacement", 0.5),
               ("https://x.example/3", "replacement", 0.5), ("https://other2.example/r1", "replacement", 0.4),
               requests=40, seconds=4.0),                                                        # rank 4
        result("a1", ("https://live.example/", "replacement", 0.5),                              # confident wrong
               archived_copy="http://127.0.0.1:1/world/20200101000000id_/https://old.example/a1",
               requests=50, seconds=5.0),
        result("a2", ("https://live.example/", "replacement", 0.49), requests=60, seconds=6.0),
        result("n1", ("http://127.0.0.1:1/world/20200101000000/https://old.example/n1", "archived", 0.9),
               ("https://live.example/", "moved", 0.8), requests=70, seconds=7.0),               # archived first
        result("n2", error="engine_unavailable: x", verdict=None, requests=80, seconds=8.0),
        result("l1", verdict="soft404", requests=90, seconds=9.0),
        result("l2", verdict="transient", requests=100, seconds=10.0),
        # a single-method run: only m3 found, at rank 1
        result("m3", ("https://new.example/3", "moved", 0.9), method="TI"),
    ]
    return cases, results


def test_report_figures_by_hand():
    cases, results = hand_world()
    report = build_report("hand", cases, results)
    # ranks over moved/replacement: m1=1, m2=2, m3=11, r1=4, m4=missing
    assert report["overall"] == pytest.approx({
        "n": 5, "success_at_1": 1 / 5, "success_at_10": 3 / 5,
        "mrr": (1 + 1 / 2 + 1 / 11 + 1 / 4) / 5,
    })
    assert report["by_category"]["moved_same_host"] == pytest.approx({
        "n": 3, "success_at_1": 1 / 3, "success_at_10": 1 / 3, "mrr": (1 + 1 / 11) / 3})
    assert report["by_category"]["moved_new_host"] == pytest.approx({
        "n": 1, "success_at_1": 0.0, "success_at_10": 1.0, "mrr": 0.5})
    assert report["by_category"]["replaced"]["mrr"] == pytest.approx(0.25)
    assert report["by_category"]["gone"]["n"] == 0
    assert list(report["by_method"]) == ["TI", "full"]
    assert report["by_method"]["TI"] == pytest.approx({
        "n": 5, "success_at_1": 0.2, "success_at_10": 0.2, "mrr": 0.2})
    assert report["by_method"]["full"] == report["overall"]
    assert report["archived"] == {"n": 2, "offered": 1}
    # abstention over a1, a2, n1, n2: only a1 puts a live URL first with confidence >= 0.5
    assert report["abstention"] == pytest.approx({"n": 4, "confident_wrong": 1, "precision": 0.75})
    assert report["alive"] == {"n": 2, "called_dead": 1}
    # cost over the 10 full results: requests 10..100, seconds 1..10
    assert report["cost"] == pytest.approx({
        "requests_median": 55, "requests_p90": 90, "seconds_median": 5.5, "seconds_p90": 9.0})
    assert report["cases"] == 11 and report["world"] == "hand"


def test_errors_count_as_misses_and_a_single_method_is_primary():
    cases = [case("m1", "moved", ["https://new.example/1"]), case("m2", "moved", ["https://new.example/2"])]
    results = [
        result("m1", ("https://new.example/1", "moved", 0.9), method="LS5", error="fetch_failed: x"),
        result("m2", ("https://new.example/2", "moved", 0.9), method="LS5"),
    ]
    report = build_report("w", cases, results)
    assert list(report["by_method"]) == ["LS5"]
    assert report["overall"] == pytest.approx({"n": 2, "success_at_1": 0.5, "success_at_10": 0.5, "mrr": 0.5})


def test_empty_results_and_no_cases():
    report = build_report("w", [], [])
    assert report["overall"] == {"n": 0, "success_at_1": 0.0, "success_at_10": 0.0, "mrr": 0.0}
    assert report["abstention"]["precision"] == 0.0 and report["cost"]["requests_p90"] == 0
    cases = [case("m1", "moved", ["https://new.example/1"])]
    assert build_report("w", cases, [])["overall"]["n"] == 1


def test_percentiles_are_nearest_rank():
    assert percentile([5, 1, 3], 0.9) == 5
    assert percentile(list(range(1, 21)), 0.9) == 18
    assert percentile([7], 0.9) == 7
    assert cost_summary([result("x", requests=4), result("y", requests=6)])["requests_median"] == 5


def test_report_shape_matches_format_md():
    cases, results = hand_world()
    report = json.loads(json.dumps(build_report("hand", cases, results)))
    assert set(report) == {"format", "world", "cases", "overall", "answered", "by_category",
                           "by_archived", "by_method", "archived", "abstention", "alive", "cost",
                           "errors", "results"}
    summary_keys = {"n", "success_at_1", "success_at_10", "mrr"}
    assert set(report["overall"]) == summary_keys
    assert all(set(v) == summary_keys for v in report["by_category"].values())
    assert all(set(v) == summary_keys for v in report["by_method"].values())
    assert set(report["archived"]) == {"n", "offered"}
    assert set(report["abstention"]) == {"n", "confident_wrong", "precision"}
    assert set(report["alive"]) == {"n", "called_dead"}
    assert set(report["cost"]) == {"requests_median", "requests_p90", "seconds_median", "seconds_p90"}
    assert len(report["results"]) == len(results)
    first = report["results"][0]
    assert set(first) == {"id", "method", "verdict", "answers", "archived_copy", "requests",
                          "seconds", "error", "drifted", "search_queries", "rate_limited",
                          "answer"}
    assert set(first["answers"][0]) == {"url", "kind", "confidence"}
    # results follow the cases' order, methods in report order (TI before full)
    assert [(r["id"], r["method"]) for r in report["results"]][2:4] == [("m3", "TI"), ("m3", "full")]
    # and they round-trip, so the figures can be recomputed from the report alone
    again = build_report("hand", cases, [CaseResult.from_dict(r) for r in report["results"]])
    assert again == report


# --- the runner ----------------------------------------------------------------------------

import asyncio  # noqa: E402
import ssl  # noqa: E402
from pathlib import Path  # noqa: E402

import httpx  # noqa: E402

from pagetrail.cli.main import main as cli_main  # noqa: E402
from pagetrail.tools.errors import FetchFailed, PagetrailError  # noqa: E402
from pagetrail.tools.eval.eval_runner import (  # noqa: E402
    EngineChoice,
    expand_methods,
    recovery_to_result,
    run_evaluation,
)
from pagetrail.tools.models import Candidate, CheckResult, Memento, Recovery  # noqa: E402

DEMO = Path(__file__).resolve().parent.parent / "demo" / "world"


class CountingEngine:
    """A stand-in engine: answers each case's first expected URL, tracks how many run at once."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.calls: list[tuple[str, frozenset[str] | None, str | None]] = []

    async def __call__(self, url: str, *, methods=None, anchor=None, link_date=None, **_):
        self.running += 1
        self.peak = max(self.peak, self.running)
        self.calls.append((url, methods, anchor))
        try:
            await asyncio.sleep(0.02)
            if url.endswith("/boom"):
                raise FetchFailed("connection refused", url=url)
            if url.endswith("/slow"):
                await asyncio.sleep(30)
            return Recovery(url=url, answer="moved", requests=3,
                            check=CheckResult(url=url, verdict="dead", status=404),
                            candidates=[Candidate(url=url + "-new", kind="moved", confidence=0.8)])
        finally:
            self.running -= 1


async def test_runner_bounds_concurrency_maps_methods_and_records_failures():
    cases = [case(f"m{i}", "moved", [f"https://old.example/m{i}-new"]) for i in range(7)]
    cases += [case("b", "moved", ["https://x.example/"], url="https://old.example/boom"),
              case("s", "moved", ["https://x.example/"], url="https://old.example/slow")]
    engine = CountingEngine()
    seen: list[CaseResult] = []
    results = await run_evaluation(cases, methods=["TI", "full"], engine=EngineChoice(engine, "test"),
                                   concurrency=3, timeout=2.0, on_result=seen.append)
    assert engine.peak == 3
    assert len(results) == len(seen) == 18
    assert {m for _, m, _ in engine.calls} == {frozenset({"TI"}), None}
    by_key = {(r.id, r.method): r for r in results}
    assert by_key[("b", "TI")].error.startswith("fetch_failed: connection refused")
    assert by_key[("s", "full")].error.startswith("timeout")
    assert by_key[("m0", "full")].answers == [Answer("https://old.example/m0-new", "moved", 0.8)]
    assert by_key[("m0", "full")].requests == 3 and by_key[("m0", "full")].verdict == "dead"
    report = build_report("w", cases, results, method_order=["TI", "full"])
    assert report["overall"]["n"] == 9 and report["overall"]["success_at_1"] == pytest.approx(7 / 9)


async def test_runner_without_an_engine_records_an_error_per_case():
    cases = [case("m1", "moved", ["https://new.example/1"])]
    results = await run_evaluation(cases, engine=EngineChoice(None, "unavailable", "nothing here"))
    assert results[0].error == "engine_unavailable: nothing here"


def test_recovery_to_result():
    check = CheckResult(url="https://a.example/x", verdict="redirected",
                        final_url="https://a.example/y")
    memento = Memento(original_url="https://a.example/x", archive="t", datetime="2019-01-01T00:00:00Z",
                      memento_url="http://127.0.0.1:1/w/20190101000000/https://a.example/x",
                      raw_url="http://127.0.0.1:1/w/20190101000000id_/https://a.example/x")
    rec = Recovery(url="https://a.example/x", answer="redirected", check=check, memento=memento,
                   requests=2)
    result = recovery_to_result("c1", "full", rec, seconds=1.23456, requests=5)
    assert result.answers == [Answer("https://a.example/y", "moved", 1.0)]
    assert result.archived_copy == memento.raw_url
    assert (result.requests, result.seconds, result.verdict) == (5, 1.235, "redirected")


def test_expand_methods():
    assert expand_methods(None) == ["full"]
    assert expand_methods("ls5") == ["LS5"]
    runs = expand_methods("all")
    assert runs[-1] == "full" and {"TI", "LS5", "LS7", "TA", "ANC", "ANC+expansion", "URL", "LNLS",
                                   "SITE", "ARCHIVE-only"} == set(runs[:-1])
    with pytest.raises(PagetrailError, match="unknown method"):
        expand_methods("TITLE")


# --- the command ---------------------------------------------------------------------------


def test_eval_rejects_a_malformed_world_before_starting(tmp_path, capsys):
    world = tmp_path / "w"
    world.mkdir()
    (world / "world.json").write_text('{"format": 1, "archive_collection": "world",\n'
                                      ' "hosts": {"a.example": {"state": "up"}}}')
    (world / "live.jsonl").write_text('{"url": "https://a.example/", "status": 301,'
                                      ' "headers": {"Location": "/x"}}\n{"url": 5}\n')
    assert cli_main(["eval", str(world)]) == 2
    err = capsys.readouterr().err
    assert "live.jsonl:2" in err and len(err.strip().splitlines()) == 1


async def http_engine(url: str, *, settings, **_):
    """A tiny real engine: fetch the URL through the testbed proxy and its archived copy."""
    trust = ssl.create_default_context(cafile=settings.ca_bundle)
    async with httpx.AsyncClient(proxy=settings.proxy, verify=trust, timeout=10) as client:
        try:
            live = await client.get(url)
            verdict = {200: "ok", 404: "dead", 410: "dead"}.get(live.status_code, "transient")
            if live.headers.get("x-squid-error"):
                verdict = "unreachable"
        except httpx.HTTPError:
            verdict = "transient"
    async with httpx.AsyncClient(timeout=10) as client:
        answer = await client.get(f"{settings.archives[0]}/2020id_/{url}")
        if answer.status_code in (302, 307):  # to the closest capture (stay in the archive)
            answer = await client.get(str(answer.url.join(answer.headers["location"])))
        memento, raw = None, str(answer.url)
        if answer.status_code == 200 and raw.startswith(settings.archives[0]):
            memento = Memento(original_url=url, memento_url=raw, raw_url=raw, archive="testbed",
                              datetime="2020-01-01T00:00:00Z")
    return Recovery(url=url, answer="archived" if memento else "none", memento=memento,
                    check=CheckResult(url=url, verdict=verdict), requests=2)


def test_eval_runs_end_to_end_on_the_demo_world(tmp_path, capsys, monkeypatch):
    import pagetrail.cli.eval_cmd as eval_cmd

    monkeypatch.setattr(eval_cmd, "resolve_eval_engine", lambda: EngineChoice(http_engine, "test"))
    report_file = tmp_path / "report.md"
    code = cli_main(["eval", str(DEMO), "--limit", "6", "--json", "--report", str(report_file)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["cases"] == 6 and len(report["results"]) == 6
    assert all(r["error"] is None and r["verdict"] for r in report["results"]), report["results"]
    cases = [json.loads(x) for x in (DEMO / "cases.jsonl").read_text().splitlines()][:6]
    scored = [c for c in cases if c["expect"]["kind"] in ("moved", "replacement")]
    assert report["overall"]["n"] == len(scored) and report["overall"]["mrr"] == 0.0
    archived = [c for c in cases if c["expect"]["kind"] == "archived" and c["expect"]["archived"]]
    assert report["archived"]["offered"] == len(archived)  # pywb served each case's capture
    text = report_file.read_text()
    assert "| method | n | success@1 | success@10 | MRR |" in text and "| full |" in text
