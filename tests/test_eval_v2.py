"""The evaluator's version-2 figures (drift, search), error accounting and `--engines`."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest

from pagetrail.cli.common import UsageError
from pagetrail.cli.eval_cmd import parse_engines, render_markdown
from pagetrail.tools.eval.eval_runner import recovery_to_result
from pagetrail.tools.eval.evaluate import CaseResult, build_report, error_summary
from pagetrail.tools.models import CheckResult, Drift, Memento, Recovery

CLI = [sys.executable, "-m", "pagetrail.cli"]


def _alive(cid: str, drifted: bool | None) -> dict:
    expect = {"kind": "alive", "urls": [f"https://a.example/{cid}"], "archived": True}
    if drifted is not None:
        expect["drifted"] = drifted
    return {"id": cid, "url": f"https://a.example/{cid}", "source": None, "link_date": None,
            "category": "alive", "expect": expect}


def _moved(cid: str) -> dict:
    return {"id": cid, "url": f"https://a.example/{cid}", "source": None, "link_date": None,
            "category": "moved_same_host",
            "expect": {"kind": "moved", "urls": [f"https://a.example/new/{cid}"]}}


CASES = [_alive("d1", True), _alive("d2", True), _alive("d3", True), _alive("s1", False),
         _alive("s2", False), _alive("u1", None), _moved("m1"), _moved("m2"), _moved("m3")]
RESULTS = [
    CaseResult("d1", verdict="ok", drifted=True),
    CaseResult("d2", verdict="ok", drifted=True),
    CaseResult("d3", verdict="ok", drifted=False),
    CaseResult("s1", verdict="ok", drifted=True),  # a false alarm
    CaseResult("s2", verdict="ok"),
    CaseResult("u1", verdict="ok", drifted=True),  # no truth about drift: not counted
    CaseResult("m1", verdict="dead", search_queries=3, rate_limited=1),
    CaseResult("m2", verdict="dead", search_queries=7, rate_limited=0),
    CaseResult("m3", error="ImportError: No module named 'trafilatura'", search_queries=0),
    CaseResult("m1", method="TI", drifted=True, search_queries=50, rate_limited=9),
]


def recompute(cases: list[dict], results: list[dict]) -> tuple[dict, dict]:
    """The v2 figures straight from FORMAT.md, over the report's own `results` lines."""
    full = {r["id"]: r for r in results if r["method"] == "full"}
    marked = [c for c in cases if c["expect"]["kind"] == "alive" and "drifted" in c["expect"]]

    def said(c: dict) -> bool:
        line = full.get(c["id"])
        return bool(line and not line["error"] and line.get("drifted"))

    drift = {"n": sum(c["expect"]["drifted"] for c in marked),
             "detected": sum(said(c) for c in marked if c["expect"]["drifted"]),
             "false_alarms": sum(said(c) for c in marked if not c["expect"]["drifted"]),
             "n_stable": sum(not c["expect"]["drifted"] for c in marked)}
    queries = [full[c["id"]]["search_queries"] for c in cases if c["id"] in full]
    scored = [full[c["id"]]["search_queries"] for c in cases
              if c["id"] in full and c["expect"]["kind"] in ("moved", "replacement")]
    search = {"queries": sum(queries),
              "rate_limited": sum(full[c["id"]]["rate_limited"] for c in cases if c["id"] in full),
              "queries_median": statistics.median(scored)}
    return drift, search


def test_v2_figures_recomputed_from_results():
    report = json.loads(json.dumps(build_report("w2", CASES, RESULTS, world_format=2)))
    assert report["format"] == 2
    drift, search = recompute(CASES, report["results"])
    assert report["drift"] == drift
    assert report["search"] == search
    # And the values themselves, so that a shared mistake cannot pass:
    assert drift == {"n": 3, "detected": 2, "false_alarms": 1, "n_stable": 2}
    assert search["queries"] == 10 and search["rate_limited"] == 1
    assert all("drifted" in line for line in report["results"])


def test_v1_report_has_no_v2_figures():
    report = build_report("w1", CASES, RESULTS)
    assert report["format"] == 1 and "drift" not in report and "search" not in report


def test_errors_grouped_by_type_and_behaviour():
    results = [CaseResult("a", error="ImportError: x"), CaseResult("b", error="ImportError: y"),
               CaseResult("c", error="timeout: no answer within 120 s"),
               CaseResult("d", error="archive_unavailable: no archive answered"),
               CaseResult("e", error="fetch_failed: refused"), CaseResult("f")]
    summary = error_summary(results)
    assert summary["n"] == 5
    assert summary["by_type"] == {"ImportError": 2, "archive_unavailable": 1,
                                  "fetch_failed": 1, "timeout": 1}
    assert summary["not_behaviour"] == ["ImportError", "archive_unavailable"]
    assert error_summary(results[2:3] + results[4:])["not_behaviour"] == []


def test_markdown_shows_errors_drift_and_search():
    text = render_markdown(build_report("w2", CASES, RESULTS, world_format=2))
    assert "errors: 1 runs failed: ImportError 1" in text
    assert "drift: 2 of 3 drifted links reported drifted; 1 false alarms among 2 stable" in text
    assert "web search: 10 queries sent (median 3 a recovery), 1 answered 429" in text


def test_result_line_carries_drift_and_search_figures():
    memento = Memento(original_url="https://a.example/x", archive="t",
                      memento_url="http://127.0.0.1:1/world/20190101000000/https://a.example/x",
                      raw_url="http://127.0.0.1:1/world/20190101000000id_/https://a.example/x",
                      datetime="2019-01-01T00:00:00Z")
    recovery = Recovery(url="https://a.example/x", answer="alive",
                        check=CheckResult(url="https://a.example/x", verdict="ok"),
                        drift=Drift(url="https://a.example/x", drifted=True, similarity=0.1,
                                    threshold=0.5, memento=memento),
                        evidence={"search": {"queries": 4, "rate_limited": 2}})
    line = recovery_to_result("c1", "full", recovery, seconds=1.0)
    assert line.drifted and line.search_queries == 4 and line.rate_limited == 2
    assert line.archived_copy == memento.raw_url  # the copy from the link's date
    assert json.loads(recovery.model_dump_json())["drifted"] is True


def test_engines_option_is_checked():
    assert parse_engines(None) is None
    assert parse_engines("site, cdx,local,site") == ["site", "cdx", "local"]
    with pytest.raises(UsageError, match="unknown engine"):
        parse_engines("site,altavista")


def test_eval_with_a_broken_import_fails_and_groups_the_error(tmp_path):
    """A module the pipeline needs cannot be imported in the eval process: the cases that
    need it fail, the report groups them by type, and the command exits non-zero."""
    from pagetrail.tools.testbed.worldgen import build_tiny_world

    world = build_tiny_world(tmp_path / "w")
    shim = tmp_path / "shim" / "trafilatura"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("injected: trafilatura is broken")\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(shim.parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([*CLI, "eval", str(world.path), "--json", "--concurrency", "4"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["errors"]["by_type"].get("ImportError", 0) >= 1, report["errors"]
    assert "ImportError" in report["errors"]["not_behaviour"]
    failed = [r for r in report["results"] if r["error"]]
    assert all(r["error"].startswith("ImportError") for r in failed)
    assert "runs failed: ImportError" in done.stderr
    assert "other than the world's behaviour" in done.stderr
