"""Is a link dead, and does a live link still say the same?

Owns `check_link`/`classify` (verdicts, soft-404 probing per URL shape), the recognition of
bot walls and of redirects that are not moves, the state machine of a link across scans, and
content drift against the capture from when the link was made.
Imports archive/, content/, net/ and the tools/ top level.

Modules: check, drift, hostprobe, linkstate, redirects, walls.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "LinkState": "pagetrail.tools.linkcheck.linkstate",
    "Policy": "pagetrail.tools.linkcheck.linkstate",
    "SiblingProber": "pagetrail.tools.linkcheck.hostprobe",
    "advance": "pagetrail.tools.linkcheck.linkstate",
    "assess": "pagetrail.tools.linkcheck.hostprobe",
    "check_link": "pagetrail.tools.linkcheck.check",
    "detect_drift": "pagetrail.tools.linkcheck.drift",
    "drift_sentence": "pagetrail.tools.linkcheck.drift",
    "earliest_confirmation": "pagetrail.tools.linkcheck.linkstate",
    "judge": "pagetrail.tools.linkcheck.hostprobe",
    "may_need_sibling": "pagetrail.tools.linkcheck.hostprobe",
    "observe_error": "pagetrail.tools.linkcheck.check",
    "since": "pagetrail.tools.linkcheck.linkstate",
    "summary_line": "pagetrail.tools.linkcheck.check",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
