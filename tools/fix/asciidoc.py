"""Links of an AsciiDoc file, with exact spans (there is no maintained AsciiDoc parser for
Python; this tokenizes AsciiDoc's block structure line by line, never the whole text at once).

Delimited listing, literal, passthrough and comment blocks (`----`, `....`, `++++`, `////`,
and fenced ```` ``` ````) and `//` line comments hold no links; in prose, inline monospace
(`` `…` ``) and passthroughs (`+…+`) are skipped; `link:URL[…]`, `URL[…]`, `<URL>` and bare
URLs are links (AsciiDoc ends a URL at `[`). As Asciidoctor does, the URL of `URL[…]` runs to
the `[` and that of `<URL>` to the `>`, trailing `.`, `,`, `;` or `)` kept; only a bare URL
loses its trailing punctuation.
"""

from __future__ import annotations

import re

from pagetrail.tools.fix.spans import Lines, LinkSpan, Ranges
from pagetrail.tools.fix.urls import ANGLED, LABELLED, Delimiter, angle_bracketed, scan_urls

_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|/{4,}|`{3,}.*)\s*$")
_LITERAL = re.compile(r"`[^`\n]+`|\+[^+\n]+\+|\+\+\+.+?\+\+\+")


def _delimiter(text: str, lo: int, begin: int) -> Delimiter | None:
    """`<URL>`, else perhaps `URL[label]` (said by the `[` after it: a URL that does not run
    to one is prose)."""
    return ANGLED if angle_bracketed(text, lo, begin) else LABELLED


def asciidoc_links(text: str) -> list[LinkSpan]:
    lines = Lines(text)
    spans: list[LinkSpan] = []
    closing: str | None = None
    for number in range(len(lines.starts)):
        start, end = lines.offset(number), lines.offset(number + 1)
        line = text[start:end].rstrip("\r\n")
        delimiter = _DELIMITER.match(line)
        if closing is not None:
            if line.strip() == closing:
                closing = None
            continue
        if delimiter:
            closing = "```" if line.startswith("```") else line.strip()
            continue
        if line.lstrip().startswith("//"):
            continue
        literals = Ranges([(start + a, start + b) for a, b in
                           (m.span() for m in _LITERAL.finditer(line))])
        for found in scan_urls(text, start, start + len(line), stop="[]",
                               delimited=_delimiter):
            if found.start in literals:
                continue
            form = "inline" if text[found.start - 5:found.start] == "link:" else "bare"
            spans.append(LinkSpan(found.start, found.end, found.url, number + 1, form,
                                  lines.context(found.start, found.end)))
    return spans
