"""`pagetrail fix` on repositories and inputs written by strangers (issue 37, items 1–9, 11,
12, 14): every write confined to the named paths, every rewrite proven by the format's own
parser, bounded work, no traceback from any input, no silent pass.

Each test builds a real hostile tree in tmp_path (real symlinks, a real git repository with a
crafted commit) and runs the real code; the recoveries go to the loopback testbed (marked
`testbed`). The fuzz tests drive the extractors and the rewrite with hypothesis.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import os
import subprocess
import xml.etree.ElementTree as ElementTree
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bench_scripts import load_bench
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pagetrail.cli.main import main
from pagetrail.tools.fix.dates import parse_porcelain
from pagetrail.tools.fix.escape import escaped
from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.fix.files import FileProblem, gather, read_source
from pagetrail.tools.fix.html import html_links
from pagetrail.tools.fix.lychee import LycheeReportError, read_lychee, report_inputs
from pagetrail.tools.fix.proof import canonical, link_targets, prove
from pagetrail.tools.fix.report import to_junit
from pagetrail.tools.fix.rewrite import Edit, write_back
from pagetrail.tools.fix.run import (
    FixReport,
    LinkVerdict,
    Options,
    edits_for,
    fix_paths,
    proven_edits,
)
from pagetrail.tools.fix.spans import Lines, Unparsable

REPO = Path(__file__).resolve().parents[1]
WHEN = datetime(2019, 6, 1, tzinfo=UTC)


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.org",
           "GIT_COMMITTER_NAME": "Ann", "GIT_COMMITTER_EMAIL": "ann@example.org"}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def _verdict(span, new_url: str, kind: str = "moved") -> LinkVerdict:
    return LinkVerdict(path="x", line=span.line, url=span.url, form=span.form, date=WHEN,
                       date_source="git", verdict=kind, new_url=new_url, confidence=1.0,
                       memento_date=WHEN)


def _codes(problems: list[FileProblem]) -> dict[str, str]:
    return {Path(p.path).name: p.code for p in problems}


# ------------------------------------------------------------------ 1-3: writes confined


def test_1_lychee_inputs_outside_the_working_folder_are_refused(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "docs").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text("[s](https://a.example/)\n")
    (repo / "docs" / "a.md").write_text("[a](https://a.example/)\n")
    (repo / "docs" / "link.md").symlink_to(outside / "secret.md")
    (repo / "up").symlink_to(outside)
    failing = {str(outside / "secret.md"): [], "../outside/secret.md": [],
               "docs/../../outside/secret.md": [], "docs/link.md": [], "up/secret.md": [],
               "https://site.example/page": [], "docs/missing.md": [], "docs": [],
               "docs/a.md": [], str(repo / "docs" / "a.md"): []}
    inside, refused = report_inputs(failing, repo)
    assert inside == ["docs/a.md", "docs/a.md"]
    why = dict(refused)
    for key in (str(outside / "secret.md"), "../outside/secret.md",
                "docs/../../outside/secret.md", "docs/link.md", "up/secret.md"):
        assert why[key].startswith("outside"), key
    assert why["https://site.example/page"] == "a URL, not a file"
    assert why["docs/missing.md"] == "no such file" and why["docs"] == "not a file"


def test_1_lychee_report_of_only_outside_inputs_writes_nothing(tmp_path, monkeypatch, capsys):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("[s](https://a.example/dead)\n")
    report = {"error_map": {str(secret): [{"url": "https://a.example/dead"}],
                            "../outside/secret.md": [{"url": "https://a.example/dead"}]}}
    (repo / "r.json").write_text(json.dumps(report))
    monkeypatch.chdir(repo)
    assert main(["fix", "--quiet", "--write", "--from-lychee", "r.json"]) == 3
    err = capsys.readouterr().err
    assert err.count("not read: outside") == 2 and "nothing checked" in err
    assert secret.read_text() == "[s](https://a.example/dead)\n"


def test_2_named_paths_that_lead_outside_are_not_read(tmp_path, monkeypatch):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "docs").mkdir(parents=True)
    (outside / "api").mkdir(parents=True)
    (outside / "secret.md").write_text("[s](https://a.example/)\n")
    (outside / "api" / "x.md").write_text("[x](https://a.example/)\n")
    (repo / "docs" / "guide.md").write_text("[g](https://a.example/)\n")
    (repo / "docs" / "readme-target.md").write_text("[r](https://a.example/)\n")
    (repo / "README.md").symlink_to("../outside/secret.md")  # the issue's example
    (repo / "INSIDE.md").symlink_to("docs/readme-target.md")  # a link inside: fine
    (repo / "ext").symlink_to(outside)  # a named folder that is a link out
    monkeypatch.chdir(repo)
    problems: list[FileProblem] = []
    files = gather(["README.md", "INSIDE.md", "ext", "ext/api", "docs"], problems=problems)
    read = sorted(path.name for path, _ in files)
    assert read == ["INSIDE.md", "guide.md"]  # docs/readme-target.md is INSIDE.md: once
    assert [(p.path, p.code) for p in problems] == [
        ("README.md", "outside-roots"), ("ext", "outside-roots"), ("ext/api", "outside-roots")]
    assert all(str(outside) in p.message for p in problems)


def test_2_a_link_swapped_after_the_read_is_not_written_through(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "docs").mkdir(parents=True)
    outside.mkdir()
    target = repo / "docs" / "real.md"
    target.write_text("[a](https://a.example/)\n")
    (outside / "real.md").write_text("[a](https://a.example/)\n")
    link = repo / "README.md"
    link.symlink_to("docs/real.md")
    source = read_source(link, "markdown")
    link.unlink()
    link.symlink_to(outside / "real.md")  # same bytes, another file: a race
    problem = write_back(source, "[a](https://b.example/)\n")
    assert problem is not None and problem.code == "moved-on-disk"
    assert (outside / "real.md").read_text() == "[a](https://a.example/)\n"


def test_3_a_symlinked_folder_is_checked_before_it_is_walked(tmp_path):
    root = tmp_path / "plain"  # not a git work tree: the folder is walked
    root.mkdir()
    (root / "a.md").write_text("[a](https://a.example/)\n")
    (root / "usr").symlink_to("/usr")
    (root / "slash").symlink_to("/")
    (root / "sub").mkdir()
    (root / "sub" / "back").symlink_to(root)  # inside the roots: a loop, named
    problems: list[FileProblem] = []
    files = gather([str(root)], problems=problems)
    assert [path.name for path, _ in files] == ["a.md"]
    codes = Counter((Path(p.path).name, p.code) for p in problems)
    assert codes[("usr", "outside-roots")] == 1 and codes[("slash", "outside-roots")] == 1
    # Nothing under the links was listed: each is one problem, not one per file below it.
    assert not [p for p in problems if p.path.startswith((str(root / "usr") + "/",
                                                          str(root / "slash") + "/"))]
    assert len(problems) <= 3


# ------------------------------------------------------------------ 4: the link, not the text


RST = ("Title\n=====\n\nSet `{u}` as the base URL, and ``{u}`` too.\n\n"
       ".. {u}\n\nSee `the docs <{u}>`_.\n\n::\n\n   {u}\n")


def test_4_rst_interpreted_text_is_not_the_link():
    u = "https://dead.example/a"
    text = RST.format(u=u)
    links = extract_links(text, "rst")
    assert [(text[s.start - 1], s.line, s.form) for s in links] == [("<", 8, "inline")]
    new, kept, refused = prove(text, "rst", [Edit(links[0].start, links[0].end,
                                                  "https://new.example/b", old=u,
                                                  target="https://new.example/b")])
    assert kept and not refused
    assert new == text.replace(f"<{u}>", "<https://new.example/b>")
    # Rewriting the interpreted text instead (what document order did) is refused.
    wrong = text.index(u)
    _, kept, refused = prove(text, "rst", [Edit(wrong, wrong + len(u), "https://new.example/b",
                                                old=u, target="https://new.example/b")])
    assert refused and not kept


@pytest.mark.parametrize(("fmt", "text"), [
    # Markdown: the same URL in a link title and in a code span before the link.
    ("markdown", '[t](https://x.example/ "{u}") `{u}` [real]({u})\n'),
    # HTML: the URL in a comment, a title and a script before the real href.
    ("html", '<!-- {u} --><a title="{u}" href="https://x.example/">x</a>'
             '<script>"{u}"</script><a href="{u}">real</a>\n'),
    # AsciiDoc: in monospace and a listing block before the macro.
    ("asciidoc", "`{u}`\n\n----\n{u}\n----\n\nlink:{u}[real]\n"),
])
def test_4_other_formats_match_the_parsed_link_not_the_first_occurrence(fmt, text):
    u = "https://dead.example/a"
    text = text.format(u=u)
    links = [s for s in extract_links(text, fmt) if s.url == u]
    assert len(links) == 1 and links[0].start == text.rindex(u)


@pytest.mark.testbed
def test_4_rst_fix_writes_the_real_link_and_counts_it(tmp_path, tiny_world, testbed_settings,
                                                      store):
    u = tiny_world.live_redirect
    repo = tmp_path / "docs"
    repo.mkdir()
    (repo / "notes.rst").write_text(RST.format(u=u))
    report = asyncio.run(fix_paths([str(repo)], write=True, settings=testbed_settings,
                                   store=store))
    written = (repo / "notes.rst").read_text()
    assert written == RST.format(u=u).replace(f"<{u}>", f"<{tiny_world.moved_to}>")
    assert [(link.line, link.written) for link in report.links] == [(8, True)]
    assert report.dead_left == 0


# ------------------------------------------------------------------ 5: escaping and proof


NEW_URLS = [
    "https://new.example/page)x", "https://new.example/a(b", "https://new.example/a b",
    "https://new.example/[x]", "https://new.example/<x>", 'https://new.example/"q"&r=1',
    "https://new.example/`tick`", "https://new.example/end_", "https://new.example/end.",
    "https://new.example/a\\b", "https://new.example/*star*", "https://new.example/%28ok%29",
]
DOCS = {
    "markdown": ("[the page]({u}) and <{u}> and {u} .\n\n[r]: {u}\n", 4),
    "rst": ("See `the page <{u}>`_ and {u} .\n\n.. _t: {u}\n", 3),
    "html": ('<p><a href="{u}">p</a> <a href=\'{u}\'>q</a></p>\n', 2),
    "asciidoc": ("See link:{u}[the page] and {u}[p] and {u} .\n", 3),
    "text": ("See {u} and ({u}).\n", 2),
}


@pytest.mark.parametrize("fmt", sorted(DOCS))
@pytest.mark.parametrize("new_url", NEW_URLS)
def test_5_new_addresses_are_escaped_and_proven(fmt, new_url, tmp_path):
    old = "https://dead.example/a"
    template, count = DOCS[fmt]
    path = tmp_path / f"doc.{fmt}"
    path.write_text(template.format(u=old))
    source = read_source(path, fmt)
    spans = extract_links(source.text, fmt)
    assert [s.url for s in spans] == [old] * count
    verdicts = [_verdict(s, new_url) for s in spans]
    problems: list[FileProblem] = []
    new_text, _kept = proven_edits(source, edits_for(source, spans, verdicts, Options()),
                                  problems)
    assert write_back(source, new_text) is None
    on_disk = path.read_text()
    targets = Counter(canonical(t) for t in link_targets(on_disk, fmt))
    rewritten = [v for v in verdicts if v.rewritten]
    # Whatever was kept re-parses as links to the new address; the rest stayed as it was.
    assert targets[canonical(new_url if fmt != "markdown" else _md(new_url))] == len(rewritten)
    assert targets[canonical(old)] == count - len(rewritten)
    assert len(problems) == count - len(rewritten)
    assert all(p.code == "rewrite-refused" for p in problems)
    assert all("refused" in v.reason for v in verdicts if not v.rewritten)


def _md(url: str) -> str:
    from pagetrail.tools.fix.markdown import normalize_link
    return normalize_link(url)


def test_5_the_issue_examples_are_written_escaped(tmp_path):
    md = "[the page](https://dead.example/a)\n"
    adoc = "See https://dead.example/a[the page].\n"
    for fmt, text, new, expected in [
            ("markdown", md, "https://new.example/page)x",
             "[the page](https://new.example/page\\)x)\n"),
            ("asciidoc", adoc, "https://new.example/[x]",
             "See https://new.example/%5Bx%5D[the page].\n")]:
        path = tmp_path / f"d.{fmt}"
        path.write_text(text)
        source = read_source(path, fmt)
        spans = extract_links(text, fmt)
        new_text, kept = proven_edits(source, edits_for(source, spans,
                                                        [_verdict(spans[0], new)], Options()), [])
        assert new_text == expected and kept


def test_5_a_rewrite_that_breaks_the_link_is_refused():
    text = "[the page](https://dead.example/a) and more\n"
    start = text.index("https")
    raw = Edit(start, start + len("https://dead.example/a"), "https://new.example/page)x",
               old="https://dead.example/a", target="https://new.example/page)x")
    new_text, kept, refused = prove(text, "markdown", [raw])  # unescaped: cut at `)`
    assert new_text == text and not kept and refused == [raw]


# ------------------------------------------------------------------ 6: the real href


@pytest.mark.parametrize("tag", [
    '<a title="old: href=https://evil.example/a" href="https://real.example/b">x</a>',
    "<a data-x='href=\"https://evil.example/a\"' href=https://real.example/b>x</a>",
    '<a title="a href = https://evil.example/a"\n   href="https://real.example/b">x</a>',
    '<a href="https://real.example/b" href="https://evil.example/a">x</a>',
    '<a\thref="https://real.example/b"/>',
    '<a class=x data-href="https://evil.example/a" HREF="https://real.example/b">x</a>',
])
def test_6_href_inside_another_attribute_is_not_the_link(tag):
    text = f"<p>{tag}</p>\n"
    spans = html_links(text)
    assert [s.url for s in spans] == ["https://real.example/b"]
    assert text[spans[0].start:spans[0].end] == "https://real.example/b"
    md = extract_links(f"Some text.\n\n<div>{tag}</div>\n", "markdown")
    assert [s.url for s in md] == ["https://real.example/b"]


# ------------------------------------------------------------------ 7: well-formed reports


def test_7_junit_is_well_formed_whatever_the_url_or_path_holds():
    hostile = "https://a.example/\x01\x1b[31m\x0b\x00\ufffe\ud800]]>&<\"'"
    link = LinkVerdict(path="docs/\x0cweird\x7f.md", line=1, url=hostile, form="href",
                       date=WHEN, date_source="git", verdict="unfixable", reason="x\x02y")
    skipped = link.model_copy(update={"verdict": "skipped", "reason": "\x03\x04"})
    xml = to_junit(FixReport(links=[link, skipped]))
    tree = ElementTree.fromstring(xml.encode("utf-8"))
    names = [case.get("name") for case in tree.iter("testcase")]
    assert names[0].startswith("docs/\\x0cweird\x7f.md:1 https://a.example/\\x01\\x1b[31m")
    assert tree.find("testsuite").get("failures") == "1"


def test_7_the_scanner_never_takes_a_control_character_into_a_url():
    text = "see https://a.example/x\x01y and https://b.example/\x1b[0m\n"
    assert [s.url for s in extract_links(text, "text")] == ["https://a.example/x",
                                                            "https://b.example/"]


# ------------------------------------------------------------------ 8: bounded work


@pytest.mark.testbed
def test_8_one_url_cited_300_times_is_one_recovery_and_one_page_fetch(
        tiny_world, testbed_settings, store, monkeypatch):
    import pagetrail.tools.api as api
    import pagetrail.tools.fix.text as text_module

    calls: Counter[str] = Counter()
    real_recover, real_page = api.recover_link, text_module._page_text

    async def counted_recover(url, **kwargs):
        calls["recover"] += 1
        return await real_recover(url, **kwargs)

    async def counted_page(url, verdict, at, settings):
        calls["page"] += 1
        return await real_page(url, verdict, at, settings)

    monkeypatch.setattr(api, "recover_link", counted_recover)
    monkeypatch.setattr(text_module, "_page_text", counted_page)
    u = tiny_world.live_redirect
    text = "".join(f"Solar farms doubled, note {n} ([source]({u})).\n\n" for n in range(300))
    result = asyncio.run(text_module.check_links_in_text(text, settings=testbed_settings,
                                                         store=store))
    assert calls == {"recover": 1, "page": 1}
    assert len(result.links) == 300 and {link.verdict for link in result.links} == {"moved"}
    assert all(link.support is not None for link in result.links)
    assert result.repaired_text == text.replace(u, tiny_world.moved_to)


def test_8_occurrences_over_the_cap_are_skipped_and_named(monkeypatch):
    import pagetrail.tools.fix.text as text_module

    monkeypatch.setattr(text_module, "MAX_TEXT_OCCURRENCES", 5)
    monkeypatch.setattr(text_module, "MAX_TEXT_LINKS", 0)  # no recovery at all: offline
    text = "https://web.example/a " * 8
    result = asyncio.run(text_module.check_links_in_text(text, fmt="text", with_support=False,
                                                         store=object()))
    reasons = Counter(link.reason for link in result.links)
    assert reasons == {"too many links": 5, "too many links (over 5)": 3}


# ------------------------------------------------------------------ 9: linear extraction


def test_9_context_reads_a_window_around_the_link_not_the_whole_line():
    line = ("word " * 200_000) + "see https://a.example/x here " + ("tail " * 200_000)
    lines = Lines(line)
    start = line.index("https")
    context = lines.context(start, start + len("https://a.example/x"))
    # the words around the link as a reader sees them, never the URL itself
    assert "see here" in context and "://" not in context and len(context) <= 240
    assert not context.startswith(" ") and context.split()[0] == "word"


def test_9_the_long_line_benchmark_runs():
    bench = load_bench("fix_long_line")
    for fmt in ("html", "markdown", "asciidoc", "text"):
        _wall, _cpu, links, chars = bench.measure(fmt, 20_000)
        assert chars >= 20_000 and links > 100, fmt
    html = bench.document("html", 20_000)
    # The decoy `href=` inside each title is never taken for the link.
    assert all("t.example" not in s.url for s in extract_links(html, "html"))


# ------------------------------------------------------------------ 11: impossible git dates


def test_11_porcelain_with_an_out_of_range_date_leaves_the_line_undated():
    sha, other = "a" * 40, "b" * 40
    out = (f"{sha} 1 1 1\nauthor-time 99999999999999\n\tx\n"
           f"{other} 2 2 1\nauthor-time 1556712000\n\ty\n"
           f"{sha} 3 3 1\n\tz\n{other} x y\nauthor-time nope\n")
    unknown: set[int] = set()
    dates = parse_porcelain(out, unknown)
    assert sorted(dates) == [2] and unknown == {1, 3}


def test_11_fix_on_a_commit_dated_out_of_range_says_so(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    # An archived copy is never recovered: this run needs no network.
    (repo / "a.md").write_text("[a](https://web.archive.org/web/2019/https://a.example/)\n")
    _git(repo, "add", "a.md")
    tree = _git(repo, "write-tree")
    body = (f"tree {tree}\nauthor A <a@example.org> 99999999999999 +0000\n"
            "committer A <a@example.org> 99999999999999 +0000\n\nfrom the far future\n")
    commit = subprocess.run(["git", "-C", str(repo), "hash-object", "-t", "commit", "-w",
                             "--stdin"], input=body, capture_output=True, text=True,
                            check=True).stdout.strip()
    _git(repo, "update-ref", "HEAD", commit)
    assert _git(repo, "log", "--format=%at") == "99999999999999"
    monkeypatch.chdir(repo)
    assert main(["fix", "--quiet", "--format", "json", "."]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [p["code"] for p in report["problems"]] == ["unknown-date"]
    assert report["links"][0]["date_source"] == "mtime"


# ------------------------------------------------------------------ 12: malformed reports


@pytest.mark.parametrize("payload", [
    '{"error_map": ["x"]}', '{"error_map": {"a.md": "x"}}', '{"error_map": {"a.md": [1]}}',
    '{"error_map": {"a.md": [{"url": 5}]}}', '{"error_map": 7}', "[]", "null", "{",
    '{"fail_map": {}}', "\udcff", "[" * 100_000 + "]" * 100_000,
])
def test_12_a_malformed_lychee_report_is_one_named_line_exit_2(payload, tmp_path, capsys):
    report = tmp_path / "r.json"
    report.write_bytes(payload.encode("utf-8", "surrogateescape"))
    (tmp_path / "a.md").write_text("x\n")
    assert main(["fix", "--from-lychee", str(report), str(tmp_path / "a.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lychee_report" in err and "Traceback" not in err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.text(max_size=6), inner, max_size=3), max_leaves=12))
def test_12_any_json_is_a_report_or_a_named_error(data):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"error_map": data} if isinstance(data, dict) else data, handle)
    try:
        failing = read_lychee(handle.name)
    except LycheeReportError:
        return
    finally:
        os.unlink(handle.name)
    assert all(isinstance(urls, list) and all(isinstance(u, str) for u in urls)
               for urls in failing.values())


# ------------------------------------------------------------------ 14: nothing checked


def test_14_an_ignored_or_empty_selection_says_so_and_exits_3(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "repo"
    (repo / "build" / "html").mkdir(parents=True)
    (repo / "empty").mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build" / "html" / "index.html").write_text('<a href="https://a.example/">a</a>\n')
    (repo / "notes.md").write_text("[a](https://web.archive.org/web/2019/https://a.example/)\n")
    monkeypatch.chdir(repo)
    assert main(["fix", "--quiet", "build/html"]) == 3
    err = capsys.readouterr().err
    assert "nothing checked" in err and "ignored by git" in err
    assert main(["fix", "--quiet", "empty"]) == 3
    assert "no document of a known format matched" in capsys.readouterr().err
    assert main(["fix", "--quiet", "--include", "*.rst", "."]) == 3
    capsys.readouterr()
    # One ignored root among others: named, and the run reads the rest.
    assert main(["fix", "--quiet", "--format", "json", "build/html", "notes.md"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(p["path"], p["code"]) for p in report["problems"]] == [
        ("build/html", "nothing-selected")]


def test_14_the_action_fails_when_nothing_was_checked():
    action = (REPO / "action.yml").read_text()
    assert 'if [ "$status" -gt 1 ]; then exit "$status"; fi' in action
    from pagetrail.cli.fix_cmd import NOTHING_CHECKED
    assert NOTHING_CHECKED > 1


# ------------------------------------------------------------------ fuzz: extract and rewrite

PIECES = st.sampled_from([
    "https://a.example/x", "http://b.example/(y)", "https://c.example/p?q=1&amp;r=2", " ",
    "\n", "\n\n", "`", "``", "[", "]", "(", ")", "<", ">", "*", "_", "\\", '"', "'", ":", ".",
    "<a href=\"", "\">", "</a>", "<!--", "-->", "`x <", ">`_", ".. _n: ", "::\n\n   ",
    "----\n", "link:", "[t]", "= T\n", "#", "|", "\t", "é", "\x01", "&", "=", "<![foo[",
    "<!", "<?", "]]>", "</", "+", "\r\n", "====\n", "+---+\n|", "&#1;", "&amp;",
])
FORMATS = ["markdown", "rst", "html", "asciidoc", "text"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=30).map("".join), st.sampled_from(FORMATS))
def test_fuzz_extractors_give_exact_spans(text, fmt):
    try:
        spans = extract_links(text, fmt)
    except Unparsable:
        return  # the parser gave up: a named problem, never a guess
    assert spans == sorted(spans, key=lambda s: s.start)
    for before, after in itertools.pairwise(spans):
        assert before.end <= after.start
    for span in spans:
        raw = text[span.start:span.end]
        assert span.url.startswith(("http://", "https://"))
        if fmt != "html" and span.form != "href":
            assert raw == span.url
        assert span.line == text.count("\n", 0, span.start) + 1 or "\r" in text


NEW = st.builds(lambda path: "https://new.example/" + path,
                st.text(alphabet=st.sampled_from(list("ab()[]<> `\"'&_.*\\%#?=~|{}^\t")),
                        max_size=12))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=20).map("".join), st.sampled_from(FORMATS), NEW)
def test_fuzz_no_rewrite_reaches_disk_unless_it_reparses_to_the_new_target(text, fmt, new):
    import tempfile

    try:
        spans = [s for s in extract_links(text, fmt) if not s.versioned]
    except Unparsable:
        return
    folder = tempfile.mkdtemp()
    path = Path(folder) / "doc"
    path.write_bytes(text.encode("utf-8"))
    source = read_source(path, fmt)
    if isinstance(source, FileProblem) or source.text != text:
        return
    verdicts = [_verdict(s, new) for s in spans]
    new_text, kept = proven_edits(source, edits_for(source, spans, verdicts, Options()), [])
    assert write_back(source, new_text) is None
    on_disk = path.read_bytes().decode("utf-8")
    norm = _md if fmt == "markdown" else (lambda u: u)
    before = Counter(canonical(norm(t)) for t in link_targets(text, fmt))
    after = Counter(canonical(norm(t)) for t in link_targets(on_disk, fmt))
    moved = Counter()
    for edit in kept:
        moved[canonical(norm(edit.old))] -= 1
        moved[canonical(norm(edit.target))] += 1
    expected = before.copy()
    expected.update(moved)
    assert +expected == after
    assert len(kept) == sum(v.rewritten for v in verdicts)
    if not kept:
        assert on_disk == text


def test_12_stdin_of_hostile_markup_never_tracebacks(monkeypatch, capsys):
    # `fix -` on a text of nothing but hostile markup: offline (no link to recover).
    monkeypatch.setattr("sys.stdin", io.StringIO("`<a href=\"x\">` [(]) \x01 <!-- \n"))
    assert main(["fix", "-"]) == 0


ARCHIVED = "https://web.archive.org/web/2019/https://a.example/"


@pytest.mark.parametrize(("name", "text", "status"), [
    ("a.html", f'<a href="{ARCHIVED}">a</a><![foo[ x', 3),
    ("b.md", f"<![foo[\n\n[a]({ARCHIVED})\n", 0),
    ("c.rst", f"+--+\n| x |\n+--+\n\n`a <{ARCHIVED}>`_\n", 0),
    ("d.adoc", f"----\n[a]({ARCHIVED})\n", 0),
    ("e.rst", "".join(" " * i + "x\n\n" for i in range(3000)) + f"`a <{ARCHIVED}>`_\n", 3),
])
def test_no_traceback_from_markup_a_parser_gives_up_on(name, text, status, tmp_path,
                                                       monkeypatch, capsys):
    (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--quiet", "--format", "junit", name]) == status
    captured = capsys.readouterr()
    ElementTree.fromstring(captured.out.encode())
    if status == 3:  # the parser gave up: named, and the run did not pass as checked
        assert "nothing checked" in captured.err
        assert main(["fix", "--quiet", "--format", "json", name]) == 3
        problems = json.loads(capsys.readouterr().out)["problems"]
        assert [p["code"] for p in problems] == ["unparsable"]


def test_7_text_and_github_reports_show_control_characters_instead_of_sending_them():
    from pagetrail.tools.fix.report import to_github, to_text

    link = LinkVerdict(path="a\x1b[2J.md", line=1, url="https://a.example/\x1b]0;x\x07",
                       form="bare", date=WHEN, date_source="git", verdict="unfixable")
    report = FixReport(links=[link], files=[], problems=[FileProblem(
        path="b\x1b[31m.md", code="binary", message="x\x00y")])
    for out in (to_text(report), to_github(report)):
        assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
        assert "\\x1b" in out


def test_5_front_matter_urls_are_rewritten_and_proven(tmp_path):
    path = tmp_path / "a.md"
    path.write_text("---\nhomepage: https://dead.example/a\n---\n# T\n")
    source = read_source(path, "markdown")
    spans = extract_links(source.text, "markdown")
    assert [s.form for s in spans] == ["front-matter"]
    new_text, kept = proven_edits(source, edits_for(
        source, spans, [_verdict(spans[0], "https://new.example/b c.")], Options()), [])
    assert kept and new_text == "---\nhomepage: https://new.example/b%20c%2E\n---\n# T\n"


def test_5_each_kept_rewrite_is_read_as_a_link_where_it_was_written():
    from pagetrail.tools.fix.proof import _in_place

    u, new = "https://dead.example/a", "https://new.example/b"
    text = RST.format(u=u)
    wrong, right = text.index(u), text.index(f"<{u}>") + 1
    edits = [Edit(wrong, wrong + len(u), new, old=u, target=new),
             Edit(right, right + len(u), new, old=u, target=new)]
    # The interpreted text is not a link where it was written; the embedded URI is.
    assert _in_place(text, "rst", edits) == [edits[0]]
    new_text, kept, refused = prove(text, "rst", edits)
    assert kept == [edits[1]] and refused == [edits[0]]  # the link kept, the text refused
    assert new_text == text.replace(f"<{u}>", f"<{new}>")


def test_4_rst_named_and_anonymous_references_point_at_their_targets():
    u, v = "https://dead.example/a", "https://dead.example/b"
    text = (f"See docs_ and docs_ again, `anon`__ and {u} .\n\n.. _docs: {u}\n\n"
            f"__ {v}\n\n``{u}``\n")
    links = extract_links(text, "rst")
    assert [(s.url, s.form, s.line) for s in links] == [
        (u, "bare", 1), (u, "target", 3), (v, "target", 5)]
    edits = [Edit(s.start, s.end, "https://new.example/c", old=s.url,
                  target="https://new.example/c") for s in links]
    new_text, kept, refused = prove(text, "rst", edits)
    assert len(kept) == 3 and not refused
    assert new_text.count("https://new.example/c") == 3 and f"``{u}``" in new_text


def test_4_markdown_reference_uses_are_their_definition():
    u = "https://dead.example/a"
    text = f'See [notes][n], [n] and [t](https://x.example/ "{u}").\n\n[n]: {u}\n'
    links = extract_links(text, "markdown")
    assert [(s.url, s.form, s.line) for s in links] == [
        ("https://x.example/", "inline", 1), (u, "reference", 3)]
    new_text, kept, refused = prove(text, "markdown", [Edit(
        links[1].start, links[1].end, "https://new.example/b", old=u,
        target="https://new.example/b")])
    assert kept and not refused and new_text.endswith("[n]: https://new.example/b\n")
    assert f'"{u}"' in new_text  # the title holding the same URL is not a link


def test_12_a_path_the_system_cannot_even_look_up_is_a_named_usage_error(tmp_path, capsys):
    assert main(["fix", str(tmp_path / ("a" * 5000))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "File name too long" in err and "Traceback" not in err


def test_5_edits_that_pass_alone_but_break_together_are_refused():
    # Each rewrite alone is fine; together their underscores make an emphasis that cuts
    # both URLs (found by the fuzz test below).
    text = "https://a.example/x\\https://a.example/x"
    new = "https://new.example/_<"
    edits = [Edit(s.start, s.end, escaped(new, "markdown", s.form), old=s.url, target=new)
             for s in extract_links(text, "markdown")]
    assert len(edits) == 2
    new_text, kept, refused = prove(text, "markdown", edits)
    assert new_text == text and not kept and refused == edits


def test_4_many_short_links_are_all_confirmed_by_the_parser():
    # One parse confirms them all (a stand-in's length matters only in RST).
    text = "".join(f"[{n}](http://a.b) and `http://a.b`\n\n" for n in range(2000))
    links = extract_links(text, "markdown")
    assert len(links) == 2000 and all(text[s.start - 2:s.start] == "](" for s in links)


def test_4_rst_short_links_are_confirmed_in_bounded_rounds():
    text = "".join(f"Link http://a.b here {n}.\n\n" for n in range(100))
    calls = []
    from pagetrail.tools.fix import rst

    real = rst.rst_targets

    def counted(source: str) -> list[str]:
        calls.append(1)
        return real(source)

    import pagetrail.tools.fix.proof as proof
    spans = [(m, m + 10, "http://a.b") for m in (i for i in range(len(text))
                                                  if text.startswith("http://a.b", i))]
    verdicts = proof.probe(text, spans, counted, keep_length=True)
    # 36 stand-ins fit a three-character host per round: three rounds for 100 links.
    assert all(verdicts) and len(calls) == 3
