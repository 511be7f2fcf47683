"""Which extractor reads a file (by extension), and the plain-text one."""

from __future__ import annotations

from pathlib import PurePath

from pagetrail.tools.fix.spans import Lines, LinkSpan
from pagetrail.tools.fix.urls import scan_urls

FORMATS: dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown",
    ".mdx": "markdown",
    ".rst": "rst", ".rest": "rst",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".adoc": "asciidoc", ".asciidoc": "asciidoc", ".asc": "asciidoc",
    ".txt": "text", ".text": "text",
}


def format_of(path: str | PurePath) -> str | None:
    """The format a file is read as, from its extension (None: not a document)."""
    return FORMATS.get(PurePath(path).suffix.lower())


def text_links(text: str) -> list[LinkSpan]:
    lines = Lines(text)
    found = scan_urls(text)
    contexts = lines.contexts([(f.start, f.end) for f in found])
    return [LinkSpan(f.start, f.end, f.url, lines.line_of(f.start), "bare", context)
            for f, context in zip(found, contexts, strict=True)]


def extract_links(text: str, fmt: str) -> list[LinkSpan]:
    """Every repairable link of a document in `fmt` (see FORMATS), in order."""
    if fmt == "markdown":
        from pagetrail.tools.fix.markdown import markdown_links
        return markdown_links(text)
    if fmt == "rst":
        from pagetrail.tools.fix.rst import rst_links
        return rst_links(text)
    if fmt == "html":
        from pagetrail.tools.fix.html import html_links
        return html_links(text)
    if fmt == "asciidoc":
        from pagetrail.tools.fix.asciidoc import asciidoc_links
        return asciidoc_links(text)
    return text_links(text)
