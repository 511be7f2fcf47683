"""Links of an HTML file (or an HTML block of Markdown), with exact spans.

The project reads pages with lxml, which reports an element's line but not its offset; a fix
must replace exactly the attribute's bytes, so this uses the standard library's tokenizing
HTML parser (`html.parser`), which reports where each start tag begins and its raw text.
Comments, `<script>` and `<style>` bodies are never tags, so their URLs are left alone.
Only `<a href>` is a link to repair (not `<link>`/`<img>`: assets, not citations).

The href is found by tokenizing the start tag's attributes with the parser's own attribute
pattern, and kept only when that reading equals the attributes the parser reported: `href=`
written inside another attribute's value (`title="old: href=…"`) is text, never the link.
A link's anchor is the text the parser reads inside its `<a>` (entities decoded, an image's
alt text counted, scripts not), to its `</a>` or the next `<a>`.
"""

from __future__ import annotations

import html
import html.parser
import re
from html.parser import HTMLParser

from pagetrail.tools.fix.spans import (
    ANCHOR_CHARS,
    Lines,
    LinkSpan,
    Markup,
    Unparsable,
    anchor_text,
)

# What a reader does not see of HTML: tags, comments, scripts; entities are decoded.
HTML = Markup(tags=True, entities=True)
# Text kept of one `<a>` while parsing (anchor_text reads no more): an `<a>` never closed
# would otherwise collect the rest of the document.
_ANCHOR_READ = 8 * ANCHOR_CHARS
# Elements a reader sees apart from the text around them (inside an `<a>`: words apart).
_APART = frozenset({"br", "p", "div", "li", "td", "th", "tr", "h1", "h2", "h3", "h4", "h5",
                    "h6", "figcaption"})

# html.parser's own tokens for a start tag's name and each attribute (what it reports in
# handle_starttag); read from the module so the two readings cannot drift apart.
_TAG: re.Pattern[str] | None = getattr(html.parser, "tagfind_tolerant", None)
_ATTR: re.Pattern[str] | None = getattr(html.parser, "attrfind_tolerant", None)

Attribute = tuple[str, str | None, int, int]  # name, value, value's span in the raw tag


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        # (line, column, raw start tag, attributes as the parser read them)
        self.tags: list[tuple[int, int, str, list[tuple[str, str | None]]]] = []
        # Each `<a>`'s text as the parser read it (entities decoded; an image's alt text).
        self.texts: list[list[str]] = []
        self._open: int | None = None  # the `<a>` whose text is being read
        self._read = 0
        self._hidden = 0  # inside <script> or <style>: no text a reader sees

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs)
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs)  # `<a href=…/>` opens an `<a>` all the same (as browsers)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            raw = self.get_starttag_text() or ""
            line, column = self.getpos()
            self.tags.append((line, column, raw, attrs))
            self.texts.append([])
            self._open, self._read = len(self.texts) - 1, 0  # an `<a>` in one closes it
        elif tag == "img":
            self._text(f" {dict(reversed(attrs)).get('alt') or ''} ")
        elif tag in _APART:
            self._text(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open = None
        elif tag in ("script", "style") and self._hidden:
            self._hidden -= 1
        elif tag in _APART:
            self._text(" ")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self._text(data)

    def _text(self, data: str) -> None:
        if self._open is not None and data and self._read < _ANCHOR_READ:
            self.texts[self._open].append(data[:_ANCHOR_READ])
            self._read += len(data)


def _feed(parser: HTMLParser, text: str) -> None:
    """Parse `text`; Unparsable where html.parser gives up (`<![foo[`: an AssertionError
    from _markupbase)."""
    try:
        parser.feed(text)
        parser.close()
    except AssertionError as exc:
        raise Unparsable(f"html.parser gave up: {exc}") from None


def attributes(raw: str) -> list[Attribute] | None:
    """A start tag's attributes as html.parser tokenizes them, each with its raw value
    (entities not decoded) and that value's span (quotes excluded) in `raw`; None when the
    tag cannot be read that way."""
    if _TAG is None or _ATTR is None or not raw.startswith("<"):
        return None
    tag = _TAG.match(raw, 1)
    if tag is None:
        return None
    found: list[Attribute] = []
    k = tag.end()
    while k < len(raw):
        match = _ATTR.match(raw, k)
        if not match or match.end() == k:
            break
        name, rest, value = match.group(1, 2, 3)
        a, b = match.span(3)
        if not rest:
            found.append((name.lower(), None, b, b))
        else:
            if value[:1] in ("'", '"') and value[:1] == value[-1:] and len(value) > 1:
                a, b = a + 1, b - 1
            found.append((name.lower(), raw[a:b], a, b))  # raw: entities not decoded
        k = match.end()
    return found


def html_links(text: str, start: int = 0, end: int | None = None,
               lines: Lines | None = None) -> list[LinkSpan]:
    end = len(text) if end is None else end
    lines = lines or Lines(text)
    whole = start == 0 and end == len(text)
    chunk = text if whole else text[start:end]
    chunk_lines = lines if whole else Lines(chunk)
    parser = _Anchors()
    _feed(parser, chunk)
    found: list[tuple[int, int, str, int, bool, str]] = []
    for (line, column, raw, parsed), texts in zip(parser.tags, parser.texts, strict=True):
        tag_start = start + chunk_lines.offset(line - 1) + column
        if text[tag_start:tag_start + len(raw)] != raw:
            continue  # the parser's position and the text disagree: leave the tag alone
        read = attributes(raw)
        if read is None or [n for n, *_ in read] != [n for n, _ in parsed]:
            continue  # this reading is not the parser's: leave the tag alone
        index = next((i for i, attr in enumerate(read) if attr[0] == "href"), None)
        if index is None or read[index][1] is None:
            continue  # the first href counts (as in browsers)
        _, value, a, b = read[index]
        url = html.unescape(value) if "&" in value else value
        if url != parsed[index][1]:
            continue  # the value the parser read is not this one: leave the tag alone
        url = url.strip()
        if not url.lower().startswith(("http://", "https://")):
            continue
        # Surrounding whitespace inside the quotes stays: only the URL's characters change.
        lead = len(value) - len(value.lstrip())
        trail = len(value) - len(value.rstrip())
        span_start, span_end = tag_start + a + lead, tag_start + b - trail
        closing = raw.rstrip()
        tag_end = tag_start + len(closing) - (2 if closing.endswith("/>") else 1)
        found.append((span_start, span_end, url, tag_end,
                      any(n == "data-versionurl" for n, *_ in read), anchor_text("".join(texts))))
    contexts = lines.contexts([(a, b) for a, b, *_ in found], HTML)
    return [LinkSpan(a, b, url, lines.line_of(a), "href", context, tag_end=tag_end,
                     versioned=versioned, anchor=anchor)
            for (a, b, url, tag_end, versioned, anchor), context
            in zip(found, contexts, strict=True)]


class _Targets(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        values = dict(reversed(attrs))  # the first of a repeated attribute counts
        href = (values.get("href") or "").strip()
        if href.lower().startswith(("http://", "https://")):
            self.found.append(href)
        version = values.get("data-versionurl")
        if version:
            from pagetrail.tools.fix.proof import VERSION
            self.found.append(VERSION + version.strip())

    handle_startendtag = handle_starttag


def html_targets(text: str) -> list[str]:
    """The http(s) targets of the `<a>` tags html.parser reads (and each Robust Link's
    data-versionurl, marked with proof.VERSION): what a rewrite is proven against."""
    parser = _Targets()
    _feed(parser, text)
    return parser.found


def attribute_value(url: str) -> str:
    """A URL as a double-quoted attribute value."""
    return html.escape(url, quote=True)
