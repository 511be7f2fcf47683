"""pagetrail fix: extraction per format, bad input, lychee reports, the CLI's exit codes,
check_links_in_text and its MCP tool (through the SDK's client, against the testbed)."""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest
from mcp import Client

from pagetrail.cli.main import main
from pagetrail.server.app import build_server
from pagetrail.tools.fix.dates import parse_porcelain
from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.fix.files import gather, read_source
from pagetrail.tools.fix.lychee import LycheeReportError, read_lychee
from pagetrail.tools.fix.rewrite import write_back
from pagetrail.tools.fix.text import check_links_in_text, support

LYCHEE = Path(__file__).parent / "fixtures" / "lychee"


def urls(text: str, fmt: str) -> list[str]:
    return [text[s.start:s.end] for s in extract_links(text, fmt)]


def test_markdown_links_but_not_code_comments_or_front_matter_prose():
    text = ("---\ntitle: see https://a.example/x\nurl: https://b.example/y\n---\n"
            "[a](https://c.example/1 \"t\") <https://d.example/2> https://e.example/3.\n\n"
            "`https://f.example/` and\n\n```\nhttps://g.example/\n```\n\n"
            "    https://h.example/\n\n<!-- https://i.example/ -->\n\n"
            "[r]: https://j.example/4\n\n| a | [b](https://k.example/(x)) |\n|---|---|\n")
    assert urls(text, "markdown") == ["https://b.example/y", "https://c.example/1",
                                      "https://d.example/2", "https://e.example/3",
                                      "https://j.example/4", "https://k.example/(x)"]


def test_html_rst_asciidoc_and_text():
    html = ('<a href="https://a.example/?x=1&amp;y=2">a</a><!-- <a href="https://b.example/">'
            '--><script>"https://c.example/"</script><a data-versionurl="m" href=\'https://d.example/\'>')
    links = extract_links(html, "html")
    assert [link.url for link in links] == ["https://a.example/?x=1&y=2", "https://d.example/"]
    assert links[1].versioned and not links[0].versioned
    rst = "T\n=\n\n`x <https://a.example/>`_\n\n::\n\n   https://a.example/\n"
    assert urls(rst, "rst") == ["https://a.example/"]
    assert extract_links(rst, "rst")[0].line == 4
    adoc = "https://a.example/p[label] `https://b.example/`\n....\nhttps://c.example/\n....\n"
    assert urls(adoc, "asciidoc") == ["https://a.example/p"]
    assert urls("(see https://a.example/x_(y)), and https://b.example/z.", "text") == [
        "https://a.example/x_(y)", "https://b.example/z"]
    assert urls("[https://a.example/p](https://a.example/p)", "markdown") == [
        "https://a.example/p", "https://a.example/p"]
    # A destination the scanner would misread (an escape) is left alone; prose after a colon
    # is still a bare link.
    assert urls("[a](https://a.example/a\\_b) see: https://b.example/c", "markdown") == [
        "https://b.example/c"]


def test_porcelain_dates():
    sha = "a" * 40
    out = (f"{sha} 1 1 2\nauthor Ann\nauthor-time 1556712000\nauthor-tz +0000\n\tline\n"
           f"{sha} 2 2\n\tline2\n{'0' * 40} 3 3 1\nauthor-time 1700000000\n\tnew\n")
    dates = parse_porcelain(out)
    assert sorted(dates) == [1, 2] and dates[1].year == 2019


def test_bad_files_are_named_and_left_alone(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bin.md").write_bytes(b"\x00\x01binary https://a.example/")
    (root / "big.md").write_text("x" * 2000)
    (root / "mixed.txt").write_bytes(bytes(range(128, 256)) * 3 + b" https://a.example/")
    outside = tmp_path / "outside.md"
    outside.write_text("https://a.example/")
    (root / "out.md").symlink_to(outside)
    (root / "loop").symlink_to(root)
    problems: list = []
    files = gather([str(root)], problems=problems)
    read = {p.name: read_source(p, fmt, max_bytes=1000) for p, fmt in files}
    codes = {Path(p.path).name: p.code for p in problems}
    codes |= {name: r.code for name, r in read.items() if hasattr(r, "code")}
    assert codes["bin.md"] == "binary" and codes["big.md"] == "too-large"
    assert codes["out.md"] == "outside-roots"
    assert "symlink-loop" in codes.values()
    assert codes["mixed.txt"] == "undecodable"


def test_a_file_changed_since_it_was_read_is_not_written(tmp_path):
    path = tmp_path / "a.md"
    path.write_text("[a](https://a.example/)\n")
    source = read_source(path, "markdown")
    path.write_text("[a](https://a.example/) edited\n")
    problem = write_back(source, "[a](https://b.example/)\n")
    assert problem is not None and problem.code == "changed-on-disk"
    assert path.read_text() == "[a](https://a.example/) edited\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".pagetrail")]


def test_lychee_reports():
    failing = read_lychee(LYCHEE / "json_formatter_stats.json")
    assert failing == {"https://example.com/": [
        "https://github.com/mre/idiomatic-rust-doesnt-exist-man"]}
    with pytest.raises(LycheeReportError, match="another version"):
        read_lychee(LYCHEE / "handmade_fail_map.json")


def test_cli_usage_errors_exit_2(tmp_path, capsys):
    assert main(["fix", str(tmp_path / "missing")]) == 2
    assert main(["fix", "--from-lychee", str(LYCHEE / "handmade_fail_map.json"),
                 str(tmp_path)]) == 2
    assert "another version" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["fix", "--kinds", "moved,sideways", str(tmp_path)])
    assert stop.value.code == 2


@pytest.mark.testbed
def test_stdin_is_checked_and_repaired(tiny_world, testbed_env, monkeypatch, capsys):
    text = f"Solar farms doubled ([source]({tiny_world.live_redirect})).\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["fix", "-", "--date", "2019-07-01"]) == 0
    captured = capsys.readouterr()
    assert captured.out == text.replace(tiny_world.live_redirect, tiny_world.moved_to)
    assert f"moved: {tiny_world.live_redirect} → {tiny_world.moved_to}" in captured.err


def test_support_finds_the_passage():
    page = ("Widgets are small. The gearbox module was fixed in edition two. "
            "Lanterns glow. Compasses point north. Unrelated closing words here.")
    found = support("The gearbox module was fixed", page)
    assert found is not None and "gearbox" in found.passage and found.score > 0.3


@pytest.mark.testbed
def test_cli_exit_codes_and_formats(tmp_path, tiny_world, testbed_env, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text(f"[x]({tiny_world.moved_to})\n")
    assert main(["fix", "--quiet", str(docs)]) == 0
    (docs / "dead.md").write_text(f"[gone]({tiny_world.nxdomain_url})\n")
    capsys.readouterr()
    assert main(["fix", "--quiet", "--format", "github", str(docs)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("::error file=") and "dead.md,line=1" in out
    assert main(["fix", "--quiet", "--format", "junit", "--exclude", "dead.md",
                 str(docs)]) == 0
    suite = ElementTree.fromstring(capsys.readouterr().out).find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert main(["fix", "--quiet", "--format", "json", str(docs)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["unfixable"] == 1 and report["dead_left"] == 1


@pytest.mark.testbed
def test_cli_interactive_asks_per_link(tmp_path, tiny_world, testbed_env, monkeypatch,
                                       capsys):
    page = tmp_path / "a.md"
    text = f"[old]({tiny_world.live_redirect})\n"
    page.write_text(text)
    answers = iter(["n"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert main(["fix", "--quiet", "--interactive", str(page)]) == 1  # declined: still dead
    assert page.read_text() == text
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["fix", "--quiet", "--interactive", str(page)]) == 0
    assert page.read_text() == f"[old]({tiny_world.moved_to})\n"


@pytest.mark.testbed
def test_check_links_in_text(tiny_world, testbed_settings, store):
    text = (f"Solar farms doubled their output in a year ([source]({tiny_world.moved_from})). "
            f"See also {tiny_world.nxdomain_url}.\n")
    result = asyncio.run(check_links_in_text(text, settings=testbed_settings, store=store))
    verdicts = {link.url: link for link in result.links}
    moved = verdicts[tiny_world.moved_from]
    assert moved.verdict in ("moved", "archived") and moved.new_url
    assert moved.new_url in result.repaired_text and result.changed
    assert moved.support is not None and "Solar" in moved.support.passage
    assert verdicts[tiny_world.nxdomain_url].verdict == "unfixable"


@pytest.mark.testbed
async def test_mcp_tool(testbed_settings, store, tiny_world):
    async with Client(build_server(testbed_settings, store)) as client:
        result = await client.call_tool("check_links_in_text",
                                        {"text": f"Read {tiny_world.moved_to} now."})
        assert not result.is_error
        links = result.structured_content["links"]
        assert links[0]["verdict"] == "alive" and links[0]["support"] is not None


def test_os_supports_symlinks():
    assert hasattr(os, "symlink")


def test_policy_kinds_confidence_and_robust_links():
    from datetime import UTC, datetime

    from pagetrail.tools.fix.files import SourceFile
    from pagetrail.tools.fix.rewrite import apply_edits
    from pagetrail.tools.fix.run import LinkVerdict, Options, edits_for

    html = ('<a href="https://a.example/">a</a> <a href="https://b.example/">b</a> '
            '<a href="https://c.example/">c</a>')
    source = SourceFile(Path("x.html"), "html", html, "utf-8", b"", "")
    spans = extract_links(html, "html")
    when = datetime(2019, 6, 1, tzinfo=UTC)

    def verdicts() -> list[LinkVerdict]:
        def one(span, verdict, new_url, confidence):
            return LinkVerdict(path="x.html", line=1, url=span.url, form=span.form, date=when,
                               date_source="git", verdict=verdict, new_url=new_url,
                               confidence=confidence, memento_date=when)
        return [one(spans[0], "moved", "https://a.example/new?x=1&y=2", 0.9),
                one(spans[1], "replacement", "https://b.example/other", 0.4),
                one(spans[2], "archived", "https://web.archive.org/web/2019/https://c.example/",
                    1.0)]

    chosen = verdicts()
    edited = apply_edits(html, [e for e, _ in edits_for(source, spans, chosen,
                                                         Options(min_confidence=0.5))])
    assert 'href="https://a.example/new?x=1&amp;y=2"' in edited
    assert 'href="https://b.example/"' in edited  # below the confidence asked for
    assert [v.rewritten for v in chosen] == [True, False, True]
    robust = apply_edits(html, [e for e, _ in edits_for(
        source, spans, verdicts(), Options(kinds=("archived",), archived_as="robust"))])
    assert ('<a href="https://c.example/" data-versionurl="https://web.archive.org/web/2019/'
            'https://c.example/" data-versiondate="2019-06-01">c</a>') in robust
    assert 'href="https://a.example/"' in robust  # moved is not among the kinds asked for


@pytest.mark.testbed
def test_from_lychee_recovers_only_the_reported_failures(tmp_path, tiny_world, testbed_env,
                                                         capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # lychee ran here: the report's inputs are confined to it
    page = tmp_path / "a.md"
    page.write_text(f"[a]({tiny_world.live_redirect}) and [b]({tiny_world.nxdomain_url})\n")
    # The real report's shape (tests/fixtures/lychee/json_formatter_stats.json), this file's
    # failures in it.
    report = json.loads((LYCHEE / "json_formatter_stats.json").read_text())
    report["error_map"] = {str(page): [{"url": tiny_world.live_redirect,
                                        "status": {"text": "404 Not Found", "code": 404}}]}
    (tmp_path / "lychee.json").write_text(json.dumps(report))
    assert main(["fix", "--quiet", "--format", "json", "--write",
                 "--from-lychee", str(tmp_path / "lychee.json")]) == 0
    verdicts = {link["url"]: link for link in json.loads(capsys.readouterr().out)["links"]}
    assert verdicts[tiny_world.live_redirect]["verdict"] == "moved"
    assert verdicts[tiny_world.nxdomain_url]["verdict"] == "skipped"
    assert page.read_text() == (f"[a]({tiny_world.moved_to}) and "
                                f"[b]({tiny_world.nxdomain_url})\n")
