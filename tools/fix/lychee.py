"""lychee's JSON report (`lychee --format json -o report.json`) as a list of failing links.

The report's `error_map` maps each input (a file path or a URL) to its failing links
(`{"url", "status": {"text", "code"}}`, with `span.line` in newer versions). A report
without `error_map` (older lychee wrote `fail_map`) is another version: LycheeReportError.
"""

from __future__ import annotations

import json
from pathlib import Path

from pagetrail.tools.errors import InvalidArgument


class LycheeReportError(InvalidArgument):
    """A file that is not a lychee JSON report this version reads."""

    code = "lychee_report"


def read_lychee(path: str | Path) -> dict[str, list[str]]:
    """input → failing URLs, from a lychee JSON report."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LycheeReportError(f"cannot read the lychee report {path}: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LycheeReportError(f"{path} is not JSON (lychee --format json): {exc}") from None
    if not isinstance(data, dict):
        raise LycheeReportError(f"{path}: a lychee report is a JSON object")
    if "error_map" not in data:
        seen = ", ".join(sorted(k for k in data if k.endswith("_map"))) or "no *_map keys"
        raise LycheeReportError(
            f"{path}: a lychee report of another version ({seen}; this reads the `error_map` "
            f"that current lychee writes)")
    failing: dict[str, list[str]] = {}
    for source, entries in (data["error_map"] or {}).items():
        if not isinstance(entries, list):
            raise LycheeReportError(f"{path}: error_map[{source!r}] is not a list")
        urls = [e["url"] for e in entries if isinstance(e, dict) and isinstance(e.get("url"), str)]
        failing[str(source)] = urls
    return failing
