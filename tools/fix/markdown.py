"""Links of a Markdown file, with exact spans, located by markdown-it-py's token maps.

markdown-it (CommonMark, plus GFM tables) says which lines are prose (`inline` tokens), which
are code (fences, indented code), which are raw HTML and where each reference definition is
(`env["references"][label]["map"]`). Within a prose block the URL scanner finds inline link
destinations, autolinks and bare URLs (GitHub links those too), skipping code spans and HTML
comments; HTML blocks go to the HTML extractor; YAML front matter keeps only values that are
a URL by themselves.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt

from pagetrail.tools.fix.html import html_links
from pagetrail.tools.fix.spans import Lines, LinkSpan
from pagetrail.tools.fix.urls import scan_urls

_FRONT_OPEN = re.compile(r"---[ \t]*(\r\n|\r|\n)")
_FRONT_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$", re.M)
_FRONT_VALUE = re.compile(r"^[ \t]*(?:-[ \t]+)?[\w.-]+[ \t]*:[ \t]*[\"']?(https?://[^\s\"']+)[\"']?[ \t]*$",
                          re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _front_matter(text: str) -> tuple[int, list[LinkSpan], Lines]:
    """(end offset of the front matter, its URL-valued keys)."""
    lines = Lines(text)
    opened = _FRONT_OPEN.match(text)
    if not opened:
        return 0, [], lines
    close = _FRONT_CLOSE.search(text, opened.end())
    if not close:
        return 0, [], lines
    spans = []
    for match in _FRONT_VALUE.finditer(text, opened.end(), close.start()):
        start, end = match.span(1)
        spans.append(LinkSpan(start, end, match.group(1), lines.line_of(start), "front-matter",
                              lines.context(start, end)))
    return close.end(), spans, lines


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """CommonMark code spans in text[start:end]: a run of n backticks to the next run of
    exactly n; plus HTML comments (neither holds a link)."""
    spans = [m.span() for m in _COMMENT.finditer(text, start, end)]
    i = start
    while i < end:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] != "`":
            i += 1
            continue
        j = i
        while j < end and text[j] == "`":
            j += 1
        run = j - i
        k = j
        closed = -1
        while k < end:
            if text[k] == "`":
                m = k
                while m < end and text[m] == "`":
                    m += 1
                if m - k == run:
                    closed = m
                    break
                k = m
            else:
                k += 1
        if closed == -1:
            i = j  # an unmatched run is literal backticks
            continue
        spans.append((i, closed))
        i = closed
    return spans


def _inside(offset: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= offset < b for a, b in ranges)


def markdown_links(text: str) -> list[LinkSpan]:
    body_start, spans, lines = _front_matter(text)
    body = text[body_start:]
    first_line = lines.line_of(body_start) - 1 if body_start else 0
    env: dict[str, Any] = {}
    tokens = _parser().parse(body, env)

    def region(line_range: list[int]) -> tuple[int, int]:
        return (lines.offset(first_line + line_range[0]),
                lines.offset(first_line + line_range[1]))

    parser = _parser()
    # Each prose region with the link destinations markdown-it read in it: a destination the
    # scanner reads differently (an escape, an entity) is left alone rather than half-fixed.
    prose: dict[tuple[int, int], set[str]] = {}
    for token in tokens:
        if token.map is None:
            continue
        if token.type == "inline":
            hrefs = prose.setdefault(region(token.map), set())
            hrefs.update(str(child.attrs.get("href", "")) for child in token.children or []
                         if child.type == "link_open")
        elif token.type == "html_block":
            start, end = region(token.map)
            spans.extend(html_links(text, start, end, lines))
    for reference in env.get("references", {}).values():
        if reference.get("map"):
            prose.setdefault(region(reference["map"]), set()).add(str(reference["href"]))
    for (start, end), hrefs in sorted(prose.items()):
        code = _code_spans(text, start, end)
        for found in scan_urls(text, start, end):
            if _inside(found.start, code):
                continue
            before = text[max(start, found.start - 2):found.start]
            form = ("autolink" if before.endswith("<") else
                    "inline" if before.endswith("](") else
                    "reference" if before.rstrip().endswith(":") else
                    "bare")
            if parser.normalizeLink(found.url) not in hrefs:
                if form in ("inline", "autolink"):
                    continue
                form = "bare"  # prose after a colon, not a definition
            spans.append(LinkSpan(found.start, found.end, found.url,
                                  lines.line_of(found.start), form,
                                  lines.context(found.start, found.end)))
    return sorted(spans, key=lambda s: s.start)
