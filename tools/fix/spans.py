"""What the extractors return: a link at an exact place in a file's text, and line helpers."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_NEWLINE = re.compile(r"\r\n|\r|\n")


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
        """The line(s) around text[start:end], whitespace collapsed, at most `width` chars."""
        first = self.starts[self.line_of(start) - 1]
        last_line = self.line_of(end)
        stop = self.starts[last_line] if last_line < len(self.starts) else len(self.text)
        return " ".join(self.text[first:stop].split())[:width]
