"""A careful URL scanner for running text (plain text, and inside blocks a parser located).

`scan_urls(text, start, end)` finds absolute http(s) URLs the way a reader sees them: it stops
at whitespace, quotes and angle brackets, keeps balanced parentheses and brackets (Wikipedia
style `…/Foo_(bar)`), and drops trailing sentence punctuation. It is applied to a span a
format's parser marked as prose, never to a whole structured document.

Where a format's syntax delimits the URL (`<…>`, Markdown's `](…)`, a reference definition or
hyperlink target to the end of its line, AsciiDoc's `…[label]`), the delimiter ends it, not
prose's trimming: a URL that really ends in `.`, `,`, `;` or `)` keeps it. The format's
extractor says so with `delimited`, a function of the few characters before the URL (see
`Delimiter`, `angle_bracketed`, `line_target`); when the expected delimiter does not follow,
the URL is read as prose after all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

SCHEMES = ("https://", "http://")
# One search finds the next of either scheme: two `str.find`s each scanned to the end when a
# scheme was absent, quadratic on a long line.
_SCHEME = re.compile(r"https?://", re.I)
# Characters that end a URL in prose (RFC 3986 excludes them; Markdown and AsciiDoc use them
# as delimiters; no URL holds a control character).
_STOP = frozenset(" \t\r\n\f\v<>\"'`{}|\\^") | frozenset(map(chr, range(0x20))) | {"\x7f"}
_TRAILING = ".,;:!?*_~"
_PAIRS = {")": "(", "]": "["}
WHITESPACE = frozenset(" \t\r\n\f\v")
# How far back a delimiter's opening is looked for: a target's marker (`.. _name:`, a
# Markdown label) is short, and a bounded look keeps a 5 MB line of links linear.
LOOKBACK = 1024
# Hosts of web archives whose URLs are captures, not links to repair.
ARCHIVE_HOSTS = frozenset({
    "web.archive.org", "wayback.archive.org", "archive.org", "archive.today", "archive.ph",
    "archive.is", "archive.li", "archive.vn", "archive.md", "webcitation.org",
    "www.webcitation.org", "arquivo.pt", "webarchive.org.uk", "www.webarchive.org.uk",
    "perma.cc", "webarchive.loc.gov", "wayback.archive-it.org",
})


@dataclass(frozen=True)
class Delimiter:
    """How a format's syntax ends a URL, instead of prose's trimming: at a character of
    `closers`, or (`at_end`) at the end of the scanned range, the whole run kept. With
    `balanced`, parentheses must pair and an unmatched `)` ends the run (a CommonMark
    destination); otherwise brackets are ordinary characters (`<https://x/a)>`)."""

    closers: frozenset[str]
    balanced: bool = False
    at_end: bool = False


# `<URL>`: a Markdown autolink or angle-bracketed destination, an RST embedded URI, AsciiDoc.
ANGLED = Delimiter(frozenset(">"))
# AsciiDoc's `link:URL[label]` and `URL[label]`: the URL runs to the `[`.
LABELLED = Delimiter(frozenset("["))
# A line's target (RST `.. _name: URL`, `__ URL`): the URL runs to whitespace or the end.
LINE_TARGET = Delimiter(WHITESPACE, at_end=True)

# (text, start of the scanned range, start of a URL) → the delimiter the format's syntax
# puts around that URL, or None for prose.
Delimits = Callable[[str, int, int], Delimiter | None]


def angle_bracketed(text: str, lo: int, begin: int) -> bool:
    """The URL at `begin` follows a `<` (within the range starting at `lo`)."""
    return begin > lo and text[begin - 1] == "<"


def _line_start(text: str, floor: int, lo: int, end: int) -> int | None:
    """Start of the line holding text[end - 1] (or `end`), looking back to `floor` only: None
    when the line starts before it (`lo`, the scanned range's start, is a line start)."""
    newline = max(text.rfind("\n", floor, end), text.rfind("\r", floor, end))
    if newline >= 0:
        return newline + 1
    return lo if floor <= lo else None


def line_prefix(text: str, lo: int, begin: int) -> str | None:
    """The text before `begin` on its line, from the line before when only indentation
    precedes it (a target written on the next line), or None when that start is more than
    LOOKBACK characters back."""
    floor = max(lo, begin - LOOKBACK)
    start = _line_start(text, floor, lo, begin)
    if start is None:
        return None
    if start > lo and not text[start:begin].strip():
        # The line break before `start` is one or two characters (\r\n); the line before it
        # starts at or after `floor`, or is too far back to say.
        previous_end = start - 2 if text[start - 2:start] == "\r\n" else start - 1
        previous = _line_start(text, floor, lo, previous_end)
        if previous is None:
            return None
        start = previous
    return text[start:begin]


def line_target(text: str, lo: int, begin: int, marker: re.Pattern[str]) -> bool:
    """The URL at `begin` is its line's target: `marker` matches all the text before it on
    its line (see line_prefix)."""
    prefix = line_prefix(text, lo, begin)
    return prefix is not None and marker.fullmatch(prefix) is not None


@dataclass(frozen=True)
class Found:
    """An absolute URL at text[start:end]; `delimiter` is the format's syntax that ended it
    (None: prose, trimmed)."""

    start: int
    end: int
    url: str
    delimiter: Delimiter | None = None


def _trim(url: str) -> str:
    """Drop trailing punctuation and closing brackets that have no opening one."""
    counts = {c: url.count(c) for c in "()[]"}  # kept up to date: linear, not quadratic
    end = len(url)
    while end:
        last = url[end - 1]
        if last in _TRAILING or (last in _PAIRS and counts[last] > counts[_PAIRS[last]]):
            end -= 1
            if last in counts:
                counts[last] -= 1
        else:
            break
    return url[:end]


def _ok(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return (bool(parts.hostname) and "." in (parts.hostname or "")) or (
        parts.hostname in ("localhost",))


def _prose_run(text: str, begin: int, end: int, stops: frozenset[str]) -> str:
    """The URL at `begin` as prose reads it: to a stop or a closing bracket opened before it,
    trailing punctuation dropped."""
    j = begin
    depth = {"(": 0, "[": 0}
    while j < end and text[j] not in stops:
        char = text[j]
        if char in depth:
            depth[char] += 1
        elif char in _PAIRS:
            if depth[_PAIRS[char]] == 0:
                break  # closes a bracket opened before the URL (Markdown's `[url](…)`)
            depth[_PAIRS[char]] -= 1
        j += 1
    return _trim(text[begin:j])


def _delimited_run(text: str, begin: int, end: int, stops: frozenset[str],
                   delimiter: Delimiter) -> tuple[int, bool]:
    """(where the run from `begin` ends, whether `delimiter` closes it there)."""
    j = begin
    depth = 0
    while j < end and text[j] not in stops:
        if delimiter.balanced and text[j] in "()":
            if text[j] == ")" and depth == 0:
                break
            depth += 1 if text[j] == "(" else -1
        j += 1
    if delimiter.balanced and depth:
        return j, False  # a destination's parentheses must pair
    return j, (text[j] in delimiter.closers) if j < end else delimiter.at_end


def scan_urls(text: str, start: int = 0, end: int | None = None, *,
              stop: str = "", delimited: Delimits | None = None) -> list[Found]:
    """Every absolute http(s) URL in text[start:end], in order. `stop` adds delimiters (e.g.
    "[" for AsciiDoc's `https://x[label]`); `delimited` says which URLs the format's syntax
    delimits (see Delimiter)."""
    end = len(text) if end is None else end
    stops = _STOP | frozenset(stop)
    found: list[Found] = []
    # A delimited run that was not closed reached `unclosed`: a URL starting inside it would
    # scan the same characters again, and again for the next (quadratic on a long line of
    # `https://a.example/)` repeated, none before a `[`), so it is read as prose.
    unclosed = start
    i = start
    while i < end:
        hit = _SCHEME.search(text, i, end)
        if hit is None:
            break
        begin = hit.start()
        if begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "+-."):
            i = begin + 4  # part of a word ("xhttp://", "git+https://"): not a link
            continue
        delimiter = delimited(text, start, begin) if delimited and begin >= unclosed else None
        url = ""
        if delimiter is not None:
            j, closed = _delimited_run(text, begin, end, stops, delimiter)
            if closed:
                url = text[begin:j]
            else:
                delimiter, unclosed = None, j
        if delimiter is None:
            url = _prose_run(text, begin, end, stops)
        if _ok(url):
            found.append(Found(begin, begin + len(url), url, delimiter))
        i = max(begin + len(url), begin + 1)
    return found


def is_archive_url(url: str, archive_prefixes: tuple[str, ...] = ()) -> bool:
    """A capture in a web archive (a known archive host or a configured TimeMap prefix)."""
    if any(prefix and url.startswith(prefix.rstrip("/") + "/") for prefix in archive_prefixes):
        return True
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host in ARCHIVE_HOSTS
