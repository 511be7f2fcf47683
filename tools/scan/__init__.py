"""Watched sites over time: scans, drift watch, digests.

Owns the site crawler and link checker, scanning one page, which live links to compare for
drift, the link-rot digest and its trend chart. Imports recovery/ and the stages below it.

Modules: digest, digest_delivery, driftwatch, page, scanner, trend.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "ChannelDigest": "pagetrail.tools.scan.digest",
    "DigestLink": "pagetrail.tools.scan.digest",
    "DigestPoster": "pagetrail.tools.scan.digest_delivery",
    "DigestRecovery": "pagetrail.tools.scan.digest",
    "LinkStatus": "pagetrail.tools.scan.page",
    "MAX_PROBLEMS": "pagetrail.tools.scan.scanner",
    "PageDone": "pagetrail.tools.scan.scanner",
    "PageProblem": "pagetrail.tools.scan.scanner",
    "PageScan": "pagetrail.tools.scan.page",
    "PostOutcome": "pagetrail.tools.scan.digest_delivery",
    "ProgressFn": "pagetrail.tools.scan.scanner",
    "RobotsRules": "pagetrail.tools.scan.scanner",
    "ScanDigest": "pagetrail.tools.scan.digest",
    "ScanOptions": "pagetrail.tools.scan.scanner",
    "Scanner": "pagetrail.tools.scan.scanner",
    "Trend": "pagetrail.tools.scan.trend",
    "build_digest": "pagetrail.tools.scan.digest",
    "complete": "pagetrail.tools.scan.scanner",
    "is_same_site": "pagetrail.tools.scan.scanner",
    "period_of": "pagetrail.tools.scan.digest",
    "post_due_digests": "pagetrail.tools.scan.digest_delivery",
    "recover_confirmed": "pagetrail.tools.scan.digest",
    "recovery_plan": "pagetrail.tools.scan.digest",
    "render_chart": "pagetrail.tools.scan.trend",
    "resolve_target": "pagetrail.tools.scan.scanner",
    "run_digests": "pagetrail.tools.scan.digest",
    "scan": "pagetrail.tools.scan.scanner",
    "scan_page": "pagetrail.tools.scan.page",
    "stored_trend": "pagetrail.tools.scan.trend",
    "summarize": "pagetrail.tools.scan.scanner",
    "to_html": "pagetrail.tools.scan.digest",
    "to_json": "pagetrail.tools.scan.digest",
    "to_markdown": "pagetrail.tools.scan.digest",
    "utc_now": "pagetrail.tools.scan.scanner",
    "write_records": "pagetrail.tools.scan.scanner",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
