"""Inline markers that accept a link where it is written (pure functions of a document's text
and the link spans its extractor found).

In each format's own comment syntax (as markdownlint's and markdown-link-check's
`<!-- …-disable -->` comments):

| format | one link | a stretch |
|---|---|---|
| Markdown, HTML | `<!-- pagetrail-ignore -->` | `<!-- pagetrail-disable -->` … `<!-- pagetrail-enable -->` |
| reStructuredText | `.. pagetrail-ignore` (a comment line) | `.. pagetrail-disable` … `.. pagetrail-enable` |
| AsciiDoc | `// pagetrail-ignore` (a comment line) | `// pagetrail-disable` … `// pagetrail-enable` |
| plain text | `pagetrail-ignore` on the line | `pagetrail-disable` … `pagetrail-enable` |

`pagetrail-ignore` covers every link on its own line; on a line without a link, the next
link after it. `pagetrail-disable` covers every link after it up to `pagetrail-enable` (or the
end of the document). A marker inside code (a fenced or indented code block or a code span
in Markdown, a literal block in reStructuredText, a delimited block in AsciiDoc, a script in
HTML) is text, not a marker: documentation that shows the syntax is not itself marked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser

from pagetrail.tools.fix.spans import Lines, LinkSpan

WORD = "pagetrail-"
_HTML = re.compile(r"<!--\s*pagetrail-(ignore|disable|enable)\s*-->")
_RST = re.compile(r"^[ \t]*\.\.[ \t]+pagetrail-(ignore|disable|enable)[ \t]*$", re.M)
_ADOC = re.compile(r"^[ \t]*//[ \t]*pagetrail-(ignore|disable|enable)[ \t]*$", re.M)
_TEXT = re.compile(r"(?<![\w./#-])pagetrail-(ignore|disable|enable)(?![\w-])")
_ADOC_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|/{4,}|`{3,}.*|={4,}|\*{4,}|_{4,})\s*$")


@dataclass(frozen=True)
class Marker:
    kind: str  # ignore, disable, enable
    start: int
    end: int
    line: int


def _found(pattern: re.Pattern[str], text: str, lines: Lines) -> list[Marker]:
    return [Marker(m.group(1), m.start(), m.end(), lines.line_of(m.start()))
            for m in pattern.finditer(text)]


def _markdown(text: str, lines: Lines) -> list[Marker]:
    """HTML comments outside code blocks and code spans."""
    from markdown_it import MarkdownIt

    code_lines: set[int] = set()
    for token in MarkdownIt("commonmark").parse(text):
        if token.type in ("fence", "code_block") and token.map:
            code_lines.update(range(token.map[0] + 1, token.map[1] + 1))
    kept = []
    for marker in _found(_HTML, text, lines):
        if marker.line in code_lines:
            continue
        line_start = lines.offset(marker.line - 1)
        if text.count("`", line_start, marker.start) % 2:
            continue  # inside a code span: an odd number of backticks opened before it
        kept.append(marker)
    return kept


class _Comments(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, int, str]] = []  # (line, column, data)

    def handle_comment(self, data: str) -> None:
        line, column = self.getpos()
        self.found.append((line, column, data))


def _html(text: str, lines: Lines) -> list[Marker]:
    """Comments as the HTML tokenizer sees them (not inside <script> or <style>)."""
    parser = _Comments()
    parser.feed(text)
    parser.close()
    markers = []
    for line, column, data in parser.found:
        start = lines.offset(line - 1) + column
        match = _HTML.match(text, start)
        if match and match.group(0) == f"<!--{data}-->":
            markers.append(Marker(match.group(1), start, match.end(), line))
    return markers


def _rst(text: str, lines: Lines) -> list[Marker]:
    """Comment lines that docutils reads as comments (not lines of a literal block)."""
    import docutils.core
    import docutils.nodes as nodes
    import docutils.utils

    candidates = _found(_RST, text, lines)
    if not candidates:
        return []
    settings = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": False,
                "raw_enabled": False, "warning_stream": False, "input_encoding": "unicode",
                "_disable_config": True}
    try:
        tree = docutils.core.publish_doctree(text, settings_overrides=settings)
    except docutils.utils.SystemMessage:
        return []
    comments = [(node.line or 0, node.astext().strip())
                for node in tree.findall(nodes.comment)]
    # docutils gives a comment's line at, or a line or two past, where it is written.
    return [m for m in candidates
            if any(body == f"pagetrail-{m.kind}" and m.line <= line <= m.line + 2
                   for line, body in comments)]


def _asciidoc(text: str, lines: Lines) -> list[Marker]:
    """`//` comment lines outside delimited blocks."""
    candidates = {m.line: m for m in _found(_ADOC, text, lines)}
    if not candidates:
        return []
    kept = []
    closing: str | None = None
    for number in range(1, len(lines.starts) + 1):
        line = text[lines.offset(number - 1):lines.offset(number)].rstrip("\r\n")
        if closing is not None:
            if line.strip() == closing:
                closing = None
            continue
        if _ADOC_DELIMITER.match(line):
            closing = "```" if line.startswith("```") else line.strip()
            continue
        if number in candidates:
            kept.append(candidates[number])
    return kept


def markers_of(text: str, fmt: str) -> list[Marker]:
    """The markers of a document in `fmt` (see tools.fix.extract.FORMATS), in order."""
    if WORD not in text:  # nearly every document: no parse at all
        return []
    lines = Lines(text)
    if fmt == "markdown":
        return _markdown(text, lines)
    if fmt == "html":
        return _html(text, lines)
    if fmt == "rst":
        return _rst(text, lines)
    if fmt == "asciidoc":
        return _asciidoc(text, lines)
    return _found(_TEXT, text, lines)


def marked_links(text: str, fmt: str, spans: Sequence[LinkSpan]) -> dict[int, str]:
    """span.start → why the link is accepted as it is, for each link a marker covers."""
    markers = markers_of(text, fmt)
    if not markers or not spans:
        return {}
    marked: dict[int, str] = {}
    ordered = sorted(spans, key=lambda s: s.start)
    for marker in markers:
        if marker.kind != "ignore":
            continue
        why = f"pagetrail-ignore on line {marker.line}"
        same_line = [s for s in ordered if s.line == marker.line]
        if same_line:
            for span in same_line:
                marked.setdefault(span.start, why)
            continue
        following = next((s for s in ordered if s.start >= marker.end), None)
        if following is not None:
            marked.setdefault(following.start, why)
    disabled_at: Marker | None = None
    stretches: list[tuple[int, int, int]] = []  # (from, to, line of the disable)
    for marker in markers:
        if marker.kind == "disable" and disabled_at is None:
            disabled_at = marker
        elif marker.kind == "enable" and disabled_at is not None:
            stretches.append((disabled_at.end, marker.start, disabled_at.line))
            disabled_at = None
    if disabled_at is not None:
        stretches.append((disabled_at.end, len(text), disabled_at.line))
    for begin, end, line in stretches:
        for span in ordered:
            if begin <= span.start < end:
                marked.setdefault(span.start, f"within pagetrail-disable (line {line})")
    return marked


__all__ = ["Marker", "marked_links", "markers_of"]
