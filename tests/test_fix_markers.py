"""Inline markers that accept one link (tools/fix/markers.py), in every format `fix` reads,
over the spans the real extractors find: the marker's line or the next link, disable …
enable stretches, and markers inside code that are only text."""

from __future__ import annotations

import pytest

from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.fix.markers import marked_links, markers_of

A, B, C, D = ("https://a.example/one", "https://b.example/two", "https://c.example/three",
              "https://d.example/four")


def accepted(text: str, fmt: str) -> dict[str, str]:
    """url → why, for every link a marker covers (each URL once in these texts)."""
    spans = extract_links(text, fmt)
    assert len({s.url for s in spans}) == len(spans)
    marked = marked_links(text, fmt, spans)
    return {s.url: marked[s.start] for s in spans if s.start in marked}


def test_markdown_same_line_next_link_and_stretches():
    text = (f"# Doc\n\nSee [a]({A}) <!-- pagetrail-ignore --> and [b]({B}).\n\n"
            f"<!-- pagetrail-ignore -->\n[c]({C}) is old.\n\n"
            f"<!-- pagetrail-disable -->\n- <{D}>\n- https://e.example/five\n"
            f"<!-- pagetrail-enable -->\n\nChecked: https://f.example/six\n")
    got = accepted(text, "markdown")
    assert got == {A: "pagetrail-ignore on line 3", B: "pagetrail-ignore on line 3",
                   C: "pagetrail-ignore on line 5",
                   D: "within pagetrail-disable (line 8)",
                   "https://e.example/five": "within pagetrail-disable (line 8)"}


def test_markdown_markers_in_code_are_text():
    text = ("Write it like this:\n\n```markdown\n<!-- pagetrail-ignore -->\n```\n\n"
            "or inline: `<!-- pagetrail-disable -->`.\n\n"
            "    <!-- pagetrail-ignore -->\n\n"
            f"Then [a]({A}) stays checked.\n")
    assert markers_of(text, "markdown") == []
    assert accepted(text, "markdown") == {}


def test_an_unclosed_disable_runs_to_the_end():
    text = f"[a]({A})\n\n<!-- pagetrail-disable -->\n\n[b]({B})\n\n[c]({C})\n"
    assert set(accepted(text, "markdown")) == {B, C}


def test_html_comments_not_scripts():
    text = (f"<p><a href=\"{A}\">a</a> <!--pagetrail-ignore--></p>\n"
            f"<!-- pagetrail-ignore -->\n<p>\n<a href=\"{B}\">b</a></p>\n"
            f"<script>var s = '<!-- pagetrail-ignore -->';</script>\n"
            f"<p><a href=\"{C}\">c</a></p>\n")
    assert accepted(text, "html") == {A: "pagetrail-ignore on line 1",
                                      B: "pagetrail-ignore on line 2"}


def test_rst_comment_lines_not_literal_blocks():
    text = ("Title\n=====\n\n.. pagetrail-ignore\n\n"
            f"See `a <{A}>`_ for more.\n\n"
            f"Example::\n\n   .. pagetrail-ignore\n\nAnd `b <{B}>`_.\n\n"
            f".. pagetrail-disable\n\n`c <{C}>`_ and {D}.\n\n.. pagetrail-enable\n\n"
            "Last: https://e.example/five\n")
    assert accepted(text, "rst") == {A: "pagetrail-ignore on line 4",
                                     C: "within pagetrail-disable (line 14)",
                                     D: "within pagetrail-disable (line 14)"}


def test_asciidoc_comment_lines_not_listing_blocks():
    text = ("= Manual\n\n// pagetrail-ignore\n"
            f"Set up: {A}[the server].\n\n----\n// pagetrail-ignore\n----\n"
            f"Then link:{B}[b].\n\n//pagetrail-disable\n{C}[c]\n// pagetrail-enable\n"
            f"{D}[d]\n")
    assert accepted(text, "asciidoc") == {A: "pagetrail-ignore on line 3",
                                          C: "within pagetrail-disable (line 11)"}


def test_plain_text_marker_on_the_line():
    text = (f"alive {A}  # pagetrail-ignore\nmoved {B}\n"
            f"pagetrail-ignore\n{C}\nhttps://x.example/pagetrail-ignore {D}\n")
    got = accepted(text, "text")
    assert got == {A: "pagetrail-ignore on line 1", C: "pagetrail-ignore on line 3"}


@pytest.mark.parametrize("fmt", ["markdown", "html", "rst", "asciidoc", "text"])
def test_no_marker_no_parse_no_change(fmt):
    text = f"plain {A} text, pagetrail mentioned but no marker\n"
    assert marked_links(text, fmt, extract_links(text, fmt)) == {}
