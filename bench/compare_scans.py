"""Compare what two benchmark scans stored (databases kept with `scan_vs_lychee.py --keep-db`).

Used to show that a change of the scanner leaves its outputs alone: every check (URL,
verdict, status, final URL, evidence), every link state, every crawled page and every edge
(in each page's order) must be equal, evidence as stored (key order included). What differs
between any two runs is normalised away: the server's port, ids, the random URL of each
soft-404 sibling probe, and times (only their stored form is compared: digits masked).

Usage: python bench/compare_scans.py BEFORE.db AFTER.db   (exit 1 when they differ)
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from typing import Any

_ORIGIN = re.compile(r"http://127\.0\.0\.1:\d+")
_DIGIT = re.compile(r"\d")


def _site(text: Any) -> Any:
    """`text` with the server's origin (whose port changes every run) made constant."""
    return _ORIGIN.sub("http://SITE", text) if isinstance(text, str) else text


def _form(stored: Any) -> Any:
    """A stored time's form (its text with digits masked: format, precision, zone)."""
    return _DIGIT.sub("9", stored) if isinstance(stored, str) else stored


def _evidence(raw: str) -> str:
    evidence = json.loads(_site(raw) or "{}")
    sibling = evidence.get("sibling")
    if isinstance(sibling, dict):  # the probe's URL is random; its answer is not
        for key in ("url", "final_url"):
            if key in sibling:
                sibling[key] = "<random sibling>"
    return json.dumps(evidence)


def checks(db: sqlite3.Connection) -> dict[str, tuple[Any, ...]]:
    rows = db.execute("SELECT url, verdict, status, final_url, evidence, checked_at, scan_id"
                      " IS NULL FROM link_checks")
    return {_site(url): (verdict, status, _site(final), _evidence(evidence), _form(at), no_scan)
            for url, verdict, status, final, evidence, at, no_scan in rows}


def states(db: sqlite3.Connection) -> dict[str, tuple[Any, ...]]:
    rows = db.execute("SELECT url, state, counted, history, first_failed_at, last_checked_at,"
                      " last_verdict, confirmed_at, changed_at FROM link_states")
    return {_site(url): (state, [_form(t) for t in json.loads(counted)], history, _form(failed),
                         _form(checked), verdict, _form(confirmed), _form(changed))
            for url, state, counted, history, failed, checked, verdict, confirmed, changed
            in rows}


def pages(db: sqlite3.Connection) -> dict[str, tuple[Any, ...]]:
    return {_site(url): (depth, done)
            for url, depth, done in db.execute("SELECT url, depth, done FROM scan_pages")}


def edges(db: sqlite3.Connection) -> dict[str, list[tuple[str, ...]]]:
    found: dict[str, list[tuple[str, ...]]] = {}
    for page, target, anchor, context, seen in db.execute(
            "SELECT page_url, target_url, anchor, context, seen_at FROM link_edges ORDER BY id"):
        found.setdefault(_site(page), []).append((_site(target), anchor, context, _form(seen)))
    return found


def differences(name: str, before: dict[str, Any], after: dict[str, Any]) -> int:
    keys = set(before) | set(after)
    differing = sorted(k for k in keys if before.get(k) != after.get(k))
    print(f"{name:<12} {len(before):6d} / {len(after):6d} rows, {len(differing)} differ")
    for key in differing[:5]:
        print(f"  {key}\n    before: {before.get(key)}\n    after:  {after.get(key)}")
    return len(differing)


def main() -> int:
    before, after = (sqlite3.connect(path) for path in sys.argv[1:3])
    total = sum(differences(name, read(before), read(after))
                for name, read in (("checks", checks), ("states", states),
                                   ("pages", pages), ("edges", edges)))
    print("identical" if total == 0 else f"{total} differences")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
