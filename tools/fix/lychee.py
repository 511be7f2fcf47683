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
    except RecursionError:
        raise LycheeReportError(f"{path}: nested too deep to be a lychee report") from None
    if not isinstance(data, dict):
        raise LycheeReportError(f"{path}: a lychee report is a JSON object")
    if "error_map" not in data:
        seen = ", ".join(sorted(k for k in data if k.endswith("_map"))) or "no *_map keys"
        raise LycheeReportError(
            f"{path}: a lychee report of another version ({seen}; this reads the `error_map` "
            f"that current lychee writes)")
    error_map = data["error_map"]
    if error_map is None:
        return {}
    if not isinstance(error_map, dict):
        raise LycheeReportError(f"{path}: error_map is a {type(error_map).__name__}, not an "
                                "object of inputs to their failing links")
    failing: dict[str, list[str]] = {}
    for source, entries in error_map.items():
        if not isinstance(entries, list):
            raise LycheeReportError(f"{path}: error_map[{source!r}] is not a list")
        urls = []
        for number, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
                raise LycheeReportError(f"{path}: error_map[{source!r}][{number}] is not a "
                                        "failing link (an object with a `url` string)")
            urls.append(entry["url"])
        failing[str(source)] = urls
    return failing


def report_inputs(failing: dict[str, list[str]], base: str | Path = ".",
                  ) -> tuple[list[str], list[tuple[str, str]]]:
    """The report's inputs that are files inside `base` (symbolic links and `..` resolved),
    and each other input with why it is not read: a report is input like any other, and an
    absolute path or one climbing out of the tree must not choose what a fix writes."""
    root = Path(base).resolve()
    inside: list[str] = []
    refused: list[tuple[str, str]] = []
    for source in failing:
        if "://" in source:
            refused.append((source, "a URL, not a file"))
            continue
        if not source or "\0" in source:
            refused.append((source, "not a file path"))
            continue
        candidate = Path(source) if Path(source).is_absolute() else root / source
        try:
            real = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            refused.append((source, "no such file"))
            continue
        if real != root and root not in real.parents:
            refused.append((source, f"outside {root}"))
            continue
        if not real.is_file():
            refused.append((source, "not a file"))
            continue
        inside.append(str(real.relative_to(root)))
    return inside, refused
