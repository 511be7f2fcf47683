"""bench/fix_world.py: the docs repository it writes from a world's cases (files of three
formats, every link's line authored at its case's link date, as `git blame --porcelain`
reads it), the scorer (fix's JSON report against the truth), its named errors, and one run of
the real `pagetrail fix` on a small hand-made world served on loopback."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.testbed.world import load_world
from pagetrail.tools.testbed.worldgen import WorldBuilder
from tests.bench_scripts import load_bench

bench = load_bench("fix_world")

THEN = "2019-06-01T00:00:00Z"
MOVED_FROM = "https://docs.example/2019/setup-widget-server"
MOVED_TO = "https://docs.example/manual/setting-up-the-widget-server"
REPLACED = "https://shop.example/products/widget-2000"
SUCCESSOR = "https://shop.example/products/widget-3000"
ARCHIVED = "https://docs.example/2018/release-notes-v1"
CAPTURES = ("20180601000000", "20210601000000")
GONE = "https://gone.example/page"
ALIVE = "https://docs.example/guide"
SETUP = ("Setting up the widget server takes three steps: install the widget daemon, write "
         "its configuration file with the listening port, and start the service with the "
         "systemd unit shipped in the package.")


def _article(title: str, text: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"</head><body><main><h1>{title}</h1><p>{text}</p></main></body></html>")


def _source(anchor: str, context: str) -> dict[str, str]:
    return {"url": "https://blog.example/links", "anchor": anchor, "context": context}


def build_world(root: Path) -> Path:
    """Five cases: a page moved on its host (captured then, its text live at a new path), a
    product replaced by its successor, release notes only the archive holds (two captures),
    a host that is gone (no linking page: only the URL is known) and a live guide."""
    b = WorldBuilder(root, name="fixbench", then=THEN)
    b.host("docs.example").host("shop.example").host("blog.example")
    b.host("gone.example", "nxdomain")
    b.page("https://docs.example/", _article("Widget docs", "Documentation of the widget."))
    b.page("https://shop.example/", _article("Widget shop", "Widgets for sale."))
    b.page("https://blog.example/", _article("Blog", "Notes."))
    b.page("https://blog.example/links", _article("Links", "Reading list."))
    b.page(ALIVE, _article("Widget guide", "A guide to the widget: install, configure, run."))
    b.page(MOVED_TO, _article("Setting up the widget server", SETUP))
    b.capture(MOVED_FROM, "20190301000000", html=_article("Setting up the widget server", SETUP))
    b.page(SUCCESSOR, _article("Widget 3000", "The widget 3000 replaces the widget 2000: "
                                              "a quieter gearbox and a brighter lantern."))
    b.capture(REPLACED, "20190301000000", html=_article(
        "Widget 2000", "The widget 2000: a gearbox and a lantern, for the garden."))
    for number, stamp in enumerate(CAPTURES, 1):
        b.capture(ARCHIVED, stamp, html=_article(
            f"Release notes, edition {number}",
            f"Edition {number} of the release notes of widget one: bug fixes for the gearbox "
            f"and the lantern, revision {number}."))
    b.case("m1", MOVED_FROM, "moved_same_host", "moved", [MOVED_TO], archived=True,
           link_date="2019-07-01T00:00:00Z",
           source=_source("set up the widget server",
                          "how to set up the widget server with its daemon and systemd unit"))
    b.case("r1", REPLACED, "replaced", "replacement", [SUCCESSOR], archived=True,
           link_date="2019-08-15T12:00:00Z",
           source=_source("widget 2000", "the widget 2000 [product page] has the gearbox specs"))
    b.case("a1", ARCHIVED, "gone", "archived", [], archived=True,
           link_date="2019-05-01T00:00:00Z",
           source=_source("release notes", "the release notes of widget one *list* the fixes"))
    b.case("g1", GONE, "gone", "none", [])
    b.case("l1", ALIVE, "alive", "alive", [ALIVE], link_date="2020-01-02T00:00:00Z",
           source=_source("the guide", ".. read the guide before you install_it"))
    return b.write()


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_world(tmp_path_factory.mktemp("fix-bench-world") / "w")


@pytest.fixture(scope="module")
def cases(world_dir: Path) -> list[dict[str, Any]]:
    return [case.raw for case in load_world(world_dir).cases]


# ------------------------------------------------------------------ the repository


def _blame_dates(repo: Path, file: str) -> dict[int, datetime]:
    """1-based line → author date, read here from `git blame --porcelain` (not the bench's
    nor fix's parser: what either gets wrong must show)."""
    out = subprocess.run(["git", "-C", str(repo), "blame", "--porcelain", "--", file],
                         capture_output=True, text=True, check=True).stdout
    times: dict[str, datetime] = {}
    dates: dict[int, datetime] = {}
    commit, line = "", 0
    for row in out.splitlines():
        head = row.split(" ")
        if len(head[0]) == 40 and len(head) >= 3:
            commit, line = head[0], int(head[2])
            if commit in times:
                dates[line] = times[commit]
        elif head[0] == "author-time":
            times[commit] = dates[line] = datetime.fromtimestamp(int(head[1]), UTC)
    return dates


def test_repository_spreads_cases_over_three_formats_with_blame_dates(tmp_path, cases):
    repo = tmp_path / "repo"
    then = datetime(2019, 6, 1, tzinfo=UTC)
    placed = bench.write_repository(repo, cases, then)

    assert sorted(p.case_id for p in placed) == sorted(c["id"] for c in cases)
    assert {p.file for p in placed} == {"docs/links.md", "docs/links.rst", "docs/links.html"}
    # A clean work tree: everything written is committed.
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"],
                            capture_output=True, text=True, check=True).stdout
    assert status == ""
    for p in placed:
        text = (repo / p.file).read_text(encoding="utf-8")
        # The format's own parser (fix's extractor) reads the case's URL on its line...
        assert (p.line, p.url) in {(s.line, s.url) for s in extract_links(text, p.fmt)}, p
        # ...and git blame dates that line at the case's link date (the world's `then`
        # for the case without one).
        expected = next(c for c in cases if c["id"] == p.case_id).get("link_date")
        want = datetime.fromisoformat(expected) if expected else then
        assert _blame_dates(repo, p.file)[p.line] == want, p
    assert next(p for p in placed if p.case_id == "g1").dated_by == "world_then"
    # Each file holds exactly its cases' links, nothing from the prose.
    for file in {p.file for p in placed}:
        fmt = next(p.fmt for p in placed if p.file == file)
        found = {(s.line, s.url) for s in extract_links((repo / file).read_text(), fmt)}
        assert found == {(p.line, p.url) for p in placed if p.file == file}


def test_case_line_keeps_anchor_and_context_as_prose():
    case = {"url": "https://a.example/x_(y)", "source": {
        "anchor": "the *report*", "context": "see the *report* of 2019 [draft] at http://b.example/z"}}
    md = bench.case_line("markdown", case)
    assert md == ("see [the \\*report\\*](https://a.example/x_(y)) of 2019 \\[draft\\] at "
                  "b.example/z")
    assert bench.case_line("html", case) == (
        'see <a href="https://a.example/x_(y)">the *report*</a> of 2019 [draft] at b.example/z')
    rst = bench.case_line("rst", {"url": "https://a.example/p", "source": {
        "anchor": "report", "context": "the report's_ page"}})
    assert rst == "the `report <https://a.example/p>`__\\ 's\\_ page"
    # Only the URL known: a bare link; a structure-making first character is escaped.
    assert bench.case_line("markdown", {"url": "https://a.example/", "source": None}) == \
        "<https://a.example/>"
    assert bench.case_line("rst", {"url": "https://a.example/p", "source": {
        "anchor": "p", "context": ".. p"}}).startswith("\\.. ")


def test_a_bare_url_ending_in_punctuation_is_written_whole_in_each_format():
    """A bare URL that ends in "." (a real case: …/mit-1-km-aufloesung.) would lose the dot
    to a standalone hyperlink's rule, as the sentence's; the bench writes it so that the
    format keeps it, and fix's own reading of the line finds the whole URL."""
    from pagetrail.tools.fix.rst import rst_links

    url = "https://a.example/news/blue-marble-at-1-km."
    rst = bench.case_line("rst", {"url": url, "source": None})
    assert rst == f"`<{url}>`__"
    assert [link.url for link in rst_links(bench.document("rst", [rst]))] == [url]
    plain = "https://a.example/news/blue-marble"  # no final punctuation: a bare URL
    assert bench.case_line("rst", {"url": plain, "source": None}) == plain


def test_repo_dir_must_be_new_or_empty(tmp_path, cases):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(bench.RepoUnusable):
        bench.write_repository(tmp_path / "full", cases, datetime(2019, 6, 1, tzinfo=UTC))


# ------------------------------------------------------------------ the scorer


def _placed(case_id: str, url: str, line: int, fmt: str = "markdown") -> Any:
    return bench.Placed(case_id, url, bench.FILES[fmt], fmt, line,
                        datetime(2019, 7, 1, tzinfo=UTC), "link_date")


def _link(url: str, line: int, new_url: str | None = None, *, written: bool = True,
          verdict: str = "moved", path: str = "docs/links.md") -> dict[str, Any]:
    return {"path": path, "line": line, "url": url, "verdict": verdict, "new_url": new_url,
            "rewritten": new_url is not None and written, "written": new_url is not None
            and written, "date": "2019-07-01T00:00:00+00:00", "date_source": "git"}


def _capture(url: str, stamp: str = "20180601000000") -> str:
    return f"http://127.0.0.1:41234/world/{stamp}/{url}"


def test_scorer_judges_each_link_against_the_truth(cases):
    placed = [_placed("m1", MOVED_FROM, 3), _placed("r1", REPLACED, 5),
              _placed("a1", ARCHIVED, 7), _placed("g1", GONE, 9), _placed("l1", ALIVE, 11)]
    report = {"links": [
        _link(MOVED_FROM, 3, MOVED_TO.replace("https://", "http://www.")),  # the same URL
        _link(REPLACED, 5, "https://shop.example/"),
        _link(ARCHIVED, 7, _capture(ARCHIVED), verdict="archived"),
        _link(GONE, 9, None, verdict="unfixable"),
        _link(ALIVE, 11, None, verdict="alive"),
    ]}
    scores = {s.case_id: s for s in bench.score_links(report, placed, cases)}
    assert {k: s.outcome for k, s in scores.items()} == {
        "m1": "right", "r1": "wrong", "a1": "right", "g1": "left", "l1": "left"}
    assert {k for k, s in scores.items() if s.ok} == {"m1", "a1", "g1", "l1"}
    assert scores["a1"].verdict == "archived" and scores["a1"].new_url == _capture(ARCHIVED)

    # Another round: the moved page to its own capture, the replacement right, the archived
    # case to another page's capture, the gone one to a live page, the alive link touched.
    report = {"links": [
        _link(MOVED_FROM, 3, _capture(MOVED_FROM), verdict="archived"),
        _link(REPLACED, 5, SUCCESSOR, verdict="replacement"),
        _link(ARCHIVED, 7, _capture(MOVED_FROM), verdict="archived"),
        _link(GONE, 9, "https://docs.example/"),
        _link(ALIVE, 11, _capture(ALIVE), verdict="archived"),
    ]}
    scores = {s.case_id: s for s in bench.score_links(report, placed, cases)}
    assert {k: s.outcome for k, s in scores.items()} == {
        "m1": "own_archive", "r1": "right", "a1": "wrong", "g1": "wrong", "l1": "wrong"}
    assert {k for k, s in scores.items() if s.ok} == {"r1"}


def test_scorer_counts_what_is_on_disk_and_what_is_missing(cases):
    placed = [_placed("m1", MOVED_FROM, 3), _placed("l1", ALIVE, 4, "html")]
    report = {"links": [
        # in the diff, but the write was refused: the file still holds the dead link
        _link(MOVED_FROM, 3, MOVED_TO, written=False),
        # the alive link reported on another line: not this case's
        _link(ALIVE, 9, None, verdict="alive", path="docs/links.html"),
    ]}
    scores = bench.score_links(report, placed, cases)
    assert [s.outcome for s in scores] == ["left", None]
    summary = bench.summarize(scores)
    assert summary["overall"] == {"n": 2, "right": 0, "wrong": 0, "own_archive": 0,
                                  "left": 1, "missing": 1, "ok": 0, "ok_rate": 0.0}
    assert summary["by_format"]["html"]["missing"] == 1
    assert bench.extra_links(report, placed) == [
        {"path": "docs/links.html", "line": 9, "url": ALIVE, "verdict": "alive"}]


def test_scorer_half_rewritten_link_is_wrong_and_paths_are_relative(tmp_path, cases):
    placed = [_placed("m1", MOVED_FROM, 3)]
    absolute = str(tmp_path / "docs" / "links.md")
    report = {"links": [_link(MOVED_FROM, 3, MOVED_TO, path=absolute),
                        _link(MOVED_FROM, 3, MOVED_TO, written=False, path="./docs/links.md")]}
    [score] = bench.score_links(report, placed, cases, root=tmp_path)
    assert score.outcome == "wrong" and not score.ok
    report["links"].pop()
    [score] = bench.score_links(report, placed, cases, root=tmp_path)
    assert score.outcome == "right" and score.ok


def test_summary_groups_by_category_kind_and_format(cases):
    placed = [_placed("m1", MOVED_FROM, 3), _placed("a1", ARCHIVED, 5, "rst"),
              _placed("g1", GONE, 7, "rst")]
    report = {"links": [_link(MOVED_FROM, 3, MOVED_TO),
                        _link(ARCHIVED, 5, None, verdict="unfixable", path="docs/links.rst"),
                        _link(GONE, 7, None, verdict="unfixable", path="docs/links.rst")]}
    summary = bench.summarize(bench.score_links(report, placed, cases))
    assert list(summary["by_category"]) == ["moved_same_host", "gone"]  # FORMAT.md's order
    assert summary["by_category"]["gone"] == {"n": 2, "right": 0, "wrong": 0,
                                              "own_archive": 0, "left": 2, "missing": 0,
                                              "ok": 1, "ok_rate": 0.5}
    assert list(summary["by_kind"]) == ["moved", "archived", "none"]
    assert summary["by_kind"]["archived"]["ok"] == 0 and summary["by_kind"]["none"]["ok"] == 1
    assert summary["by_format"]["rst"]["n"] == 2
    assert summary["overall"]["ok"] == 2 and summary["overall"]["ok_rate"] == 0.6667


def test_changed_lines_reads_zero_context_hunks():
    diff = "@@ -3 +3 @@\n-a\n+b\n@@ -7,2 +7,2 @@\n-c\n-d\n+e\n+f\n@@ -10,0 +11 @@\n+g\n"
    assert bench.changed_lines(diff) == {3, 7, 8}


def test_tree_mismatch_when_the_files_disagree_with_the_report(tmp_path, cases):
    repo = tmp_path / "repo"
    placed = bench.write_repository(repo, cases, datetime(2019, 6, 1, tzinfo=UTC))
    moved = next(p for p in placed if p.case_id == "m1")
    path = repo / moved.file
    path.write_text(path.read_text().replace(MOVED_FROM, MOVED_TO))
    claimed = {"links": [_link(MOVED_FROM, moved.line, MOVED_TO, path=moved.file)]}
    assert bench.tree_mismatches(repo, claimed) == []
    # A rewrite the report does not claim, and one it claims on a line left as it was.
    assert bench.tree_mismatches(repo, {"links": []}) == [
        f"{moved.file}: lines changed [{moved.line}], reported written []"]
    other = moved.line + 2
    wrong = {"links": [_link(MOVED_FROM, other, MOVED_TO, path=moved.file)]}
    assert bench.tree_mismatches(repo, wrong) == [
        f"{moved.file}: lines changed [{moved.line}], reported written [{other}]"]


# ------------------------------------------------------------------ the named errors


def test_fix_output_that_is_no_report_is_a_named_error():
    assert bench.parse_fix_output(1, '{"links": []}', "")["links"] == []
    with pytest.raises(bench.FixCrashed, match=r"exited 1 without a report.*Traceback"):
        bench.parse_fix_output(1, "", "Traceback (most recent call last): boom")
    with pytest.raises(bench.FixCrashed, match="exited 3"):
        bench.parse_fix_output(3, '{"links": []}', "nothing checked")
    with pytest.raises(bench.ReportUnreadable):
        bench.parse_fix_output(0, "{not json", "")
    with pytest.raises(bench.ReportUnreadable, match="no list of links"):
        bench.parse_fix_output(0, '{"files": []}', "")


def test_unreadable_world_exits_non_zero_with_its_name(tmp_path, capsys):
    assert bench.main([str(tmp_path / "nowhere")]) == 2
    assert "fix_world: error: world_unreadable:" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "world.json").write_text("{ not json")
    assert bench.main([str(broken), "--json"]) == 2
    captured = capsys.readouterr()
    assert "world_unreadable" in captured.err and "world.json:1" in captured.err
    assert captured.out == ""  # no report, not a report of zeros


def test_bad_selection_exits_non_zero_before_writing_anything(world_dir, tmp_path, capsys):
    repo = tmp_path / "repo"
    assert bench.main([str(world_dir), "--cases", "m1,nope", "--repo", str(repo)]) == 2
    assert "bad_selection: " in capsys.readouterr().err
    assert not repo.exists()
    assert bench.main([str(world_dir), "--limit", "0"]) == 2
    assert "--limit must be at least 1" in capsys.readouterr().err


def test_incomplete_report_is_a_failure():
    report = {"missing": ["m1"], "cases": 5, "tree_mismatches": ["docs/links.md: …"]}
    assert [type(e) for e in bench.failures(report)] == [bench.ReportIncomplete,
                                                          bench.TreeMismatch]
    assert bench.failures({"missing": [], "cases": 5, "tree_mismatches": []}) == []


# ------------------------------------------------------------------ end to end


@pytest.mark.testbed
@pytest.mark.slow
def test_end_to_end_on_the_small_world(world_dir, tmp_path, capsys):
    repo = tmp_path / "kept"
    started = time.monotonic()
    status = bench.main([str(world_dir), "--json", "--repo", str(repo)])
    seconds = time.monotonic() - started
    captured = capsys.readouterr()
    assert status == 0, captured.err
    report = json.loads(captured.out)
    assert "| category | links | right |" in captured.err  # the tables, beside the JSON
    assert report["world"] == "fixbench" and report["cases"] == 5 and report["repo"] == str(repo)
    assert report["missing"] == [] and report["extra_links"] == []
    assert report["tree_mismatches"] == []
    assert report["dates"] == {"links": 5, "dated_by_git": 5, "as_written": 5}
    by_id = {r["case_id"]: r for r in report["results"]}
    # Alive and gone links are never touched; the archive-only page gets its own capture
    # from before its link date; the moved page its new address.
    assert by_id["l1"]["outcome"] == "left" and by_id["l1"]["ok"]
    assert by_id["g1"]["outcome"] == "left" and by_id["g1"]["ok"]
    assert by_id["a1"]["outcome"] == "right" and CAPTURES[0] in by_id["a1"]["new_url"]
    assert by_id["m1"]["outcome"] == "right" and by_id["m1"]["new_url"] == MOVED_TO
    assert by_id["r1"]["outcome"] in bench.OUTCOMES  # scored, whatever fix made of it
    assert report["overall"]["n"] == 5 and sum(
        report["overall"][o] for o in bench.OUTCOMES) == 5
    # The kept repository holds what fix wrote.
    assert MOVED_TO in (repo / by_id["m1"]["file"]).read_text(encoding="utf-8")
    assert seconds < 120
