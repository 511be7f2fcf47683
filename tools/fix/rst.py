"""Links of a reStructuredText file, with exact spans: docutils decides what is a link.

docutils parses the document (no file inclusion, no raw HTML, no messages) and lists every
reference and hyperlink target with an external URI. docutils does not report character
offsets, so each URL the scanner finds in the source is a candidate, and docutils decides
which candidates are links (tools.fix.proof.probe: every candidate replaced by a unique
stand-in of the same length, the text parsed again, a candidate is a link when its stand-in
is a reference's URI). Interpreted text, literals, literal and code blocks and comments that
hold the same URL as a real link are therefore never taken for it, whatever their order.
"""

from __future__ import annotations

import re

import docutils.core
import docutils.nodes as nodes
import docutils.utils

from pagetrail.tools.fix.proof import probe
from pagetrail.tools.fix.spans import Lines, LinkSpan, Unparsable
from pagetrail.tools.fix.urls import (
    ANGLED,
    LINE_TARGET,
    Delimiter,
    angle_bracketed,
    line_target,
    scan_urls,
)

_SETTINGS = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": False,
             "raw_enabled": False, "warning_stream": False, "input_encoding": "unicode",
             "_disable_config": True}
# What precedes a hyperlink target's URI: `.. _name:` (the name perhaps quoted in backticks),
# `.. __:` or `__ ` (anonymous), indented or not, the URI on the same line or the next.
_TARGET_MARKER = re.compile(
    r"[ \t]*(?:\.\.[ \t]+_(?:`(?:\\.|[^\\`])+`|(?:\\.|[^\\:`])+):[ \t]*"
    r"(?:(?:\r\n|\r|\n)[ \t]+)?|__[ \t]+)")
_FORMS = {ANGLED: "inline", LINE_TARGET: "target"}


def rst_targets(text: str) -> list[str]:
    """Every external http(s) URI docutils reads as a reference or a hyperlink target, once
    per place it is written: a target inside the reference that names it (`text <uri>`_)
    counts once, and a reference by name (`name`_) is its target's, not another link."""
    try:
        tree = docutils.core.publish_doctree(text, settings_overrides=_SETTINGS)
    except (docutils.utils.SystemMessage, ValueError, IndexError, AttributeError,
            RecursionError) as exc:
        # halt_level 5 stops nothing; docutils still raises on some malformed input (a
        # table it cannot lay out, thousands of nested blocks): the document has no link
        # docutils can vouch for.
        raise Unparsable(f"docutils gave up: {type(exc).__name__}") from None
    uris: list[str] = []
    for node in tree.findall(lambda n: isinstance(n, nodes.reference | nodes.target)):
        uri = node.get("refuri")
        if not uri or not uri.startswith(("http://", "https://")):
            continue
        if isinstance(node, nodes.target) and isinstance(node.parent, nodes.TextElement):
            continue  # `text <uri>`_: the reference already counted it
        if isinstance(node, nodes.reference) and uri not in node.rawsource:
            continue  # `name`_ resolved through a target: the target holds the URI
        uris.append(uri)
    return uris


def _delimiter(text: str, lo: int, begin: int) -> Delimiter | None:
    """The delimiter around a URL: an embedded URI `<…>` (or a standalone `<URL>`, which
    docutils reads to the `>` too), or a hyperlink target's URI, to the end of its line."""
    if angle_bracketed(text, lo, begin):
        return ANGLED
    return LINE_TARGET if line_target(text, lo, begin, _TARGET_MARKER) else None


def rst_links(text: str) -> list[LinkSpan]:
    lines = Lines(text)
    candidates = scan_urls(text, delimited=_delimiter)
    verdicts = probe(text, [(f.start, f.end, f.url) for f in candidates], rst_targets,
                     keep_length=True)
    spans = []
    for found, is_link in zip(candidates, verdicts, strict=True):
        if not is_link:
            continue
        form = _FORMS[found.delimiter] if found.delimiter else "bare"
        spans.append(LinkSpan(found.start, found.end, found.url, lines.line_of(found.start),
                              form, lines.context(found.start, found.end)))
    return spans
