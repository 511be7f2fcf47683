"""Web archives: Mementos (RFC 7089) and Save Page Now.

Owns TimeGate/TimeMap lookups, choosing and fetching the raw capture, and asking the Internet
Archive to capture a live page. Imports content/, net/ and the tools/ top level.

Modules: memento, spn.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "ArchiveEndpoint": "pagetrail.tools.archive.memento",
    "CaptureListings": "pagetrail.tools.archive.memento",
    "CaptureQueue": "pagetrail.tools.archive.spn",
    "SavePageNow": "pagetrail.tools.archive.spn",
    "archived_redirects": "pagetrail.tools.archive.memento",
    "credentials": "pagetrail.tools.archive.spn",
    "fetch_memento": "pagetrail.tools.archive.memento",
    "list_mementos": "pagetrail.tools.archive.memento",
    "parse_timestamp": "pagetrail.tools.archive.memento",
    "say_no_keys_once": "pagetrail.tools.archive.spn",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
