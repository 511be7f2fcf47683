"""Repair links where they live: documents (Markdown, reStructuredText, HTML, AsciiDoc, plain
text) and the text an assistant writes.

Modules: urls (the URL scanner), spans, markdown, rst, html, asciidoc, extract (per format),
dates (git blame), files (which files, read safely), rewrite (edits, diff, atomic write),
run (`fix_paths`: the whole fix), text (`check_links_in_text`), report (json, SARIF, JUnit,
GitHub annotations). Sits above the facade (tools.api): it recovers through the public
primitives and the recovery jobs, never the pipeline's internals.
"""
