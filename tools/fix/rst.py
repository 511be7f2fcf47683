"""Links of a reStructuredText file, with exact spans: docutils decides what is a link.

docutils parses the document (no file inclusion, no raw HTML, no messages) and lists every
reference and hyperlink target with an external URI. docutils does not report character
offsets, so each URL the scanner finds in the source is a candidate, and docutils decides
which candidates are links (tools.fix.proof.probe: every candidate replaced by a unique
stand-in of the same length, the text parsed again, a candidate is a link when its stand-in
is a reference's URI). Interpreted text, literals, literal and code blocks and comments that
hold the same URL as a real link are therefore never taken for it, whatever their order.

That confirming parse (tools.fix.proof.probe_read) also gives each link its anchor, the text
of the reference docutils read: `text <uri>`_'s text; a hyperlink target's is that of its
first reference by name (`text`_), and its context the words around that reference (the
target's own line is no sentence). A bare URL, and a target nothing refers to, have none.
"""

from __future__ import annotations

import re

import docutils.core
import docutils.nodes as nodes
import docutils.utils

from pagetrail.tools.fix.proof import probe_read
from pagetrail.tools.fix.spans import (
    Lines,
    LinkSpan,
    Markup,
    Unparsable,
    anchor_text,
    pieces_context,
    with_contexts,
)
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
# What a reader does not see of reST: interpreted text and reference markers (backticks,
# underscores), embedded URIs' brackets, emphasis, substitution bars, escapes, roles, and
# the `..` that opens an explicit markup block.
RST = Markup(syntax=re.compile(r"[`<>*|\\_]+|:[\w.+-]+:`|\.\.(?=[ \t])"))
# (anchor, context) of a link as docutils read it; a context only for a use by name.
Cited = tuple[str, str]
# A paragraph's rendered text nodes, and the position of each among them (by identity).
_Paragraph = tuple[list[str], dict[int, int]]


def _doctree(text: str) -> nodes.document:
    try:
        return docutils.core.publish_doctree(text, settings_overrides=_SETTINGS)
    except (docutils.utils.SystemMessage, ValueError, IndexError, AttributeError,
            RecursionError) as exc:
        # halt_level 5 stops nothing; docutils still raises on some malformed input (a
        # table it cannot lay out, thousands of nested blocks): the document has no link
        # docutils can vouch for.
        raise Unparsable(f"docutils gave up: {type(exc).__name__}") from None


def _http(node: nodes.Element) -> str | None:
    uri = node.get("refuri")
    return uri if uri and uri.startswith(("http://", "https://")) else None


def _written(tree: nodes.document) -> list[str]:
    uris: list[str] = []
    for node in tree.findall(lambda n: isinstance(n, nodes.reference | nodes.target)):
        uri = _http(node)
        if uri is None:
            continue
        if isinstance(node, nodes.target) and isinstance(node.parent, nodes.TextElement):
            continue  # `text <uri>`_: the reference already counted it
        if isinstance(node, nodes.reference) and uri not in node.rawsource:
            continue  # `name`_ resolved through a target: the target holds the URI
        uris.append(uri)
    return uris


def rst_targets(text: str) -> list[str]:
    """Every external http(s) URI docutils reads as a reference or a hyperlink target, once
    per place it is written: a target inside the reference that names it (`text <uri>`_)
    counts once, and a reference by name (`name`_) is its target's, not another link."""
    return _written(_doctree(text))


def _cited(text: str) -> dict[str, Cited]:
    """Each URI rst_targets reads → the text of its first reference (a target's: of its
    first use by name, with the words around that use)."""
    tree = _doctree(text)
    cited: dict[str, Cited] = {}
    paragraphs: dict[int, _Paragraph] = {}
    for node in tree.findall(nodes.reference):
        uri = _http(node)
        if uri is None or uri in cited:
            continue
        by_name = uri not in node.rawsource
        cited[uri] = (anchor_text(node.astext()),
                      _use_context(node, paragraphs) if by_name else "")
    return {uri: cited.get(uri, ("", "")) for uri in _written(tree)}


def _use_context(node: nodes.Element, paragraphs: dict[int, _Paragraph]) -> str:
    """The words around a reference in the text element holding it (each element's text
    nodes listed once, however many references it holds)."""
    block = node.parent
    while block is not None and not isinstance(block, nodes.TextElement):
        block = block.parent
    if block is None:
        return ""
    if id(block) not in paragraphs:
        texts = list(block.findall(nodes.Text))
        paragraphs[id(block)] = ([t.astext() for t in texts],
                                 {id(t): i for i, t in enumerate(texts)})
    pieces, index = paragraphs[id(block)]
    own = [index[id(t)] for t in node.findall(nodes.Text) if id(t) in index]
    return pieces_context(pieces, own[0], own[-1] + 1) if own else ""


def _delimiter(text: str, lo: int, begin: int) -> Delimiter | None:
    """The delimiter around a URL: an embedded URI `<…>` (or a standalone `<URL>`, which
    docutils reads to the `>` too), or a hyperlink target's URI, to the end of its line."""
    if angle_bracketed(text, lo, begin):
        return ANGLED
    return LINE_TARGET if line_target(text, lo, begin, _TARGET_MARKER) else None


def rst_links(text: str) -> list[LinkSpan]:
    lines = Lines(text)
    candidates = scan_urls(text, delimited=_delimiter)
    readings = probe_read(text, [(f.start, f.end, f.url) for f in candidates], _cited,
                          keep_length=True)
    spans = []
    for found, reading in zip(candidates, readings, strict=True):
        if reading is None:
            continue
        anchor, used = reading
        form = _FORMS[found.delimiter] if found.delimiter else "bare"
        spans.append(LinkSpan(found.start, found.end, found.url, lines.line_of(found.start),
                              form, used, anchor=anchor))
    return with_contexts(lines, spans, RST)
