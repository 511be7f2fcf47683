"""Links of an HTML file (or an HTML block of Markdown), with exact spans.

The project reads pages with lxml, which reports an element's line but not its offset; a fix
must replace exactly the attribute's bytes, so this uses the standard library's tokenizing
HTML parser (`html.parser`), which reports where each start tag begins and its raw text.
Comments, `<script>` and `<style>` bodies are never tags, so their URLs are left alone.
Only `<a href>` is a link to repair (not `<link>`/`<img>`: assets, not citations).
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from pagetrail.tools.fix.spans import Lines, LinkSpan

_HREF = re.compile(r"""(?:^|\s)href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", re.I)
_VERSIONED = re.compile(r"""(?:^|\s)data-versionurl\s*=""", re.I)


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[int, int, str]] = []  # (line, column, raw start tag)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            raw = self.get_starttag_text() or ""
            line, column = self.getpos()
            self.tags.append((line, column, raw))

    handle_startendtag = handle_starttag


def html_links(text: str, start: int = 0, end: int | None = None,
               lines: Lines | None = None) -> list[LinkSpan]:
    end = len(text) if end is None else end
    lines = lines or Lines(text)
    chunk = text[start:end]
    chunk_lines = Lines(chunk)
    parser = _Anchors()
    parser.feed(chunk)
    parser.close()
    spans: list[LinkSpan] = []
    for line, column, raw in parser.tags:
        tag_start = start + chunk_lines.offset(line - 1) + column
        if text[tag_start:tag_start + len(raw)] != raw:
            continue  # the parser's position and the text disagree: leave the tag alone
        match = _HREF.search(raw)
        if not match:
            continue
        group = next(g for g in (1, 2, 3) if match.group(g) is not None)
        value = match.group(group)
        url = html.unescape(value).strip()
        if not url.lower().startswith(("http://", "https://")):
            continue
        a, b = match.span(group)
        # Surrounding whitespace inside the quotes stays: only the URL's characters change.
        lead = len(value) - len(value.lstrip())
        trail = len(value) - len(value.rstrip())
        span_start, span_end = tag_start + a + lead, tag_start + b - trail
        closing = raw.rstrip()
        tag_end = tag_start + len(closing) - (2 if closing.endswith("/>") else 1)
        spans.append(LinkSpan(span_start, span_end, url, lines.line_of(span_start), "href",
                              lines.context(span_start, span_end), tag_end=tag_end,
                              versioned=bool(_VERSIONED.search(raw))))
    return spans


def attribute_value(url: str) -> str:
    """A URL as a double-quoted attribute value."""
    return html.escape(url, quote=True)
