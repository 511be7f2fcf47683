"""`pagetrail fix` on a real git repository made here: files of every format, committed at
different dates (GIT_AUTHOR_DATE), linking a loopback world's alive, moved, redirected,
archived (three captures), gone and never-existing pages, and some links inside code."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest
from fix_world import FixWorld, build_fix_world

from pagetrail.tools.fix.report import to_sarif
from pagetrail.tools.fix.run import Options, fix_paths
from pagetrail.tools.testbed.runner import start_in_thread

pytestmark = pytest.mark.testbed
SCHEMA = Path(__file__).parent / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def fix_world(tmp_path_factory) -> FixWorld:
    return build_fix_world(tmp_path_factory.mktemp("fix-world") / "fix")


@pytest.fixture(scope="module")
def fix_testbed(fix_world):
    handle = start_in_thread(fix_world.path)
    try:
        yield handle
    finally:
        handle.stop()


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.org",
           "GIT_COMMITTER_NAME": "Ann", "GIT_COMMITTER_EMAIL": "ann@example.org"}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True,
                          capture_output=True, text=True).stdout


def make_repo(root: Path, w: FixWorld) -> dict[str, str]:
    """The repository; returns each file's text as committed."""
    root.mkdir()
    _git(root, "init", "-q")
    files_2019 = {
        "guide.md": (
            "---\ntitle: Guide with https://docs.example/not-a-link-in-front-matter\n"
            f"homepage: {w.alive}\n---\n# Guide\n\n"
            f"Read [the guide]({w.alive}) and [set up the server]({w.moved_from}).\r\n"
            f"Old FAQ: <{w.redirect_from}>. Notes: [notes][n].\n\n"
            f"```\ncurl {w.moved_from}\n```\n\nRun `curl {w.archived}` to see it.\n\n"
            f"<!-- {w.moved_from} -->\n\n[n]: {w.archived}\n"),
        "notes.rst": (
            "Notes\n=====\n\n"
            f"See `the setup <{w.moved_from}>`_ and {w.gone} for more.\n\n"
            f"Literal::\n\n   {w.moved_from}\n\n.. _release: {w.archived}\n"),
        "page.html": (
            "<!DOCTYPE html>\n<html><body>\n"
            f"<p><a class=\"x\" href=\"{w.archived}\">release notes</a> and "
            f"<a href='{w.alive}'>guide</a></p>\n"
            f"<!-- <a href=\"{w.moved_from}\">old</a> -->\n"
            f"<script>var u = \"{w.moved_from}\";</script>\n</body></html>\n"),
        "manual.adoc": (
            "= Manual\n\n"
            f"Set up: {w.moved_from}[the server] and link:{w.never}[benchmarks].\n\n"
            f"----\n{w.moved_from}\n----\n"),
        "links.txt": f"alive {w.alive}\nmoved ({w.moved_from}).\n",
    }
    for name, text in files_2019.items():
        (root / name).write_bytes(text.encode())
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "2019 docs", date="2019-05-01T12:00:00+00:00")
    later = f"Later notes cite {w.archived} again.\n"
    (root / "later.md").write_bytes(later.encode())
    _git(root, "add", "later.md")
    _git(root, "commit", "-qm", "2022 notes", date="2022-03-01T12:00:00+00:00")
    (root / "ignored").mkdir()
    (root / "ignored" / "skip.md").write_text(f"[x]({w.moved_from})\n")
    (root / ".gitignore").write_text("ignored/\n")
    return {**files_2019, "later.md": later}


def _changed_bytes(old: str, new: str, edits: list[tuple[int, str, str]]) -> bool:
    """`new` equals `old` with each (line, before, after) replaced on that line, in order."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", old)]
    rebuilt, cursor = [], 0
    for line, before, after in edits:
        at = old.index(before, max(cursor, starts[line - 1]))
        rebuilt += [old[cursor:at], after]
        cursor = at + len(before)
    return "".join([*rebuilt, old[cursor:]]) == new


def test_fix_rewrites_exactly_the_dead_links_with_answers(tmp_path, fix_world, fix_testbed,
                                                          store):
    w = fix_world
    repo = tmp_path / "repo"
    texts = make_repo(repo, w)
    settings = fix_testbed.settings()
    report = asyncio.run(fix_paths([str(repo)], settings=settings, store=store, write=True))
    by = {(Path(link.path).name, link.line, link.url): link for link in report.links}
    after = {name: (repo / name).read_bytes().decode() for name in texts}

    # .gitignore respected; the ignored file is untouched and unread.
    assert not any("skip.md" in link.path for link in report.links)
    # Alive links and every link in code, comments, scripts and front-matter prose stay.
    assert all(link.verdict != "alive" or not link.rewritten for link in report.links)
    guide = after["guide.md"]
    assert f"curl {w.moved_from}\n```" in guide and f"`curl {w.archived}`" in guide
    assert f"<!-- {w.moved_from} -->" in guide
    assert "not-a-link-in-front-matter" in guide and f"homepage: {w.alive}" in guide
    assert f"   {w.moved_from}\n" in after["notes.rst"]
    assert f"<!-- <a href=\"{w.moved_from}\">" in after["page.html"]
    assert f"var u = \"{w.moved_from}\"" in after["page.html"]
    assert f"----\n{w.moved_from}\n----" in after["manual.adoc"]

    # Moved and redirected links get their new address, in every format.
    assert by[("guide.md", 7, w.moved_from)].verdict == "moved"
    assert by[("guide.md", 7, w.moved_from)].new_url == w.moved_to
    assert by[("guide.md", 8, w.redirect_from)].new_url == w.redirect_to
    for name in ("notes.rst", "manual.adoc", "links.txt"):
        assert w.moved_to in after[name], name
    # The archived page: the capture closest before each link's blame date.
    old_capture = next(link for link in report.links
                       if link.url == w.archived and link.path.endswith("page.html"))
    new_capture = next(link for link in report.links if link.path.endswith("later.md"))
    assert old_capture.date.year == 2019 and new_capture.date.year == 2022
    assert old_capture.date_source == "git"
    assert old_capture.verdict == "archived" and old_capture.rewritten
    assert old_capture.memento_date.strftime("%Y%m%d%H%M%S") == w.captures[0]
    assert new_capture.memento_date.strftime("%Y%m%d%H%M%S") == w.captures[1]
    # Gone, and never existed: no answer, left as they are, reported as dead.
    assert by[("notes.rst", 4, w.gone)].verdict == "unfixable"
    assert not by[("notes.rst", 4, w.gone)].rewritten
    assert by[("manual.adoc", 3, w.never)].verdict == "unfixable"
    assert report.dead_left == 2

    # Byte-identical elsewhere: each file is the old one with exactly the rewritten URLs
    # replaced (CRLF kept in guide.md), nothing else.
    for name, old in texts.items():
        rewritten = sorted((link for link in report.links
                            if Path(link.path).name == name and link.rewritten),
                           key=lambda link: link.line)
        edits = [(link.line, link.url, link.new_url.replace("&", "&amp;")
                  if name == "page.html" else link.new_url) for link in rewritten]
        assert _changed_bytes(old, after[name], edits), name
    assert "\r\n" in guide

    # A second run changes nothing (and the recoveries are read back, not redone).
    again = asyncio.run(fix_paths([str(repo)], settings=settings, store=store, write=True))
    assert again.diff == ""
    assert {name: (repo / name).read_bytes().decode() for name in texts} == after
    assert again.dead_left == 2
    # A third run recovers nothing anew: every answer is read back from the job table (what
    # an interrupted run leaves is kept the same way), so it costs no request.
    third = asyncio.run(fix_paths([str(repo)], settings=settings, store=store))
    assert third.resumed == third.distinct_urls > 0 and third.requests == 0


def test_dry_run_robust_links_and_sarif(tmp_path, fix_world, fix_testbed, store):
    w = fix_world
    repo = tmp_path / "repo"
    texts = make_repo(repo, w)
    settings = fix_testbed.settings()
    options = Options(archived_as="robust", kinds=("archived",), include=("*.html",))
    report = asyncio.run(fix_paths([str(repo)], options=options, settings=settings,
                                   store=store))
    # Dry run: nothing written, the diff says what would change.
    assert (repo / "page.html").read_text() == texts["page.html"]
    assert {Path(f.path).name for f in report.files} == {"page.html"}
    assert f'href="{w.archived}" data-versionurl="' in report.diff
    assert 'data-versiondate="2018-06-01"' in report.diff
    sarif = json.loads(to_sarif(report, "1"))
    jsonschema.validate(sarif, json.loads(SCHEMA.read_text()),
                        format_checker=jsonschema.FormatChecker())
    assert sarif["runs"][0]["results"]

    robust = asyncio.run(fix_paths([str(repo)], options=options, settings=settings,
                                   store=store, write=True))
    assert robust.files[0].written
    # A Robust Link already carries its archived copy: the second run leaves it.
    third = asyncio.run(fix_paths([str(repo)], options=options, settings=settings,
                                  store=store, write=True))
    assert third.diff == ""
    assert any(link.reason.startswith("a Robust Link") for link in third.links)


def test_an_interrupted_run_resumes_and_interactive_confirmation(tmp_path, fix_world,
                                                                  fix_testbed, store):
    w = fix_world
    repo = tmp_path / "repo"
    texts = make_repo(repo, w)
    settings = fix_testbed.settings()

    def interrupt(done: int, total: int) -> None:
        if done >= 2:
            raise KeyboardInterrupt  # Ctrl-C after two recoveries were recorded

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(fix_paths([str(repo)], settings=settings, store=store, write=True,
                              progress=interrupt))
    assert {name: (repo / name).read_bytes().decode() for name in texts} == texts
    asked = []

    def confirm(link) -> bool:
        asked.append(link.url)
        return link.url != w.moved_from  # decline the moved page, accept the others

    report = asyncio.run(fix_paths([str(repo)], settings=settings, store=store, write=True,
                                   confirm=confirm))
    assert 2 <= report.resumed < report.distinct_urls  # what was done is kept, not redone
    assert w.moved_from in asked and w.redirect_from in asked
    guide = (repo / "guide.md").read_bytes().decode()
    assert f"[set up the server]({w.moved_from})" in guide
    assert f"<{w.redirect_to}>" in guide
    declined = [link for link in report.links if link.url == w.moved_from]
    assert declined and not any(link.rewritten for link in declined)


def test_check_links_in_text_tells_a_citation_that_never_existed(fix_world, fix_testbed,
                                                                 store):
    from pagetrail.tools.fix.text import check_links_in_text

    w = fix_world
    text = (f"Setting up the widget server takes three steps ([guide]({w.moved_from})). "
            f"The quantum widget beat every benchmark ({w.never}). "
            f"See also {w.gone} and the [widget guide]({w.alive}).\n")
    result = asyncio.run(check_links_in_text(text, settings=fix_testbed.settings(),
                                             store=store))
    by = {link.url: link for link in result.links}
    assert by[w.never].verdict == "never-existed"
    assert by[w.gone].verdict == "unfixable"  # the host is gone: not "never existed"
    assert by[w.moved_from].verdict == "moved" and by[w.moved_from].new_url == w.moved_to
    assert "three steps" in by[w.moved_from].support.passage
    assert by[w.moved_from].support.score > by[w.alive].support.score
    assert by[w.alive].verdict == "alive" and by[w.alive].support is not None
    assert result.repaired_text == text.replace(w.moved_from, w.moved_to)
