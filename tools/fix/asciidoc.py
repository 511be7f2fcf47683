"""Links of an AsciiDoc file, with exact spans (there is no maintained AsciiDoc parser for
Python; this tokenizes AsciiDoc's block structure line by line, never the whole text at once).

Delimited listing, literal, passthrough and comment blocks (`----`, `....`, `++++`, `////`,
and fenced ```` ``` ````) and `//` line comments hold no links; in prose, inline monospace
(`` `…` ``) and passthroughs (`+…+`) are skipped; `link:URL[…]`, `URL[…]`, `<URL>` and bare
URLs are links (AsciiDoc ends a URL at `[`). As Asciidoctor does, the URL of `URL[…]` runs to
the `[` and that of `<URL>` to the `>`, trailing `.`, `,`, `;` or `)` kept; only a bare URL
loses its trailing punctuation.

The anchor of `link:URL[text]` and `URL[text]` is its text, read where the URL's scan ended
(to the first unescaped `]` on the line): a trailing `^` (a new window) dropped, and, when the
brackets hold attributes (`[text,window=_blank]`, `["a, b",role=x]`), the first positional
one. `<URL>` and a bare URL have none; nor has `URL[]` (Asciidoctor shows the URL).
"""

from __future__ import annotations

import re

from pagetrail.tools.fix.spans import (
    ANCHOR_CHARS,
    Lines,
    LinkSpan,
    Markup,
    Ranges,
    anchor_text,
)
from pagetrail.tools.fix.urls import (
    ANGLED,
    LABELLED,
    Delimiter,
    Found,
    angle_bracketed,
    scan_urls,
)

_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|/{4,}|`{3,}.*)\s*$")
_LITERAL = re.compile(r"`[^`\n]+`|\+[^+\n]+\+|\+\+\+.+?\+\+\+")
# What a reader does not see of AsciiDoc: the `link:` macro's name, a macro's named
# attributes (`[window=_blank]`, `,role=x`), brackets, formatting marks (bold, monospace,
# highlight, super/subscript, passthrough pluses, italic underscores), escapes, title marks.
# (Mostly a class of characters, not alternatives tried at each one: a line of thousands
# of links is read once.)
ASCIIDOC = Markup(literals=("link:",), syntax=re.compile(
    r"[\[,][ \t]*[\w-]+=(?:\"[^\"\]\n]*\"|[^,\]\n]*)|[\[\]<>`*#^|~\\=_+]+"))
# How far past its `[` a label's `]` is looked for: bounded, so that a line of `URL[`
# never closed is not read again for each of its URLs.
_LABEL_READ = 8 * ANCHOR_CHARS


def _delimiter(text: str, lo: int, begin: int) -> Delimiter | None:
    """`<URL>`, else perhaps `URL[label]` (said by the `[` after it: a URL that does not run
    to one is prose)."""
    return ANGLED if angle_bracketed(text, lo, begin) else LABELLED


def _label(text: str, at: int, end: int) -> str:
    """The raw text of the brackets opening at text[at] (`[`), on a line ending at `end`:
    to the first `]` not escaped, "" when none is near enough."""
    limit = min(end, at + 1 + _LABEL_READ)
    close = text.find("]", at + 1, limit)
    while close > 0 and text[close - 1] == "\\":
        close = text.find("]", close + 1, limit)
    return text[at + 1:close].replace("\\]", "]") if close > 0 else ""


def _link_text(label: str) -> str:
    """A link macro's text from its brackets' raw content (see the module's docstring)."""
    if "=" in label:  # an attribute list: the text is its first positional attribute
        if label.startswith('"'):
            quote = label.find('"', 1)
            label = label[1:quote] if quote > 0 else label[1:]
        else:
            label = label.partition(",")[0]
            if "=" in label:
                return ""  # only named attributes: no text
    return anchor_text(label.rstrip().removesuffix("^"), ASCIIDOC)


def asciidoc_links(text: str) -> list[LinkSpan]:
    lines = Lines(text)
    found_links: list[tuple[Found, int, str, str]] = []  # the URL, its line, form, anchor
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
            anchor = _link_text(_label(text, found.end, start + len(line))) \
                if found.delimiter is LABELLED else ""
            found_links.append((found, number + 1, form, anchor))
    contexts = lines.contexts([(f.start, f.end) for f, *_ in found_links], ASCIIDOC)
    return [LinkSpan(f.start, f.end, f.url, line, form, context, anchor=anchor)
            for (f, line, form, anchor), context in zip(found_links, contexts, strict=True)]
