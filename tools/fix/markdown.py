"""Links of a Markdown file, with exact spans, located by markdown-it-py's token maps.

markdown-it (CommonMark, plus GFM tables) says which lines are prose (`inline` tokens), which
are code (fences, indented code), which are raw HTML and where each reference definition is
(`env["references"][label]["map"]`). Within a prose block the URL scanner finds inline link
destinations, autolinks and bare URLs (GitHub links those too), skipping code spans and HTML
comments (a destination, an autolink and a definition's URL run to their delimiter, trailing
`.`, `,`, `;` kept; only a bare URL loses its trailing punctuation); HTML blocks go to the HTML
extractor; YAML front matter keeps only values that are a URL by themselves.

What markdown-it reads in its confirming parse (tools.fix.proof.probe_read) gives each link
its anchor: an inline link's text, an image's alt text in it; a reference definition's is the
text of its first use, and its context the words around that use (the definition's own line
is no sentence). An autolink or bare URL has none.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pagetrail.tools.fix.html import html_links, html_targets
from pagetrail.tools.fix.proof import probe_read
from pagetrail.tools.fix.spans import (
    PLAIN,
    Lines,
    LinkSpan,
    Markup,
    Ranges,
    anchor_text,
    pieces_context,
    with_contexts,
)
from pagetrail.tools.fix.urls import (
    ANGLED,
    WHITESPACE,
    Delimiter,
    angle_bracketed,
    line_target,
    scan_urls,
)

_FRONT_OPEN = re.compile(r"---[ \t]*(\r\n|\r|\n)")
_FRONT_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$", re.M)
_FRONT_VALUE = re.compile(r"^[ \t]*(?:-[ \t]+)?[\w.-]+[ \t]*:[ \t]*[\"']?(https?://[^\s\"']+)[\"']?[ \t]*$",
                          re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TICKS = re.compile(r"`+")
# What CommonMark's syntax ends a URL at (tools.fix.urls): an inline destination `](URL)` at
# its unmatched `)` or the space before a title, a reference definition's at whitespace; in
# both, parentheses pair (an unmatched one is no destination).
_DESTINATION = Delimiter(WHITESPACE | {")"}, balanced=True)
_DEFINITION = Delimiter(WHITESPACE, balanced=True, at_end=True)
# What precedes a definition's destination on its line: container markers (a block quote, a
# list item), `[label]:`, spaces, and at most one line break.
_DEFINITION_MARKER = re.compile(
    r"(?:[ \t>]|[-+*][ \t]|\d{1,9}[.)][ \t])*\[(?:\\.|[^\\\[\]]){1,999}\]:[ \t]*"
    r"(?:(?:\r\n|\r|\n)[ \t>]*)?")


# What a reader does not see of Markdown: raw HTML, entities (decoded), a reference link's
# label, brackets and parentheses, emphasis, code and strike markers, escapes, heading and
# block quote marks. (Mostly a class of characters, not alternatives tried at each one: a
# line of thousands of links is read once.)
MARKDOWN = Markup(tags=True, entities=True, syntax=re.compile(
    r"\]\[[^\[\]\n]{0,999}\]|[!\[\]()<>|`*~\\_#]+"))
# (anchor, context) of a link as markdown-it read it; a context only for a reference use.
Cited = tuple[str, str]


def _parser() -> MarkdownIt:
    # store_labels: a reference link names its definition (whose anchor its text is).
    return MarkdownIt("commonmark", {"store_labels": True}).enable("table")


def normalize_link(url: str) -> str:
    """A destination as markdown-it reports it (percent-encoded, host in punycode)."""
    return str(_parser().normalizeLink(url))


class _Definitions(dict[str, Any]):
    """env["references"] that answers a reference link's lookup (`[text][label]`) with a
    marker: such a link is its definition's URL, written once, at the definition; counting
    it again would make a definition rewritten look like several links changed. (The block
    rule stores definitions by item; the inline rules look them up with `.get`.)"""

    def get(self, key: str, default: Any = None) -> Any:
        found = super().get(key, default)
        return {**found, "href": _USE} if isinstance(found, dict) else found


_USE = "\0reference-use"


def markdown_targets(text: str) -> list[str]:
    """Every link target markdown-it reads: inline, reference and autolink destinations,
    reference definitions, `<a href>` in raw HTML, and bare URLs in prose (GitHub links
    those; a link's text that shows its URL is rewritten with it) outside code and HTML;
    and front matter values that are a URL by themselves."""
    return _read(text, None)


def _cited(text: str) -> dict[str, Cited]:
    """Each target markdown-it reads (markdown_targets) → what it read of its first link."""
    cited: dict[str, Cited] = {}
    return {target: cited.get(target, ("", "")) for target in _read(text, cited)}


def _read(text: str, cited: dict[str, Cited] | None) -> list[str]:
    """markdown_targets; with `cited`, each target's first link's text (and a reference
    use's context) are put in it too."""
    body_start, front, _ = _front_matter(text)
    definitions = _Definitions()
    env: dict[str, Any] = {"references": definitions}
    found: list[str] = [span.url for span in front]
    for token in _parser().parse(text[body_start:], env):
        if token.type == "html_block":
            found.extend(html_targets(token.content))
        elif token.type == "inline":
            _read_inline(token.children or [], definitions, found, cited)
    found.extend(str(reference["href"]) for reference in definitions.values())
    return found


# A link read in a paragraph: its targets, where its text starts and ends among the
# paragraph's rendered pieces, and whether it is a reference use (given a context).
_Read = tuple[list[str], int, int, bool]


def _read_inline(children: Sequence[Token], definitions: dict[str, Any], found: list[str],
                 cited: dict[str, Cited] | None) -> None:
    """One paragraph's targets into `found`; with `cited`, its links' texts into it."""
    pieces: list[str] = []  # the paragraph as a reader sees it, one piece per text token
    links: list[_Read] = []
    # A link whose close is ahead: its targets, first piece, a reference use, raw HTML.
    opened: tuple[list[str], int, bool, bool] | None = None
    autolink = False  # an autolink's text is its URL again: one link, counted once
    for child in children:
        if child.type == "link_open":
            href = str(child.attrs.get("href", ""))
            if href == _USE:  # the definition's URL: read where it is written, not here
                entry = dict.get(definitions, child.meta.get("label", ""))
                opened = ([str(entry["href"])] if isinstance(entry, dict) else [],
                          len(pieces), True, False)
            else:
                found.append(href)
                opened = ([href], len(pieces), False, False)
            autolink = child.markup == "autolink"
        elif child.type == "link_close":
            if opened is not None and not opened[3]:
                links.append((opened[0], opened[1], len(pieces), opened[2]))
            opened, autolink = None, False
        elif child.type == "html_inline":
            targets = html_targets(child.content)
            found.extend(targets)
            if targets and opened is None:
                opened = (targets, len(pieces), False, True)  # its text: to its `</a>`
            elif opened is not None and opened[3] and child.content[:3].lower() == "</a":
                links.append((opened[0], opened[1], len(pieces), False))
                opened = None
        elif child.type in ("text", "code_inline"):
            pieces.append(child.content)
            if child.type == "text" and not autolink:
                found.extend(f.url for f in scan_urls(child.content))
        elif child.type in ("softbreak", "hardbreak"):
            pieces.append(" ")
        elif child.type == "image":
            pieces.append(" ".join(c.content for c in child.children or []
                                   if c.type in ("text", "code_inline")))
    if cited is not None:
        _cite(pieces, links, cited)


def _cite(pieces: list[str], links: list[_Read], cited: dict[str, Cited]) -> None:
    """Each link's text (the first link of a target wins: a definition used many times is
    read once); a reference use's context, the words around it."""
    for targets, first, last, use in links:
        for target in targets:
            if target not in cited:
                cited[target] = (anchor_text("".join(pieces[first:last]), PLAIN),
                                 pieces_context(pieces, first, last) if use else "")


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
        spans.append(LinkSpan(start, end, match.group(1), lines.line_of(start), "front-matter"))
    return close.end(), spans, lines


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """CommonMark code spans in text[start:end]: a run of n backticks to the next run of
    exactly n; plus HTML comments (neither holds a link). Each closing run is looked up
    (bisect over the runs of its length), so a line of many backticks stays linear."""
    spans = [m.span() for m in _COMMENT.finditer(text, start, end)]
    runs = [m.span() for m in _TICKS.finditer(text, start, end)]
    by_length: dict[int, list[int]] = {}
    for a, b in runs:
        by_length.setdefault(b - a, []).append(a)
    cursor = start
    for a, b in runs:
        if a < cursor:
            continue
        backslashes = 0
        while a - backslashes - 1 >= cursor and text[a - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2:
            a += 1  # an escaped backtick opens nothing; the rest of the run may
            if a == b:
                continue
        length = b - a
        starts = by_length.get(length, [])
        index = bisect.bisect_left(starts, b)
        if index == len(starts):
            continue  # an unmatched run is literal backticks
        closed = starts[index] + length
        spans.append((a, closed))
        cursor = closed
    return spans


def _inline_delimiter(text: str, lo: int, begin: int) -> Delimiter | None:
    """The delimiter around a URL of a paragraph: an autolink, an inline destination."""
    if angle_bracketed(text, lo, begin):
        return ANGLED
    return _DESTINATION if text[max(lo, begin - 2):begin] == "](" else None


def _definition_delimiter(text: str, lo: int, begin: int) -> Delimiter | None:
    """The delimiter around a URL of a reference definition: its destination, bare or
    angle-bracketed (a URL in its title is prose)."""
    if angle_bracketed(text, lo, begin):
        return ANGLED
    return _DEFINITION if line_target(text, lo, begin, _DEFINITION_MARKER) else None


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
    definitions: set[tuple[int, int]] = set()
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
            definitions.add(region(reference["map"]))
            prose.setdefault(region(reference["map"]), set()).add(str(reference["href"]))
    for (start, end), hrefs in sorted(prose.items()):
        code = Ranges(_code_spans(text, start, end))
        definition = (start, end) in definitions
        for found in scan_urls(text, start, end, delimited=(
                _definition_delimiter if definition else _inline_delimiter)):
            if found.start in code:
                continue
            before = text[max(start, found.start - 2):found.start]
            form = ("autolink" if before.endswith("<") else
                    "inline" if before.endswith("](") else
                    "reference" if definition else
                    "bare")
            if found.url not in hrefs and parser.normalizeLink(found.url) not in hrefs:
                if form in ("inline", "autolink"):
                    continue
                form = "bare"  # prose after a colon, not a definition
            spans.append(LinkSpan(found.start, found.end, found.url,
                                  lines.line_of(found.start), form))
    # markdown-it has the last word: an occurrence is kept only when, replaced by a stand-in,
    # the stand-in comes back as a link target (a link title, a link's text or an escaped
    # bracket holding the same URL is never taken for the link). What it read of that
    # link (its text; a definition's use) is this occurrence's.
    front = [span for span in spans if span.form == "front-matter"]
    body = [span for span in spans if span.form != "front-matter"]
    readings = probe_read(text, [(s.start, s.end, s.url) for s in body], _cited)
    kept = [(span, *reading) for span, reading in zip(body, readings, strict=True)
            if reading is not None]
    contexts = lines.contexts([(span.start, span.end) for span, *_ in kept], MARKDOWN)
    # An HTML block's link has its context already (read as HTML), a definition its use's.
    spans = with_contexts(lines, front, PLAIN) + [
        replace(span, anchor=span.anchor or anchor, context=span.context or used or context)
        for (span, anchor, used), context in zip(kept, contexts, strict=True)]
    return sorted(spans, key=lambda s: s.start)
