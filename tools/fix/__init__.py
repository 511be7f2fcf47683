"""Repair links where they live: documents (Markdown, reStructuredText, HTML, AsciiDoc, plain
text) and the text an assistant writes.

Owns finding links in files with their exact spans (one extractor per format: markdown, rst,
html, asciidoc, and the URL scanner in urls), when each was written (dates: git blame), which
files a fix reads and how they are read safely, confined to the named paths (files), the new
address escaped per format (escape), the parser's word on which occurrences are links and on
each rewrite before it is written (proof), the edits, diff and atomic write (rewrite), the
whole run (`fix_paths`), the text check (`check_links_in_text`), lychee's reports (lychee) and
the report formats (report: text, JSON, SARIF, JUnit, GitHub); a repository's configuration of
it (config: pagetrail.toml, ignore files, flags over both) and the inline comments that accept
one link (markers).
Sits above the facade (tools.api): it recovers through the recovery and check jobs
(tools.workers) and the public primitives, never the pipeline's internals.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

_EXPORTS: dict[str, str] = {
    "FORMATS": "pagetrail.tools.fix.extract",
    "FixConfig": "pagetrail.tools.fix.config",
    "Rules": "pagetrail.tools.fix.config",
    "load_fix_config": "pagetrail.tools.fix.config",
    "marked_links": "pagetrail.tools.fix.markers",
    "FixReport": "pagetrail.tools.fix.run",
    "LinkSpan": "pagetrail.tools.fix.spans",
    "LinkVerdict": "pagetrail.tools.fix.run",
    "LycheeReportError": "pagetrail.tools.fix.lychee",
    "Options": "pagetrail.tools.fix.run",
    "TextCheck": "pagetrail.tools.fix.text",
    "TextLink": "pagetrail.tools.fix.text",
    "check_links_in_text": "pagetrail.tools.fix.text",
    "extract_links": "pagetrail.tools.fix.extract",
    "fix_paths": "pagetrail.tools.fix.run",
    "format_of": "pagetrail.tools.fix.extract",
    "read_lychee": "pagetrail.tools.fix.lychee",
    "render": "pagetrail.tools.fix.report",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
