"""What the extractors return: a link at an exact place in a file's text, with its anchor and
context; line helpers; and the reader's view of a source (`Markup`, `reader_text`,
`anchor_text`, `Lines.contexts`), one implementation every format's extractor calls with its
own idea of what is markup."""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

_NEWLINE = re.compile(r"\r\n|\r|\n")
CONTEXT_CHARS = 240  # the context a recovery is sent: about a sentence either side
ANCHOR_CHARS = 200  # a link's text: an anchor longer than a title is prose, not a name
# Raw characters read either side of a link: markup (tags, attributes, link syntax) is
# removed after the window is cut, so it is cut wider than the context kept (half of it
# either side, or more of one when the other is short); a constant, so that a 5 MB line
# of links stays linear.
_REACH = CONTEXT_CHARS
# Pieces of a parser's rendered text walked either side of a link (each piece is cut to
# the budget too): bounded, so that a paragraph of thousands of links stays linear.
_PIECES = 64


class Unparsable(ValueError):
    """The format's parser gave up on this document (docutils on thousands of nested
    blocks, html.parser on `<![foo[`): no link in it can be vouched for, so none is
    rewritten, and the file is named rather than passed as checked."""


@dataclass(frozen=True)
class LinkSpan:
    """One link: text[start:end] is exactly the URL as written (what a fix replaces).

    `url` is the URL it stands for (entities decoded in HTML); `line` is 1-based; `context`
    the words around it as a reader sees them (markup and URLs removed: what a recovery's
    queries are expanded with); `anchor` the link's text (see `anchor_text`); `tag_end`
    (HTML) is where attributes may be added to its start tag; `versioned` marks a Robust
    Link already written."""

    start: int
    end: int
    url: str
    line: int
    form: str  # inline, reference, autolink, bare, href, target
    context: str = ""
    tag_end: int | None = None
    versioned: bool = False
    anchor: str = ""  # what a reader sees as the link (its text); "" for a bare URL


@dataclass(frozen=True)
class Markup:
    """What of a format's source a reader does not see: HTML tags, comments and the content
    of script and style elements (`tags`), character references, decoded (`entities`), and
    the format's own inline syntax (`syntax`: link brackets, emphasis and role markers, each
    match read as a space; `literals`, strings read as a space, such as a macro's name).
    URLs are never words a reader reads: they are removed always."""

    tags: bool = False
    entities: bool = False
    syntax: re.Pattern[str] | None = None
    literals: tuple[str, ...] = ()


PLAIN = Markup()  # plain text, and text a parser already rendered

_TAGS = re.compile(
    r"<!--.*?(?:-->|\Z)|<(script|style)\b[^>]*>.*?(?:</\1\s*>|\Z)|</?[A-Za-z][^<>]*>"
    r"|<[!?][^<>]*>", re.S | re.I)
# A URL to its end in prose (a bracket ends it too: AsciiDoc's `URL[text]`; the sentence's
# punctuation after it is not its), and one written without its scheme. (Cased by hand,
# not re.I: the scan for its first letter stays fast.)
_URL_END = r"(?:[^\s<>\"'`\[\]]*[^\s<>\"'`\[\].,;:!?)])?"
_URLS = re.compile(r"[hHfF](?:[tT][tT][pP][sS]?|[tT][pP])://" + _URL_END)
_WWW = re.compile(r"\b[wW]{3}\." + _URL_END)
# What a URL removed leaves of its delimiters (`(…)`, `<…>`, quotes): nothing to read.
_EMPTIED = re.compile(r"\(\s*\)|\[\s*\]|<\s*>|\"\s*\"|'\s*'")
_PAIRS = frozenset({"()", "[]", "<>", '""', "''"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Format and bidirectional controls, zero-width and tag characters, lone surrogates (a
# file read with surrogateescape): invisible, and a hostile anchor's way to make two texts
# look alike or a report print what it does not say.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                        "\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]")
_BLANK_LINE = re.compile(r"(?:\r\n|\r|\n)[ \t]*(?:\r\n|\r|\n)")


def clean(text: str) -> str:
    """Control characters read as spaces, invisible ones dropped, whitespace collapsed."""
    if not text.isprintable():  # (the common case, printable, skips both)
        text = _INVISIBLE.sub("", _CONTROL.sub(" ", text))
    return " ".join(text.split())


def reader_text(source: str, markup: Markup = PLAIN) -> str:
    """`source` as a reader sees it: markup removed (see Markup), URLs removed, cleaned.
    (Each step is skipped when the character it needs is absent: a line of thousands of
    links reads each window, so the cheap test pays.)"""
    text = _TAGS.sub(" ", source) if markup.tags and "<" in source else source
    if markup.entities and "&" in text:
        text = html.unescape(text)
    if "://" in text:
        text = _EMPTIED.sub(" ", _URLS.sub(" ", text))
    if "www." in text or "WWW." in text:
        text = _EMPTIED.sub(" ", _WWW.sub(" ", text))
    for literal in markup.literals:
        text = text.replace(literal, " ")
    if markup.syntax is not None:
        text = markup.syntax.sub(" ", text)
    return clean(text)


def _first_words(text: str, width: int) -> str:
    """At most `width` characters of the start of `text`, cut between words (a single word
    longer than that is cut)."""
    if len(text) <= width:
        return text
    if width <= 0:
        return ""
    cut = text[:width]
    if text[width] == " ":
        return cut.rstrip()
    space = cut.rfind(" ")
    return cut[:space] if space > 0 else cut


def _last_words(text: str, width: int) -> str:
    """At most `width` characters of the end of `text`, cut between words."""
    if len(text) <= width:
        return text
    if width <= 0:
        return ""
    cut = text[-width:]
    if text[-width - 1] == " ":
        return cut.lstrip()
    space = cut.find(" ")
    return cut[space + 1:] if space >= 0 else cut


def around(before: str, after: str, width: int = CONTEXT_CHARS) -> str:
    """The last words of `before` and the first of `after` (reader text, the link where
    they meet), at most `width` characters in all: half each, or more of `before` when
    `after` is short."""
    head = _last_words(before, max(width // 2, width - len(after) - 1))
    tail = _first_words(after, width - len(head) - 1 if head else width)
    return f"{head} {tail}" if head and tail else head or tail


def _open_tag_at_end(raw: str) -> int:
    """Where a tag that `raw` ends inside starts (`<a href="`), or -1."""
    lt = raw.rfind("<")
    if lt < 0 or raw.find(">", lt) >= 0:
        return -1
    follows = raw[lt + 1:lt + 2]
    return lt if follows.isalpha() or follows in ("/", "!", "?") else -1


def _tag_rest_dropped(raw: str) -> str:
    """`raw` without the rest of a tag it starts inside (`" class="x">`)."""
    gt = raw.find(">")
    return raw[gt + 1:] if gt >= 0 and "<" not in raw[:gt] else raw


def _read_piece(raw: str, markup: Markup, *, in_tag: bool = False, cut_start: bool = False,
                cut_end: bool = False) -> tuple[str, bool]:
    """(the reader text of a piece of source between links, whether it ends inside a tag:
    the URL after it is an attribute's value). `in_tag`: it starts inside the tag of the
    URL before it; `cut_start`/`cut_end`: a window cut the source there (a word, a tag may
    be cut in two: dropped)."""
    ends_in_tag = False
    if markup.tags:
        if in_tag or cut_start:
            raw = _tag_rest_dropped(raw)
        inside = _open_tag_at_end(raw)
        if inside >= 0:
            raw, ends_in_tag = raw[:inside], not cut_end
    words = reader_text(raw, markup)
    if cut_start:
        words = words.partition(" ")[2]
    if cut_end:
        words = words.rpartition(" ")[0]
    return words, ends_in_tag


def _join(before: str, after: str, width: int) -> str:
    if before[-1:] + after[:1] in _PAIRS:  # the link's own delimiters, `(URL)`, `<URL>`
        before, after = before[:-1].rstrip(), after[1:].lstrip()
    return around(before, after, width)


def reader_window(before: str, after: str, markup: Markup = PLAIN,
                  width: int = CONTEXT_CHARS, *, head_cut: bool = False,
                  tail_cut: bool = False) -> str:
    """The context of a link from the source on either side of it (`before` ends where its
    URL starts, `after` starts where it ends; the URL itself is in neither), as a reader
    sees it, at most `width` characters. `head_cut`/`tail_cut`: a window cut the source
    there. Pure, and linear in the fragments' length (Lines.contexts reads a document's
    links this way, each piece of source between two links read once)."""
    head, in_tag = _read_piece(before, markup, cut_start=head_cut)
    tail, _ = _read_piece(after, markup, in_tag=in_tag, cut_end=tail_cut)
    return _join(head, tail, width)


class _Gap(NamedTuple):  # (a tuple: made once per link, thousands on a line)
    """The source between two consecutive links, as reader text: `head`, what the link
    before reads after it (the source to `head_to`), `tail`, what the link after reads
    before it (from `tail_from`); the same text when the gap is `through` (short, no blank
    line: a context may read on past the next link); and whether it ends inside the next
    link's tag."""

    head: str
    tail: str
    head_to: int
    tail_from: int
    through: bool
    ends_in_tag: bool


def _mid_line(text: str, offset: int) -> bool:
    """A window boundary at `offset` cuts a line (a word, a tag), not between lines."""
    return 0 < offset < len(text) and text[offset - 1] not in "\r\n" and \
        text[offset] not in "\r\n"


def _gap(text: str, a: int, b: int, reach: int, markup: Markup, in_tag: bool) -> _Gap:
    """text[a:b], between two links (or a link and an end of the text), read once (its two
    ends when it is longer than `reach`, each at most `reach`): a paragraph ends at a
    blank line."""
    if b - a <= reach:
        raw = text[a:b]
        if ("\n" not in raw and "\r" not in raw) or not _BLANK_LINE.search(raw):
            words, ends = _read_piece(raw, markup, in_tag=in_tag)
            return _Gap(words, words, b, a, True, ends)
    blank = _BLANK_LINE.search(text, a, min(b, a + reach))
    blanks = [m.end() for m in _BLANK_LINE.finditer(text, max(a, b - reach), b)]
    head_end = blank.start() if blank else min(b, a + reach)
    tail_start = blanks[-1] if blanks else max(a, b - reach)
    head, _ = _read_piece(text[a:head_end], markup, in_tag=in_tag,
                          cut_end=blank is None and _mid_line(text, head_end))
    tail, ends = _read_piece(text[tail_start:b], markup,
                             cut_start=not blanks and _mid_line(text, tail_start))
    return _Gap(head, tail, head_end, tail_start, False, ends)


def pieces_context(pieces: Sequence[str], start: int, end: int,
                   width: int = CONTEXT_CHARS) -> str:
    """The context of a link in a parser's rendered text, a paragraph as `pieces` (text
    nodes): pieces[start:end] are the link's text. Where the link is used, not where its
    URL is written (a Markdown reference definition, a reST named target). Reads at most
    _PIECES pieces either way, each cut to the window (a paragraph of thousands of links
    is read once per link a bounded amount, never whole)."""
    reach = _REACH * width // CONTEXT_CHARS
    before: list[str] = []
    size_before = 0
    for piece in reversed(pieces[max(0, start - _PIECES):start]):
        before.append(piece[-reach:])
        size_before += len(piece)
        if size_before >= reach:
            break
    after: list[str] = []
    size_after = 0
    for piece in pieces[start:end + _PIECES]:
        after.append(piece[:reach])
        size_after += len(piece)
        if size_after >= reach:
            break
    return reader_window("".join(reversed(before)), "".join(after), PLAIN, width,
                         head_cut=size_before >= reach, tail_cut=size_after >= reach)


def anchor_text(raw: str, markup: Markup = PLAIN) -> str:
    """A link's text as a recovery is given it: reader text (so a link whose text is its
    own URL has none), at most ANCHOR_CHARS, cut between words. Only the start of `raw` is
    read (a hostile link of a megabyte of text costs what a long one does)."""
    bound = 8 * ANCHOR_CHARS
    if len(raw) > bound:
        raw = raw[:bound]
        cut_tag = _open_tag_at_end(raw) if markup.tags else -1
        raw = raw[:cut_tag] if cut_tag >= 0 else raw
    return _first_words(reader_text(raw, markup), ANCHOR_CHARS)


class Lines:
    """Offsets of a text's lines (\\r\\n, \\r and \\n each end one line, as parsers count)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def offset(self, line: int) -> int:
        """Offset of the start of 0-based `line` (len(text) past the end)."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def line_of(self, offset: int) -> int:
        """1-based line number of an offset."""
        return bisect.bisect_right(self.starts, offset)

    def context(self, start: int, end: int, markup: Markup = PLAIN,
                width: int = CONTEXT_CHARS) -> str:
        """The context of one link (see contexts)."""
        return self.contexts([(start, end)], markup, width)[0]

    def contexts(self, links: Sequence[tuple[int, int]], markup: Markup = PLAIN,
                 width: int = CONTEXT_CHARS) -> list[str]:
        """The context of each link text[start:end] of `links`: the words around it as a
        reader sees them (Markup's markup, and URLs, removed), within its paragraph (to a
        blank line), at most `width` characters.

        Each piece of source between two links is read once, and a link reads at most
        _REACH characters either side (through the pieces beyond its neighbours when they
        are short): a document of one 5 MB line holds thousands of links, and re-reading
        a window of the line for each made extraction slow, the whole line quadratic."""
        if not links:
            return []
        reach = _REACH * width // CONTEXT_CHARS
        order = sorted(range(len(links)), key=lambda i: links[i])
        gaps: list[_Gap] = []
        cursor, in_tag = 0, False
        for i in [*order, None]:
            stop = len(self.text) if i is None else max(cursor, links[i][0])
            gaps.append(_gap(self.text, cursor, stop, reach, markup, in_tag))
            in_tag = gaps[-1].ends_in_tag
            cursor = cursor if i is None else max(cursor, links[i][1])
        laid = _Laid(gaps)
        found = [""] * len(links)
        for k, i in enumerate(order):
            start, end = links[i]
            found[i] = _join(laid.before(k, start - reach), laid.after(k + 1, end + reach),
                             width)
        return found


class _Laid:
    """A text's gaps laid end to end as one reader text (a `through` gap once, another as
    its head then its tail), so that what a link reads on either side is one slice of it,
    its ends found by bisection: not a walk over the links around it, thousands on a line."""

    def __init__(self, gaps: Sequence[_Gap]) -> None:
        parts: list[str] = []
        self.size = 0
        self.heads: list[tuple[int, int]] = []  # where each gap's head is laid
        self.tails: list[tuple[int, int]] = []
        for gap in gaps:
            self.heads.append(self._lay(parts, gap.head))
            self.tails.append(self.heads[-1] if gap.through else self._lay(parts, gap.tail))
        self.text = "".join(parts)
        self.tail_from = [gap.tail_from for gap in gaps]
        self.head_to = [gap.head_to for gap in gaps]
        # The nearest gap that is not `through`, at or before each (at or after each): a
        # context never reads past it.
        self.wall_before: list[int] = []
        for k, gap in enumerate(gaps):
            self.wall_before.append(k if not gap.through or k == 0 else self.wall_before[-1])
        self.wall_after = [len(gaps) - 1] * len(gaps)
        for k in range(len(gaps) - 2, -1, -1):
            self.wall_after[k] = k if not gaps[k].through else self.wall_after[k + 1]

    def _lay(self, parts: list[str], piece: str) -> tuple[int, int]:
        if not piece:
            return self.size, self.size
        if parts:
            parts.append(" ")
            self.size += 1
        parts.append(piece)
        self.size += len(piece)
        return self.size - len(piece), self.size

    def before(self, k: int, lo: int) -> str:
        """What the link after gap k reads before it, back to the offset `lo`: that gap's
        tail, and the gaps before it while they are `through` (the links between them are
        URLs: not read)."""
        first = max(self.wall_before[k], bisect.bisect_right(self.tail_from, lo) - 1, 0)
        return self.text[self.tails[min(first, k)][0]:self.tails[k][1]].strip()

    def after(self, k: int, hi: int) -> str:
        """What the link before gap k reads after it, on to the offset `hi` (see before)."""
        last = max(k, min(self.wall_after[k], bisect.bisect_left(self.head_to, hi)))
        return self.text[self.heads[k][0]:self.heads[last][1]].strip()


def with_contexts(lines: Lines, spans: Sequence[LinkSpan], markup: Markup) -> list[LinkSpan]:
    """`spans` given their contexts (Lines.contexts); a span that has one already (where
    its link is used, not where its URL is written) keeps it."""
    found = lines.contexts([(span.start, span.end) for span in spans], markup)
    return [span if span.context else replace(span, context=context)
            for span, context in zip(spans, found, strict=True)]


class Ranges:
    """[a, b) ranges (overlapping or not) with a logarithmic "is this offset inside one"
    (a linear scan per link made extraction quadratic on long lines)."""

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        merged: list[tuple[int, int]] = []
        for a, b in sorted(ranges):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def __contains__(self, offset: int) -> bool:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index >= 0 and offset < self.ends[index]
