"""What a format's own parser reads as link targets, and the two uses of that reading:

- `probe`: which of a text's URL occurrences are links, decided by the parser (each candidate
  replaced by a unique address of the same length, the text parsed once, and a candidate is
  a link when its stand-in comes back as a link target) — never by document order;
- `prove`: a rewrite is kept only when the parser reads the new text's link targets as the
  old ones with exactly the replaced links changed to their new addresses; any other outcome
  (the link cut at an escaped character, the wrong occurrence rewritten, a link lost) refuses
  that edit, and a refused edit never reaches the file.

The parsers: markdown-it-py for Markdown, docutils for reStructuredText, html.parser for HTML,
the AsciiDoc reader of tools.fix.asciidoc, and the URL scanner (tools.fix.urls) for text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar
from urllib.parse import quote, unquote

from pagetrail.tools.fix.rewrite import Edit, apply_edits
from pagetrail.tools.fix.spans import Unparsable

# A URL character kept as is in the canonical form (the rest is percent-encoded): the two
# spellings of the same address (`)` and `%29`, `é` and `%C3%A9`) compare equal.
_SAFE = "!#$&'()*+,/:;=?@[]~-._%"
VERSION = "\0version "
PROBE_ROUNDS = 8  # a Robust Link's data-versionurl, as a target (HTML)
T = TypeVar("T")


def canonical(url: str) -> str:
    return quote(unquote(url.strip()), safe=_SAFE)


def link_targets(text: str, fmt: str) -> list[str]:
    """Every link target the format's parser reads in `text` (document order, as parsed)."""
    if fmt == "markdown":
        from pagetrail.tools.fix.markdown import markdown_targets
        return markdown_targets(text)
    if fmt == "rst":
        from pagetrail.tools.fix.rst import rst_targets
        return rst_targets(text)
    if fmt == "html":
        from pagetrail.tools.fix.html import html_targets
        return html_targets(text)
    if fmt == "asciidoc":
        from pagetrail.tools.fix.asciidoc import asciidoc_links
        return [span.url for span in asciidoc_links(text)]
    from pagetrail.tools.fix.urls import scan_urls
    return [found.url for found in scan_urls(text)]


def _normal(fmt: str) -> Callable[[str], str]:
    """How the format's parser spells a target (markdown-it normalizes a destination)."""
    if fmt == "markdown":
        from pagetrail.tools.fix.markdown import normalize_link
        return lambda url: canonical(url if url.startswith(VERSION) else normalize_link(url))
    return canonical


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = digits[number % 36]
    while number >= 36:
        number //= 36
        out = digits[number % 36] + out
    return out


def _stand_in(url: str, number: int, keep_length: bool) -> str | None:
    """A unique address, host `<number>.q…` (a dotted host, as the URL scanner wants). With
    `keep_length` (RST: tables and title underlines are measured) as long as `url`, or None
    when `url` is too short to hold the number."""
    scheme = url[:url.find("://") + 3]
    code = _base36(number) + "."
    if not keep_length:
        return scheme + code + "q"
    room = len(url) - len(scheme)
    if len(code) + 1 > room:
        return None
    return scheme + code + "q" * (room - len(code))


def probe(text: str, spans: Sequence[tuple[int, int, str]],
          targets: Callable[[str], list[str]], *, keep_length: bool = False) -> list[bool]:
    """For each candidate (start, end, url) of `text`: does the parser read it as a link?
    (See probe_read.)"""
    found = probe_read(text, spans, lambda t: dict.fromkeys(targets(t), True),
                       keep_length=keep_length)
    return [reading is not None for reading in found]


def probe_read(text: str, spans: Sequence[tuple[int, int, str]],
               read: Callable[[str], Mapping[str, T]], *, keep_length: bool = False,
               ) -> list[T | None]:
    """For each candidate (start, end, url) of `text`: what the parser says of the link
    it is (`read`: each target of a text → what the parser read of its link, e.g. its
    text), or None when the parser reads no link there. Each candidate has a stand-in of
    its own, so what is said of it is said of this occurrence, not of another with the
    same URL. One parse for all candidates. With `keep_length`, a short URL that cannot
    hold its number waits for another round, numbered among the ones left (at most
    PROBE_ROUNDS; what is left then is not confirmed, so never rewritten)."""
    found: list[T | None] = [None] * len(spans)
    pending = [i for i, (start, end, _) in enumerate(spans) if end > start]
    for _round in range(PROBE_ROUNDS):
        if not pending:
            break
        stand_ins = {i: _stand_in(spans[i][2], number, keep_length)
                     for number, i in enumerate(pending)}
        placed = {i: s for i, s in stand_ins.items() if s is not None}
        if not placed:
            break  # too short for any stand-in: not a URL the parser could vouch for
        reading = read(apply_edits(text, [
            Edit(spans[i][0], spans[i][1], stand_in) for i, stand_in in placed.items()]))
        for i, stand_in in placed.items():
            found[i] = reading.get(stand_in)
        pending = [i for i in pending if i not in placed]
    return found


def _holds(before: Counter[str], text: str, fmt: str, edits: Sequence[Edit]) -> bool:
    norm = _normal(fmt)
    expected = before.copy()
    for edit in edits:
        if edit.old is not None:
            expected[norm(edit.old)] -= 1
        if edit.target is not None:
            expected[norm(edit.target)] += 1
    if any(count < 0 for count in expected.values()):
        return False  # the old address was not a link to begin with
    try:
        after = Counter(norm(t) for t in link_targets(apply_edits(text, edits), fmt))
    except Unparsable:
        return False  # the new text is one the parser gives up on: refused
    return +expected == after


def _in_place(text: str, fmt: str, edits: Sequence[Edit]) -> list[Edit]:
    """The URL-replacing edits whose new text, in the rewritten document, is not read as a
    link where it was written (probe at each new URL's own place): the same link, not just
    the same set of targets."""
    placed: list[tuple[Edit, int, int]] = []
    shift = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        start = edit.start + shift
        shift += len(edit.new) - (edit.end - edit.start)
        if edit.old is not None and "://" in edit.new:
            placed.append((edit, start, start + len(edit.new)))
    if not placed:
        return []
    new_text = apply_edits(text, edits)
    try:
        read = probe(new_text, [(a, b, new_text[a:b]) for _, a, b in placed],
                     lambda t: link_targets(t, fmt), keep_length=fmt == "rst")
    except Unparsable:
        return [edit for edit, _, _ in placed]
    return [edit for (edit, _, _), ok in zip(placed, read, strict=True) if not ok]


def prove(text: str, fmt: str, edits: Sequence[Edit]) -> tuple[str, list[Edit], list[Edit]]:
    """(new text, edits kept, edits refused): the parser reads the rewritten document's
    link targets as the old ones with exactly the kept edits' targets changed, and reads
    each kept edit's new URL as a link where it was written. Edits that fail together are
    split in halves until the failing ones are found (a few parses, not one per edit); if
    the passing ones still fail together, all are refused."""
    if not edits:
        return text, [], []
    norm = _normal(fmt)
    before = Counter(norm(t) for t in link_targets(text, fmt))

    def passing(group: list[Edit]) -> list[Edit]:
        if _holds(before, text, fmt, group):
            return group
        if len(group) == 1:
            return []
        middle = len(group) // 2
        return passing(group[:middle]) + passing(group[middle:])

    def settle(group: list[Edit]) -> list[Edit]:
        kept = passing(group)
        # Edits that each pass alone may still fail together (two underscores that make
        # an emphasis between them): unless the whole group passed at once, check again.
        if kept is not group and kept and not _holds(before, text, fmt, kept):
            return []
        return kept

    kept = settle(sorted(edits, key=lambda e: (e.start, e.end)))
    while kept:
        misplaced = _in_place(text, fmt, kept)
        if not misplaced:
            break
        kept = settle([edit for edit in kept if edit not in misplaced])
    refused = [edit for edit in sorted(edits, key=lambda e: (e.start, e.end))
               if edit not in kept]
    return apply_edits(text, kept), kept, refused
