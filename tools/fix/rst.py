"""Links of a reStructuredText file, with exact spans: docutils decides what is a link.

docutils parses the document (no file inclusion, no raw HTML, no messages) and lists every
reference and hyperlink target with an external URI, in document order. docutils does not
report character offsets, so each such URI is then located in the source: the URL scanner
finds candidate occurrences, in order, outside inline literals (``…``) and comments, and an
occurrence counts only while docutils still owes a link to that URI. URLs in literal blocks,
code blocks and comments are not links to docutils, so they are never rewritten.
"""

from __future__ import annotations

import re
from collections import Counter

import docutils.core
import docutils.nodes as nodes
import docutils.utils

from pagetrail.tools.fix.spans import Lines, LinkSpan
from pagetrail.tools.fix.urls import scan_urls

_LITERAL = re.compile(r"``.+?``", re.S)
_SETTINGS = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": False,
             "raw_enabled": False, "warning_stream": False, "input_encoding": "unicode",
             "_disable_config": True}


def _code_ranges(tree: nodes.document, text: str) -> list[tuple[int, int]]:
    """Where literal blocks, code blocks and comments sit in the source: each node's raw text
    looked for from a line or two before the line docutils gives (it names the line at, or
    just past, the block's content)."""
    lines = Lines(text)
    ranges = []
    for node in tree.findall(lambda n: isinstance(n, nodes.literal_block | nodes.comment)):
        raw_lines = [line for line in (node.rawsource or node.astext()).splitlines()
                     if line.strip()]
        if not raw_lines:
            continue
        near = max(0, (node.line or 1) - 1 - len(raw_lines) - 2)
        first = _line_equal(text, lines, near, raw_lines[0])
        if first is None:
            continue
        last = _line_equal(text, lines, first, raw_lines[-1])
        end_line = first if last is None else last
        ranges.append((lines.offset(first), lines.offset(end_line + 1)))
    return ranges


def _line_equal(text: str, lines: Lines, start: int, wanted: str) -> int | None:
    """The first 0-based line from `start` whose text ends with `wanted` (a comment's line
    begins with `.. `, a block's lines with indentation)."""
    wanted = wanted.strip()
    for number in range(start, len(lines.starts)):
        line = text[lines.offset(number):lines.offset(number + 1)].strip()
        if line == wanted or line.endswith(" " + wanted):
            return number
    return None


def _parse(text: str) -> tuple[Counter[str], list[tuple[int, int]]]:
    try:
        tree = docutils.core.publish_doctree(text, settings_overrides=_SETTINGS)
    except docutils.utils.SystemMessage:  # halt_level 5: not expected, but named
        return Counter(), []
    uris: Counter[str] = Counter()
    for node in tree.findall(lambda n: isinstance(n, nodes.reference | nodes.target)):
        uri = node.get("refuri")
        if not uri or not uri.startswith(("http://", "https://")):
            continue
        if isinstance(node, nodes.target) and isinstance(node.parent, nodes.TextElement):
            continue  # `text <uri>`_: the reference already counted it
        uris[uri] += 1
    return uris, _code_ranges(tree, text)


def rst_links(text: str) -> list[LinkSpan]:
    owed, code = _parse(text)
    lines = Lines(text)
    literals = [m.span() for m in _LITERAL.finditer(text)] + code
    spans = []
    for found in scan_urls(text, stop=""):
        if any(a <= found.start < b for a, b in literals) or owed[found.url] <= 0:
            continue
        owed[found.url] -= 1
        before = text[max(0, found.start - 1):found.start]
        form = "inline" if before == "<" else "target" if before in (" ", "\t") and \
            text[lines.offset(lines.line_of(found.start) - 1):found.start].lstrip().startswith(
                ".. _") else "bare"
        spans.append(LinkSpan(found.start, found.end, found.url, lines.line_of(found.start),
                              form, lines.context(found.start, found.end)))
    return spans
