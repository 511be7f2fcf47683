"""`pagetrail fix` where a format's syntax delimits a URL: the delimiter ends it, not prose's
trimming, so a URL that really ends in `.`, `,`, `;` or `)` is extracted whole, read the same
by the format's own parser (markdown-it-py, docutils, tools.fix.asciidoc), and rewritten
whole; a bare URL in a sentence still loses its trailing punctuation.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.fix.files import FileProblem, read_source
from pagetrail.tools.fix.markdown import normalize_link
from pagetrail.tools.fix.proof import canonical, link_targets, prove
from pagetrail.tools.fix.rewrite import Edit, write_back
from pagetrail.tools.fix.run import LinkVerdict, Options, edits_for, proven_edits
from pagetrail.tools.fix.spans import LinkSpan
from pagetrail.tools.fix.urls import (
    ANGLED,
    LABELLED,
    LINE_TARGET,
    LOOKBACK,
    line_prefix,
    scan_urls,
)

WHEN = datetime(2019, 6, 1, tzinfo=UTC)
NEW = "https://new.example/b"
BASE = "https://dead.example/a"
# A URL ending in each character; `)` unpaired where the form takes any character up to its
# delimiter, paired where CommonMark wants a destination's parentheses to pair.
ENDINGS = {".": BASE + ".", ",": BASE + ",", ";": BASE + ";", ")": BASE + ")",
           "(…)": BASE + "_(b.)"}
UNPAIRED = (".", ",", ";", ")")
PAIRED = (".", ",", ";", "(…)")

# (format, form's name, document holding one link {u}, the endings the form allows)
FORMS = [
    ("markdown", "autolink", "See <{u}> here.\n", UNPAIRED),
    ("markdown", "angle destination", "See [the page](<{u}>) here.\n", UNPAIRED),
    ("markdown", "inline", "See [the page]({u}) here.\n", PAIRED),
    ("markdown", "inline with title", 'See [the page]({u} "The page") here.\n', PAIRED),
    ("markdown", "reference", "See [the page][r].\n\n[r]: {u}\n", PAIRED),
    ("markdown", "reference with title", "See [the page][r].\n\n[r]: {u} 'The page'\n", PAIRED),
    ("markdown", "reference on the next line", "See [r].\n\n[r]:\n    {u}\n", PAIRED),
    ("markdown", "reference in a quote", "> See [r].\n>\n> [r]: {u}\n", PAIRED),
    ("rst", "embedded", "See `the page <{u}>`_ here.\n", UNPAIRED),
    ("rst", "target", "See `the page`_ here.\n\n.. _the page: {u}\n", UNPAIRED),
    ("rst", "target on the next line", "See page_ here.\n\n.. _page:\n   {u}\n", UNPAIRED),
    ("rst", "anonymous target", "See `the page`__ here.\n\n__ {u}\n", UNPAIRED),
    ("rst", "anonymous explicit target", "See `the page`__ here.\n\n.. __: {u}\n", UNPAIRED),
    ("asciidoc", "link macro", "See link:{u}[the page] here.\n", UNPAIRED),
    ("asciidoc", "url with label", "See {u}[the page] here.\n", UNPAIRED),
    ("asciidoc", "angle brackets", "See <{u}> here.\n", UNPAIRED),
]
CASES = [pytest.param(fmt, template, ENDINGS[ending], id=f"{fmt}-{form}-{ending}")
         for fmt, form, template, endings in FORMS for ending in endings]


def _read(url: str, fmt: str) -> str:
    """A target as the format's parser spells it (markdown-it normalizes a destination)."""
    return canonical(normalize_link(url) if fmt == "markdown" else url)


def _only_link(text: str, fmt: str) -> LinkSpan:
    spans = extract_links(text, fmt)
    assert len(spans) == 1, [s.url for s in spans]
    return spans[0]


def _verdict(span: LinkSpan, new_url: str) -> LinkVerdict:
    return LinkVerdict(path="x", line=span.line, url=span.url, form=span.form, date=WHEN,
                       date_source="git", verdict="moved", new_url=new_url, confidence=1.0,
                       memento_date=WHEN)


def _fix(path: Path, fmt: str, new_url: str) -> tuple[str, list[FileProblem]]:
    """Rewrite every link of the file at `path` to `new_url` as `fix --write` does (extract,
    escape, prove, write back); the text on disk and the problems named."""
    source = read_source(path, fmt)
    assert not isinstance(source, FileProblem)
    spans = extract_links(source.text, fmt)
    problems: list[FileProblem] = []
    new_text, _ = proven_edits(source, edits_for(
        source, spans, [_verdict(s, new_url) for s in spans], Options()), problems)
    assert write_back(source, new_text) is None
    return path.read_text(), problems


# ------------------------------------------------------------------ extraction and parser


@pytest.mark.parametrize(("fmt", "template", "url"), CASES)
def test_the_delimited_url_is_extracted_whole(fmt, template, url):
    text = template.format(u=url)
    span = _only_link(text, fmt)
    assert span.url == url and text[span.start:span.end] == url
    assert text[span.end] in " )>[\n"  # the delimiter, not the URL's last character


@pytest.mark.parametrize(("fmt", "template", "url"), CASES)
def test_the_format_parser_reads_the_same_url(fmt, template, url):
    text = template.format(u=url)
    span = _only_link(text, fmt)
    assert [canonical(t) for t in link_targets(text, fmt)] == [_read(span.url, fmt)]
    assert _read(span.url, fmt) == _read(url, fmt)


# ------------------------------------------------------------------ rewrite and proof


@pytest.mark.parametrize(("fmt", "template", "url"), CASES)
def test_a_fix_writes_exactly_the_new_url(fmt, template, url, tmp_path):
    path = tmp_path / f"doc.{fmt}"
    path.write_text(template.format(u=url))
    on_disk, problems = _fix(path, fmt, NEW)
    assert not problems
    assert on_disk == template.format(u=NEW)  # nothing of the old URL left behind


@pytest.mark.parametrize(("fmt", "template", "url"), CASES)
def test_a_rewrite_leaving_the_last_character_behind_is_refused(fmt, template, url):
    text = template.format(u=url)
    start = text.index(url)
    short = url[:-1]  # what prose trimming took for the URL
    edit = Edit(start, start + len(short), NEW, old=short, target=NEW)
    new_text, kept, refused = prove(text, fmt, [edit])
    assert not kept and refused == [edit] and new_text == text


@pytest.mark.parametrize(("fmt", "template"), [
    pytest.param(fmt, template, id=f"{fmt}-{form}") for fmt, form, template, _ in FORMS])
@pytest.mark.parametrize("ending", [".", ",", ";"])
def test_a_new_url_ending_in_punctuation_is_read_back_whole(fmt, template, ending, tmp_path):
    path = tmp_path / f"doc.{fmt}"
    path.write_text(template.format(u=BASE + ending))
    on_disk, problems = _fix(path, fmt, NEW + ending)
    assert not problems
    assert Counter(canonical(t) for t in link_targets(on_disk, fmt)) == {
        _read(NEW + ending, fmt): 1}


def test_one_document_of_links_and_prose_is_fixed_where_each_is_written(tmp_path):
    u = BASE + "."
    text = (f"Autolink <{u}>, inline [a]({u}) and prose {u} end.\n\n"
            f"Also (see {BASE}).\n\n[r]: {u}\n\n[r]\n")
    path = tmp_path / "doc.md"
    path.write_text(text)
    assert [(s.url, s.form) for s in extract_links(text, "markdown")] == [
        (u, "autolink"), (u, "inline"), (BASE, "bare"), (BASE, "bare"), (u, "reference")]
    on_disk, problems = _fix(path, "markdown", NEW)
    assert not problems
    assert on_disk == (f"Autolink <{NEW}>, inline [a]({NEW}) and prose {NEW}. end.\n\n"
                       f"Also (see {NEW}).\n\n[r]: {NEW}\n\n[r]\n")


# ------------------------------------------------------------------ prose still trims


@pytest.mark.parametrize("fmt", ["markdown", "rst", "asciidoc", "text"])
@pytest.mark.parametrize("prose", [
    "See {b}. Then more.\n", "See {b}, and more.\n", "See {b}; and more.\n",
    "Something (see {b}) here.\n", "Note: {b}.\n", "See {b}.\n",
])
def test_a_bare_url_in_a_sentence_is_still_trimmed(fmt, prose):
    text = prose.format(b=BASE)
    assert [(s.url, text[s.start:s.end]) for s in extract_links(text, fmt)] == [(BASE, BASE)]


@pytest.mark.parametrize(("fmt", "text"), [
    # An opening without its closing delimiter is prose after all.
    ("rst", f"See <{BASE}. and more\n"),
    ("asciidoc", f"See <{BASE}. and more\n"),
    ("asciidoc", f"See link:{BASE}. and more\n"),
    # A definition-like line inside a paragraph is no definition (it cannot interrupt one).
    ("markdown", f"A paragraph\n[r]: {BASE}.\n"),
    # A target-like text in a sentence is no target.
    ("rst", f"Write it as .. _x: {BASE}. in a sentence.\n"),
])
def test_an_unclosed_delimiter_is_prose(fmt, text):
    assert [s.url for s in extract_links(text, fmt)] == [BASE]


def test_a_url_in_a_definition_title_is_prose():
    text = f"[r]: {BASE}. 'see {BASE}/t. too'\n\n[r]\n"
    assert [(s.url, s.form) for s in extract_links(text, "markdown")] == [
        (BASE + ".", "reference")]


def test_an_unpaired_parenthesis_ends_a_markdown_destination_as_markdown_it_does():
    # CommonMark: `)` unpaired ends an inline destination; a definition's destination with
    # one is no definition (the line is a paragraph, its URL prose).
    text = f"[a]({BASE}))\n"
    span = _only_link(text, "markdown")
    assert (span.url, span.form) == (BASE, "inline")
    text = f"[r]: {BASE})\n\n[r]\n"
    assert [(s.url, s.form) for s in extract_links(text, "markdown")] == [(BASE, "bare")]
    assert link_targets(text, "markdown") == [BASE]


# ------------------------------------------------------------------ the scanner


def test_scan_urls_keeps_the_run_its_delimiter_closes():
    text = f"<{BASE}.> {BASE}.[l] {BASE}. x"
    found = scan_urls(text, delimited=lambda t, lo, begin: ANGLED if t[begin - 1] == "<"
                      else LABELLED, stop="[")
    assert [(f.url, f.delimiter) for f in found] == [
        (BASE + ".", ANGLED), (BASE + ".", LABELLED), (BASE, None)]


def test_scan_urls_line_target_runs_to_the_end_of_the_range():
    text = f"x {BASE};"
    found = scan_urls(text, delimited=lambda t, lo, begin: LINE_TARGET)
    assert [(f.url, f.delimiter) for f in found] == [(BASE + ";", LINE_TARGET)]
    assert [f.url for f in scan_urls(text, 0, len(text) - 1,
                                     delimited=lambda t, lo, b: LINE_TARGET)] == [BASE]


def test_line_prefix_looks_back_a_bounded_distance():
    short = "  .. _x: "
    assert line_prefix(f"intro\n{short}{BASE}", 0, 6 + len(short)) == short
    assert line_prefix(f"intro\n.. _x:\n   {BASE}", 0, 16) == ".. _x:\n   "
    far = "y" * (LOOKBACK + 10) + " "
    assert line_prefix(f"{far}{BASE}", 0, len(far)) is None
    # The scanned range's start is a line start.
    assert line_prefix(f"abc{short}{BASE}", 3, 3 + len(short)) == short


@pytest.mark.parametrize(("fmt", "unit"), [
    ("asciidoc", "https://a.example/)"),  # a `URL[` form that never comes
    ("asciidoc", "link:https://a.example/("),
    ("rst", "x https://a.example/y. "),  # a target's marker looked for on one long line
    ("markdown", "[a](https://a.example/(("),
])
def test_a_long_line_of_unclosed_delimiters_stays_linear(fmt, unit):
    text = unit * (200_000 // len(unit)) + "\n"
    started = time.process_time()
    extract_links(text, fmt)
    # Linear is well under a second here; re-scanning from each URL took minutes.
    assert time.process_time() - started < 15
