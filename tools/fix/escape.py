"""A new address written so that the document's format reads it back as the same URL.

Each format ends a URL at different characters: Markdown's inline destination at an unescaped
`)` or a space, its autolink at `>`, AsciiDoc's macro at `[`, an RST embedded URI at `>` (and
a trailing `_` makes it a named reference), prose at whitespace, quotes, brackets and trailing
punctuation. Where the format has an escape that keeps the URL exact (a backslash in a
Markdown destination, an entity in HTML) it is used; elsewhere the character is
percent-encoded — for unreserved characters (`.`, `_`, `~`, `-`) RFC 3986 makes the two
equivalent, and the others are characters a browser sends encoded anyway. Whatever the
escape, the rewrite is then proven by re-parsing (tools.fix.proof) before it is written.
"""

from __future__ import annotations

from pagetrail.tools.fix.html import attribute_value

# Characters no format lets through unencoded (controls, DEL, whitespace).
_ALWAYS = frozenset(chr(c) for c in range(0x21)) | {"\x7f"}
# What ends or breaks a URL in running text (tools.fix.urls stops at these).
_PROSE = frozenset("<>\"'`{}|\\^")
_TRAILING = ".,;:!?*_~"
_MARKDOWN_PROSE = _PROSE | frozenset("[]()*")
_ASCIIDOC = _PROSE | frozenset("[]")
_RST_EMBEDDED = frozenset("<>`\\")


def _percent(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


def _encode(url: str, chars: frozenset[str]) -> str:
    return "".join(_percent(c) if c in chars or c in _ALWAYS else c for c in url)


def _guard_end(url: str) -> str:
    """A URL in prose whose last character a reader would drop (sentence punctuation, a
    closing bracket without its opening one) ends with that character encoded instead."""
    if url and (url[-1] in _TRAILING or (url[-1] == ")" and url.count(")") > url.count("("))
                or (url[-1] == "]" and url.count("]") > url.count("["))):
        return url[:-1] + _percent(url[-1])
    return url


def _balanced(url: str) -> str:
    """Encode every bracket of a URL whose brackets do not pair up (a prose reader keeps only
    balanced ones)."""
    if url.count("(") != url.count(")") or url.count("[") != url.count("]"):
        return _encode(url, frozenset("()[]"))
    return url


def _markdown_destination(url: str) -> str:
    """An inline link's or a reference definition's destination: backslash escapes keep the
    URL exact; a space or angle bracket cannot be written bare, so it is encoded."""
    out = []
    for char in _encode(url, frozenset("<>")):
        out.append("\\" + char if char in "()\\" else char)
    return "".join(out)


def escaped(url: str, fmt: str, form: str) -> str:
    """`url` as written in a document of `fmt` at a link of `form` (see LinkSpan.form)."""
    if fmt == "html" or form == "href":
        return attribute_value(_encode(url, frozenset()))
    if fmt == "markdown":
        if form in ("inline", "reference"):
            return _markdown_destination(url)
        if form == "autolink":
            return _encode(url, frozenset("<>"))
        return _guard_end(_encode(url, _MARKDOWN_PROSE))
    if fmt == "asciidoc":
        return _guard_end(_balanced(_encode(url, _ASCIIDOC)))
    if fmt == "rst":
        if form == "inline":
            encoded = _encode(url, _RST_EMBEDDED)
            return encoded[:-1] + _percent("_") if encoded.endswith("_") else encoded
        return _guard_end(_balanced(_encode(url, _PROSE | frozenset("*[]"))))
    return _guard_end(_balanced(_encode(url, _PROSE)))
