"""Several worlds in one evaluation (tools/eval/multiworld.py, `pagetrail eval W1 W2`), and
where a recovery's requests go (tools/eval/costs.py, tools/eval/recording.py).

Worlds are hand-made: reports built from hand-written cases and results, and the shared tiny
testbed world (tools/testbed/worldgen.py) copied under other names for the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagetrail.cli.eval_cmd import render_multiworld_markdown
from pagetrail.cli.main import main as cli_main
from pagetrail.tools.eval.costs import (
    UNATTRIBUTED,
    FetchRecord,
    breakdown,
    cost_breakdown,
    endpoint_keys,
    purpose_of,
)
from pagetrail.tools.eval.eval_runner import EngineChoice, run_case
from pagetrail.tools.eval.evaluate import Answer, CaseResult, build_report
from pagetrail.tools.eval.multiworld import (
    WorldRun,
    build_multiworld_report,
    figures,
    void_reason,
)
from pagetrail.tools.models import CheckResult, EngineFailure, Recovery
from pagetrail.tools.testbed.worldgen import build_tiny_world

# --- where the requests go ------------------------------------------------------------------

ARCHIVES = endpoint_keys(["http://127.0.0.1:8080/world"])
SOCIAL = endpoint_keys(["https://hn.algolia.com/api/v1"])
DEAD = "https://news.example/2019/old-story"
SOURCE = "http://blog.example/links"


@pytest.mark.parametrize(("record", "purpose"), [
    (FetchRecord("HEAD", "https://news.example/2019/old-story/", "linkcheck.check:check_link"),
     "check"),
    (FetchRecord("GET", "https://other.example/new", "linkcheck.check:check_link"),
     "candidate check"),
    (FetchRecord("GET", "https://news.example/", "linkcheck.hostprobe:probe_host"),
     "check: host probe"),
    (FetchRecord("GET", "http://127.0.0.1:8080/world/timemap/link/" + DEAD, "archive.memento:_get"),
     "archive: TimeMap"),
    (FetchRecord("GET", "http://127.0.0.1:8080/world/cdx?url=" + DEAD, "archive.memento:_get"),
     "archive: CDX index"),
    (FetchRecord("GET", "http://127.0.0.1:8080/world/20190601000000id_/" + DEAD,
                 "recovery.related:fetch"), "archive: memento fetch"),
    (FetchRecord("GET", "http://127.0.0.1:8080/world/" + DEAD, "archive.memento:_get"),
     "archive: TimeGate"),
    (FetchRecord("GET", "http://127.0.0.1:8080/world/cdx?url=news.example/*",
                 "engines.cdx:_fetch_one"), "search: cdx"),
    (FetchRecord("GET", "http://127.0.0.1:8888/search?q=x", "engines.searxng:search"),
     "search: searxng"),
    (FetchRecord("GET", "https://news.example/sitemap_index.xml", "engines.site:_get"),
     "site map: robots/sitemaps"),
    (FetchRecord("GET", "https://news.example/robots.txt", "engines.site:_get"),
     "site map: robots/sitemaps"),
    (FetchRecord("GET", "https://news.example/", "engines.site:_get"), "site map: pages"),
    (FetchRecord("GET", "https://hn.algolia.com/api/v1/search?query=x", "evidence.tags:get"),
     "social"),
    (FetchRecord("GET", SOURCE, "recovery.pipeline:_source_page"), "linking page"),
    (FetchRecord("GET", "https://news.example/a", "linkcheck.drift:check_drift"), "drift check"),
    (FetchRecord("GET", "https://news.example/a", "recovery.pipeline:_fetch_candidates"),
     "page fetch"),
    (FetchRecord("GET", "https://news.example/a", ""), "page fetch"),
])
def test_purpose_of_each_kind_of_fetch(record, purpose):
    assert purpose_of(record, case_url=DEAD, source_url=SOURCE, archives=ARCHIVES,
                      social=SOCIAL) == purpose


def test_breakdown_sums_and_names_what_it_cannot_explain():
    records = [FetchRecord("HEAD", DEAD, "linkcheck.check:check_link", "recovery.pipeline:_recover",
                           requests=2, seconds=0.5),
               FetchRecord("GET", DEAD, "linkcheck.check:check_link", "recovery.pipeline:_recover",
                           requests=1, seconds=0.25),
               FetchRecord("GET", "https://x.example/p", "recovery.pipeline:_fetch_candidates",
                           "recovery.pipeline:_fetch_candidates", requests=1, seconds=0.1)]
    purposes, stages = breakdown(records, total_requests=6, case_url=DEAD, archives=ARCHIVES)
    assert purposes == {"check": {"requests": 3, "seconds": 0.75},
                        "page fetch": {"requests": 1, "seconds": 0.1},
                        UNATTRIBUTED: {"requests": 2, "seconds": 0.0}}
    assert stages["recovery.pipeline:_recover"]["requests"] == 3
    assert sum(row["requests"] for row in stages.values()) == 6
    # All explained: no unattributed line.
    purposes, _ = breakdown(records, total_requests=4, case_url=DEAD)
    assert UNATTRIBUTED not in purposes


def test_cost_breakdown_over_recoveries_means_medians_and_categories():
    def line(cid, **purposes):
        return CaseResult(cid, purposes={k.replace("_", " "): {"requests": v, "seconds": v / 10}
                                         for k, v in purposes.items()})

    results = [line("a", check=1, page_fetch=9), line("b", check=1), line("c", check=2, page_fetch=3),
               CaseResult("d")]  # no breakdown (an older report's line)
    cases = [{"id": "a", "category": "moved_same_host"}, {"id": "b", "category": "gone"},
             {"id": "c", "category": "moved_same_host"}, {"id": "d", "category": "gone"}]
    out = cost_breakdown(results, cases)
    assert out["recoveries"] == 3 and out["without_breakdown"] == 1
    page = out["by_purpose"]["page fetch"]
    assert page["requests"] == 12 and page["requests_mean"] == 4.0 and page["requests_median"] == 3
    assert page["share"] == pytest.approx(12 / 16, abs=1e-4)
    assert list(out["by_purpose"]) == ["page fetch", "check"]  # largest first
    assert out["by_category"]["moved_same_host"] == {"recoveries": 2, "page fetch": 6.0,
                                                     "check": 1.5}
    assert out["by_category"]["gone"] == {"recoveries": 1, "check": 1.0}


def test_report_carries_the_breakdown_only_when_recorded():
    cases = [{"id": "a", "url": DEAD, "category": "gone", "expect": {"kind": "none"}}]
    plain = build_report("w", cases, [CaseResult("a")])
    assert "cost_breakdown" not in plain and "purposes" not in plain["results"][0]
    recorded = CaseResult("a", purposes={"check": {"requests": 1, "seconds": 0.1}},
                          stages={"x": {"requests": 1, "seconds": 0.1}}, failures={"searxng": 1})
    report = json.loads(json.dumps(build_report("w", cases, [recorded])))
    assert report["cost_breakdown"]["by_purpose"]["check"]["requests"] == 1
    again = build_report("w", cases, [CaseResult.from_dict(r) for r in report["results"]])
    assert again == report  # the breakdown round-trips through the result lines


async def test_a_real_recovery_is_broken_down_in_full(tiny_world, testbed_settings, tmp_path):
    """The real pipeline on the tiny world's moved case: every request the fetcher counted is
    explained by a purpose, and the dead URL's check, the linking page and the archive show."""
    from pagetrail.store import Store
    from pagetrail.tools.recovery.pipeline import recover

    case = next(json.loads(line) for line in (tiny_world.path / "cases.jsonl").read_text()
                .splitlines() if json.loads(line)["url"] == tiny_world.moved_from)
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        result = await run_case(case, "full", recover, settings=testbed_settings.model_copy(
            update={"database_url": store.url}), timeout=120, store=store)
    finally:
        store.dispose()
    assert result.error is None, result.error
    assert result.requests > 0
    assert sum(row["requests"] for row in result.purposes.values()) == result.requests
    assert UNATTRIBUTED not in result.purposes, result.purposes
    assert result.purposes["check"]["requests"] >= 1
    assert result.purposes["linking page"]["requests"] == 1
    assert any(p.startswith("archive: ") for p in result.purposes), result.purposes
    assert sum(row["requests"] for row in result.stages.values()) == result.requests


# --- several worlds -------------------------------------------------------------------------


def _case(cid: str, kind: str, category: str, urls: tuple[str, ...] = ()) -> dict:
    return {"id": cid, "url": f"https://old.example/{cid}", "source": None, "link_date": None,
            "category": category, "expect": {"kind": kind, "urls": list(urls)}}


CASES = [_case("s1", "moved", "moved_same_host", ("https://old.example/new/s1",)),
         _case("s2", "moved", "moved_same_host", ("https://old.example/new/s2",)),
         _case("n1", "moved", "moved_new_host", ("https://new.example/n1",)),
         _case("r1", "replacement", "replaced", ("https://other.example/r1",)),
         _case("g1", "none", "gone"), _case("a1", "alive", "alive")]


def _world(hits: dict[str, int], *, requests: int = 10, wrong_on_gone: bool = False,
           called_dead: bool = False, failures: dict[str, int] | None = None) -> list[CaseResult]:
    """Results of one hand-made world: `hits[id]` is the rank of the right URL (absent: not
    found)."""
    out = []
    for case in CASES:
        cid, urls = case["id"], case["expect"]["urls"]
        answers = [Answer(f"https://wrong.example/{cid}/{i}", "moved", 0.6) for i in range(3)]
        if cid in hits:
            answers.insert(hits[cid] - 1, Answer(urls[0], "moved", 0.9))
        if cid == "g1" and not wrong_on_gone:
            answers = []
        verdict = "dead" if cid != "a1" or called_dead else "ok"
        out.append(CaseResult(cid, verdict=verdict, answers=answers if cid != "a1" else [],
                              requests=requests, seconds=requests / 10,
                              failures=dict(failures or {}),
                              purposes={"check": {"requests": 1, "seconds": 0.1},
                                        "page fetch": {"requests": requests - 1,
                                                       "seconds": 0.5}},
                              stages={"recovery.x:fetch": {"requests": requests,
                                                           "seconds": 0.6}}))
    return out


def _report(name: str, results: list[CaseResult]) -> dict:
    return json.loads(json.dumps(build_report(name, CASES, results)))


def test_figures_of_a_world_report():
    report = _report("w", _world({"s1": 1, "s2": 2, "n1": 1}, wrong_on_gone=True))
    fig = figures(report)
    assert fig["success_at_1"] == 0.5 and fig["success_at_10"] == 0.75
    assert fig["moved_same_host.success_at_1"] == 0.5 and fig["replaced.success_at_1"] == 0.0
    assert fig["confident_wrong"] == 1 and fig["called_dead"] == 0 and fig["n"] == 4


def test_each_world_the_mean_and_the_worst():
    good = _report("good", _world({"s1": 1, "s2": 1, "n1": 1, "r1": 1}, requests=10))
    weak = _report("weak", _world({"s1": 1, "s2": 3, "n1": 1}, requests=16, wrong_on_gone=True))
    odd = _report("odd", _world({"s1": 1, "s2": 1, "n1": 2, "r1": 1}, requests=12,
                                called_dead=True))
    multi = build_multiworld_report([WorldRun("good", report=good), WorldRun("weak", report=weak),
                                     WorldRun("odd", report=odd)])
    assert multi["complete"] and multi["failed"] == [] and multi["modes"] == ["web"]
    summary = multi["summary"]["web"]
    assert list(summary["per_world"]) == ["good", "weak", "odd"]
    assert summary["mean"]["success_at_1"] == pytest.approx((1.0 + 0.5 + 0.75) / 3, abs=1e-4)
    assert summary["worst"]["success_at_1"] == {"value": 0.5, "world": "weak"}
    assert summary["worst"]["moved_new_host.success_at_1"] == {"value": 0.0, "world": "odd"}
    assert summary["worst"]["replaced.success_at_1"] == {"value": 0.0, "world": "weak"}
    # mistakes and cost: the largest is the worst
    assert summary["worst"]["confident_wrong"] == {"value": 1.0, "world": "weak"}
    assert summary["worst"]["called_dead"] == {"value": 1.0, "world": "odd"}
    assert summary["worst"]["requests_median"] == {"value": 16.0, "world": "weak"}
    assert summary["worst_world"] == "weak"
    # where the extra requests of the costlier world go
    purposes = multi["cost_by_purpose"]["web"]
    assert purposes["page fetch"] == {"good": 9.0, "weak": 15.0, "odd": 11.0}
    assert purposes["check"] == {"good": 1.0, "weak": 1.0, "odd": 1.0}
    assert multi["seconds_by_purpose"]["web"]["page fetch"] == {"good": 0.5, "weak": 0.5,
                                                                "odd": 0.5}
    text = render_multiworld_markdown(multi)
    assert "| **worst** | 4 (good) | 0.500 (weak) |" in text
    assert "| page fetch | 9.00 | 15.00 | 11.00 |" in text
    assert "Worst world (success@1): `weak`" in text
    assert "requests a recovery by purpose (mean): page fetch 15.0, check 1.0" in text
    assert "| recovery.x:fetch | 10.00 | 16.00 | 12.00 |" in text  # by stage
    assert "| **mean** | 4 | 0.750 |" in text


def test_with_and_without_web_search_are_summarised_apart():
    web = _report("a", _world({"s1": 1, "s2": 1, "n1": 1, "r1": 1}))
    noweb = _report("a", _world({"s1": 1, "s2": 1}))
    multi = build_multiworld_report([WorldRun("a", "web", report=web, engines=None),
                                     WorldRun("a", "noweb", report=noweb,
                                              engines=["site", "cdx", "local"])])
    assert multi["modes"] == ["web", "noweb"]
    assert multi["summary"]["web"]["mean"]["success_at_1"] == 1.0
    assert multi["summary"]["noweb"]["mean"]["success_at_1"] == 0.5
    assert multi["engines"]["noweb"] == ["site", "cdx", "local"]
    assert "## Without web search (engines site,cdx,local)" in render_multiworld_markdown(multi)


def test_void_runs_are_named_and_left_out_of_mean_and_worst():
    fine = _report("fine", _world({"s1": 1}))
    crashed = WorldRun("crashed", failure="OSError: pywb did not start")
    broken = _report("broken", _world({"s1": 1, "s2": 1, "n1": 1, "r1": 1}))
    broken["errors"] = {"n": 1, "by_type": {"ImportError": 1}, "not_behaviour": ["ImportError"]}
    down = _report("down", _world({"s1": 1, "s2": 1, "n1": 1, "r1": 1},
                                  failures={"searxng": 1, "site": 1}))
    flaky_results = _world({"s1": 1}, failures={"site": 1})
    for result in flaky_results[:2]:  # two slow hosts: the world's own
        result.failures["budget"] = 1
    flaky = _report("flaky", flaky_results)
    loaded = _report("loaded", _world({"s1": 1, "s2": 1, "n1": 1, "r1": 1},
                                      failures={"budget": 1}))
    assert "searxng failed on 6 of 6 recoveries" in void_reason(WorldRun("down", report=down))
    assert void_reason(WorldRun("flaky", report=flaky)) is None  # the world's own failures
    assert void_reason(WorldRun("loaded", report=loaded)) == (
        "the time budget ran out on 6 of 6 recoveries (a loaded machine: run fewer "
        "evaluations at once, or a lower --concurrency)")
    multi = build_multiworld_report([WorldRun("fine", report=fine), crashed,
                                     WorldRun("broken", report=broken),
                                     WorldRun("down", report=down),
                                     WorldRun("flaky", report=flaky)])
    assert not multi["complete"]
    assert [(f["world"], f["reason"].split(":")[0]) for f in multi["failed"]] == [
        ("crashed", "OSError"), ("broken", "cases failed for reasons other than the world's "
                                           "behaviour"), ("down", "services down")]
    summary = multi["summary"]["web"]
    assert list(summary["per_world"]) == ["fine", "flaky"]  # the void ones are not averaged
    assert summary["mean"]["success_at_1"] == 0.25
    assert "**Incomplete" in render_multiworld_markdown(multi)


# --- the command line -----------------------------------------------------------------------


def _named_world(root: Path, name: str) -> Path:
    world = build_tiny_world(root / name).path
    meta = json.loads((world / "world.json").read_text())
    meta["name"] = name
    (world / "world.json").write_text(json.dumps(meta))
    return world


@pytest.mark.slow
def test_eval_of_two_worlds_with_and_without_web_search(tmp_path, capsys):
    """The real pipeline on two small worlds, each with and without web search: one report
    with each world, the mean, the worst and where the requests went."""
    first, second = _named_world(tmp_path, "first"), _named_world(tmp_path, "second")
    report_file = tmp_path / "multi.md"
    code = cli_main(["eval", str(first), str(second), "--with-noweb", "--limit", "2",
                     "--concurrency", "2", "--json", "--report", str(report_file)])
    multi = json.loads(capsys.readouterr().out)
    assert code == 0, multi["failed"]
    assert multi["worlds"] == ["first", "second"] and multi["modes"] == ["web", "noweb"]
    assert multi["complete"]
    for mode in ("web", "noweb"):
        assert set(multi["runs"][mode]) == {"first", "second"}
        assert set(multi["summary"][mode]["per_world"]) == {"first", "second"}
        for report in multi["runs"][mode].values():
            assert report["cases"] == 2
            assert report["cost_breakdown"]["recoveries"] == 2
            assert UNATTRIBUTED not in report["cost_breakdown"]["by_purpose"]
    assert multi["runs"]["noweb"]["first"]["engines"] == ["site", "cdx", "local"]
    assert "searxng" not in json.dumps(multi["runs"]["noweb"]["first"]["cost_breakdown"])
    assert "check" in multi["cost_by_purpose"]["web"]
    # A web engine's requests go through the engines' shared helpers: the engine is named.
    web_purposes = set(multi["runs"]["web"]["first"]["cost_breakdown"]["by_purpose"])
    assert "search: searxng" in web_purposes and "search: failures" not in web_purposes
    text = report_file.read_text()
    assert "# Evaluation of worlds `first`, `second`" in text
    assert "## Without web search" in text and "| **worst** |" in text


def test_a_world_that_fails_fails_the_run_and_is_named(tmp_path, capsys, monkeypatch):
    """The second world's search service is down on every recovery: the run exits 1, names
    the world, and its figures stay out of the mean."""
    import pagetrail.cli.eval_cmd as eval_cmd

    calls: list[str] = []

    async def engine(url: str, *, settings, **_):
        calls.append(settings.proxy or "")
        down = len(set(calls)) > 1  # the second world's testbed (another proxy port)
        return Recovery(url=url, answer="none", check=CheckResult(url=url, verdict="dead"),
                        failures=[EngineFailure(engine="searxng", error="refused")] if down else [])

    monkeypatch.setattr(eval_cmd, "resolve_eval_engine", lambda: EngineChoice(engine, "test"))
    first, second = _named_world(tmp_path, "first"), _named_world(tmp_path, "second")
    code = cli_main(["eval", str(first), str(second), "--limit", "2", "--json"])
    captured = capsys.readouterr()
    multi = json.loads(captured.out)
    assert code == 1
    assert [f["world"] for f in multi["failed"]] == ["second"]
    assert "world second (web): services down: searxng failed on 2 of 2" in captured.err
    assert list(multi["summary"]["web"]["per_world"]) == ["first"]


def test_worlds_with_one_name_are_refused_before_any_runs(tmp_path, capsys):
    one = build_tiny_world(tmp_path / "one").path
    two = build_tiny_world(tmp_path / "two").path  # also named "tiny"
    assert cli_main(["eval", str(one), str(two)]) == 2
    assert "same name" in capsys.readouterr().err


def test_one_running_testbed_serves_one_world(tmp_path, capsys):
    first, second = _named_world(tmp_path, "first"), _named_world(tmp_path, "second")
    assert cli_main(["eval", str(first), str(second), "--running"]) == 2
    assert "give one world" in capsys.readouterr().err


def test_only_the_cases_asked_for_are_recovered(tmp_path, capsys, monkeypatch):
    """`--cases` re-runs chosen cases (an earlier run's misses) in every world given."""
    import pagetrail.cli.eval_cmd as eval_cmd

    recovered: list[str] = []

    async def engine(url: str, *, settings, **_):
        recovered.append(url)
        return Recovery(url=url, answer="none", check=CheckResult(url=url, verdict="dead"))

    monkeypatch.setattr(eval_cmd, "resolve_eval_engine", lambda: EngineChoice(engine, "test"))
    world = build_tiny_world(tmp_path / "tiny").path
    cases = [json.loads(line) for line in (world / "cases.jsonl").read_text().splitlines()]
    chosen = [cases[1]["id"], cases[-1]["id"]]
    code = cli_main(["eval", str(world), "--cases", ",".join(chosen), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["cases"] == 2
    # each asked for twice: answered "none", each is revisited at the end (eval_runner.revisits)
    assert sorted(recovered) == sorted(2 * [c["url"] for c in cases if c["id"] in chosen])


def test_a_case_the_world_lacks_is_refused(tmp_path, capsys):
    world = build_tiny_world(tmp_path / "tiny").path
    assert cli_main(["eval", str(world), "--cases", "no-such-case"]) == 2
    assert "no case no-such-case" in capsys.readouterr().err


def test_engines_without_web_search_are_the_noweb_mode(tmp_path, capsys, monkeypatch):
    """`--engines site,cdx,local` over several worlds is reported as the no-web mode, not
    as "web"."""
    import pagetrail.cli.eval_cmd as eval_cmd

    async def engine(url: str, *, settings, **_):
        return Recovery(url=url, answer="none", check=CheckResult(url=url, verdict="dead"))

    monkeypatch.setattr(eval_cmd, "resolve_eval_engine", lambda: EngineChoice(engine, "test"))
    first, second = _named_world(tmp_path, "first"), _named_world(tmp_path, "second")
    code = cli_main(["eval", str(first), str(second), "--engines", "site,cdx,local",
                     "--limit", "1", "--json"])
    captured = capsys.readouterr()
    multi = json.loads(captured.out)
    assert code == 0
    assert multi["modes"] == ["noweb"]
    assert "evaluating first (noweb, 1 cases)" in captured.err
