"""What the extractors return: a link at an exact place in a file's text, and line helpers."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_NEWLINE = re.compile(r"\r\n|\r|\n")
_SPACE = re.compile(r"\s+")


class Unparsable(ValueError):
    """The format's parser gave up on this document (docutils on thousands of nested
    blocks, html.parser on `<![foo[`): no link in it can be vouched for, so none is
    rewritten, and the file is named rather than passed as checked."""


@dataclass(frozen=True)
class LinkSpan:
    """One link: text[start:end] is exactly the URL as written (what a fix replaces).

    `url` is the URL it stands for (entities decoded in HTML); `line` is 1-based; `context`
    the prose around it (the sentence that cites it); `tag_end` (HTML) is where attributes
    may be added to its start tag; `versioned` marks a Robust Link already written."""

    start: int
    end: int
    url: str
    line: int
    form: str  # inline, reference, autolink, bare, href, target
    context: str = ""
    tag_end: int | None = None
    versioned: bool = False


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

    def context(self, start: int, end: int, width: int = 240) -> str:
        """The line(s) around text[start:end], whitespace collapsed, at most `width` chars.

        Only a window of the line(s) is read (the link, and `width` characters either side,
        stretched to whole words): a document of one 5 MB line holds thousands of links, and
        re-reading the whole line for each made extraction quadratic."""
        first = self.starts[self.line_of(start) - 1]
        last_line = self.line_of(end)
        stop = self.starts[last_line] if last_line < len(self.starts) else len(self.text)
        lo, hi = max(first, start - width // 2), min(stop, end + width)
        if lo > first and not self.text[lo - 1].isspace():
            # Never start inside a word the window cut: from the next word on (or the link).
            space = _SPACE.search(self.text, lo, start)
            lo = space.end() if space else start
        return " ".join(self.text[lo:hi].split())[:width]


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
