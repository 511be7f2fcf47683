"""Content type and charset of a fetched body (pure): the fetch layer's sniffing.

Private to the fetch layer; `tools.net.fetch` is its surface (`sniff_content_type`,
`is_text_type`, `detect_charset`)."""

from __future__ import annotations

import codecs
import re

TEXT_TYPES = ("text/", "application/xhtml", "application/xml", "application/json",
              "application/ld+json", "application/rss", "application/atom", "+xml", "+json")
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


def _valid_codec(name: str | None) -> str | None:
    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def sniff_content_type(header: str | None, body: bytes) -> str:
    """Lower-case mime type from the header; sniffed from the body when missing."""
    mime = (header or "").split(";")[0].strip().lower()
    if mime:
        return mime
    head = body[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return "text/html"
    if head.startswith(b"<?xml"):
        return "application/xml"
    if head.startswith((b"{", b"[")):
        return "application/json"
    return "application/octet-stream"


def is_text_type(mime: str) -> bool:
    return any(marker in mime for marker in TEXT_TYPES)


def detect_charset(content_type_header: str | None, body: bytes, mime: str) -> str | None:
    """The codec of a text body, in the WHATWG order: a BOM, then the header's charset, then
    <meta charset>/http-equiv, then a guess (UTF-8; mostly UTF-8 with a few bad bytes is
    still UTF-8; else charset_normalizer). The one charset decision: `Response.text()` and
    `document.decode_html` (archived captures) both use it, so a page decodes alike both ways.
    """
    if not is_text_type(mime):
        return None
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    for param in (content_type_header or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            found = _valid_codec(value)
            if found:
                return found
    if "html" in mime or "xml" in mime:
        match = _META_CHARSET.search(body[:4096])
        if match:
            found = _valid_codec(match.group(1).decode("ascii", "ignore"))
            if found:
                return found
    if mime == "application/json" or not body:
        return "utf-8"
    sample = body[:65536]
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= 65536 - 4:  # a character cut at the sample's end
            return "utf-8"
    # Mostly UTF-8 with a few bad bytes is far more common than real legacy-encoded text.
    if sample.decode("utf-8", errors="replace").count("\ufffd") <= max(3, len(sample) // 1000):
        return "utf-8"
    from charset_normalizer import from_bytes

    best = from_bytes(sample).best()
    return _valid_codec(best.encoding) if best else "utf-8"
