"""A careful URL scanner for running text (plain text, and inside blocks a parser located).

`scan_urls(text, start, end)` finds absolute http(s) URLs the way a reader sees them: it stops
at whitespace, quotes and angle brackets, keeps balanced parentheses and brackets (Wikipedia
style `…/Foo_(bar)`), and drops trailing sentence punctuation. It is applied to a span a
format's parser marked as prose, never to a whole structured document.
"""

from __future__ import annotations

import re
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
# Hosts of web archives whose URLs are captures, not links to repair.
ARCHIVE_HOSTS = frozenset({
    "web.archive.org", "wayback.archive.org", "archive.org", "archive.today", "archive.ph",
    "archive.is", "archive.li", "archive.vn", "archive.md", "webcitation.org",
    "www.webcitation.org", "arquivo.pt", "webarchive.org.uk", "www.webarchive.org.uk",
    "perma.cc", "webarchive.loc.gov", "wayback.archive-it.org",
})


@dataclass(frozen=True)
class Found:
    """An absolute URL at text[start:end]."""

    start: int
    end: int
    url: str


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


def scan_urls(text: str, start: int = 0, end: int | None = None, *,
              stop: str = "") -> list[Found]:
    """Every absolute http(s) URL in text[start:end], in order. `stop` adds delimiters (e.g.
    "[" for AsciiDoc's `https://x[label]`)."""
    end = len(text) if end is None else end
    stops = _STOP | frozenset(stop)
    found: list[Found] = []
    i = start
    while i < end:
        hit = _SCHEME.search(text, i, end)
        if hit is None:
            break
        begin = hit.start()
        if begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "+-."):
            i = begin + 4  # part of a word ("xhttp://", "git+https://"): not a link
            continue
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
        url = _trim(text[begin:j])
        if _ok(url):
            found.append(Found(begin, begin + len(url), url))
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
