"""Where a recovery's HTTP requests and seconds go (pure functions, no I/O).

`recording.RecordingFetcher` notes every fetch a recovery makes as a `FetchRecord`: the URL
asked for, how many HTTP requests it took (retries and redirect hops included: the same count
as `Fetcher.requests`), its wall-clock seconds, and who asked — the nearest calling pagetrail
module outside the fetch layer (`client`, e.g. ``engines.site:_get``) and the nearest frame of
the recovery stages (`stage`, e.g. ``recovery.pipeline:_fetch_candidates``).

`purpose_of` names what a fetch was for, from the client and the URL only (so the names do
not change when the recovery stages are reorganised; `stage` keeps the finer detail):

- ``check``: the dead URL itself (the link check, its redirects, soft-404 probes of it);
  ``check: host probe``: the checker's probes of the dead host;
- ``archive: TimeMap`` / ``archive: CDX index`` / ``archive: memento fetch`` /
  ``archive: TimeGate``: requests to a configured archive (by its path shape);
- ``search: <engine>``: a search engine's own requests (``search: cdx`` is the archive's
  listing of a host, asked by the cdx engine);
- ``site map: robots/sitemaps`` and ``site map: pages``: the site engine reading a site's
  robots.txt, sitemaps and root/listing pages;
- ``social``: the social-bookmark (HN) API; ``drift check``: an alive link's drift test;
- ``linking page``: the page that held the link;
- ``candidate check``: the link checker on any other URL (verifying a candidate);
- ``page fetch``: any other page read by the recovery (candidates' texts, host roots,
  alias probes — `stage` says which);
- ``unattributed``: requests the fetcher counted that no record explains (should be 0: a
  non-zero figure means the recording missed a path and the breakdown is incomplete).

Seconds are per fetch and overlap when a recovery fetches concurrently: a purpose's seconds
are the time spent waiting on it, and the purposes' seconds may add up to more than the
recovery's wall-clock time.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pagetrail.tools.net.urls import normalize_url

UNATTRIBUTED = "unattributed"
# A capture's address: …/<timestamp><optional mode like id_>/<original URL>.
_MEMENTO_PATH = re.compile(r"/\d{4,14}(?:[a-z]{2}_)?/https?:", re.I)


@dataclass
class FetchRecord:
    """One fetch (a `Fetcher.get`/`head`/`post_form` call) of a recovery."""

    method: str
    url: str
    client: str = ""
    stage: str = ""
    requests: int = 0
    seconds: float = 0.0


def _host_port(url: str) -> str:
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return ""
    return f"{host}:{port}" if host else ""


def endpoint_keys(urls: Iterable[str | None]) -> frozenset[str]:
    """host:port of each configured endpoint URL (archives, search, social)."""
    return frozenset(key for key in (_host_port(u) for u in urls if u) if key)


def _same(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    try:
        return normalize_url(a) == normalize_url(b)
    except ValueError:
        return a == b


def purpose_of(record: FetchRecord, *, case_url: str, source_url: str | None = None,
               archives: frozenset[str] = frozenset(),
               social: frozenset[str] = frozenset()) -> str:
    """What one fetch was for (see the module docstring). `archives`/`social`: host:port keys
    of the configured archive and social-API endpoints (`endpoint_keys`)."""
    client = record.client
    path = urlsplit(record.url).path.lower()
    if client.startswith("engines."):
        engine = client.split(":", 1)[0].split(".", 1)[1]
        if engine == "site":
            mapped = path.endswith("robots.txt") or "sitemap" in path or path.endswith(".xml")
            return "site map: robots/sitemaps" if mapped else "site map: pages"
        return f"search: {engine}"
    key = _host_port(record.url)
    if key in archives:
        if "/timemap/" in path:
            return "archive: TimeMap"
        if path.endswith("/cdx") or "/cdx/" in path:
            return "archive: CDX index"
        if _MEMENTO_PATH.search(record.url):
            return "archive: memento fetch"
        return "archive: TimeGate"
    if key in social or client.startswith("evidence.tags"):
        return "social"
    if client.startswith("linkcheck.drift"):
        return "drift check"
    if client.startswith("linkcheck.hostprobe"):
        return "check: host probe"
    if _same(record.url, case_url):
        return "check"
    if _same(record.url, source_url):
        return "linking page"
    if client.startswith("linkcheck."):
        return "candidate check"
    return "page fetch"


def _add(table: dict[str, dict[str, float]], key: str, requests: int, seconds: float) -> None:
    row = table.setdefault(key, {"requests": 0, "seconds": 0.0})
    row["requests"] += requests
    row["seconds"] = round(row["seconds"] + seconds, 3)


def breakdown(records: Sequence[FetchRecord], *, total_requests: int, case_url: str,
              source_url: str | None = None, archives: frozenset[str] = frozenset(),
              social: frozenset[str] = frozenset()
              ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """(by purpose, by stage) of one recovery: {name: {"requests", "seconds"}}. Requests the
    fetcher counted (`total_requests`) beyond the records' go to ``unattributed``."""
    purposes: dict[str, dict[str, float]] = {}
    stages: dict[str, dict[str, float]] = {}
    for record in records:
        purpose = purpose_of(record, case_url=case_url, source_url=source_url,
                             archives=archives, social=social)
        _add(purposes, purpose, record.requests, record.seconds)
        _add(stages, record.stage or record.client or "?", record.requests, record.seconds)
    missing = total_requests - sum(r.requests for r in records)
    if missing > 0:
        _add(purposes, UNATTRIBUTED, missing, 0.0)
        _add(stages, UNATTRIBUTED, missing, 0.0)
    return purposes, stages


# --- over many recoveries ------------------------------------------------------------------


def _table(rows: Sequence[Mapping[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Per name: total requests and seconds, mean and median per recovery (a recovery that
    made none counts 0), and the share of all requests."""
    n = len(rows)
    names = sorted({name for row in rows for name in row})
    grand = sum(float(row[name]["requests"]) for row in rows for name in row) or 1.0
    out: dict[str, dict[str, float]] = {}
    for name in names:
        requests = [float(row[name]["requests"]) if name in row else 0.0 for row in rows]
        seconds = [float(row[name]["seconds"]) if name in row else 0.0 for row in rows]
        out[name] = {
            "requests": int(sum(requests)),
            "requests_mean": round(sum(requests) / n, 3),
            "requests_median": statistics.median(requests),
            "share": round(sum(requests) / grand, 4),
            "seconds": round(sum(seconds), 3),
            "seconds_mean": round(sum(seconds) / n, 4),
        }
    return dict(sorted(out.items(), key=lambda item: (-item[1]["requests"], item[0])))


def cost_breakdown(results: Sequence[Any],
                   cases: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The report's ``cost_breakdown`` over recoveries (`CaseResult`s carrying `purposes` and
    `stages`): by purpose, by stage, and by purpose within each case category. Recoveries
    without a breakdown (a result read from an older report) are left out and counted."""
    recorded = [r for r in results if getattr(r, "purposes", None)]
    category = {str(c["id"]): str(c.get("category") or "?") for c in cases}
    by_category: dict[str, dict[str, dict[str, float]]] = {}
    for name in dict.fromkeys(category.get(r.id, "?") for r in recorded):
        rows = [r.purposes for r in recorded if category.get(r.id, "?") == name]
        by_category[name] = {"recoveries": len(rows), **{  # type: ignore[dict-item]
            purpose: row["requests_mean"] for purpose, row in _table(rows).items()}}
    return {
        "recoveries": len(recorded),
        "without_breakdown": len(results) - len(recorded),
        "by_purpose": _table([r.purposes for r in recorded]) if recorded else {},
        "by_stage": _table([r.stages for r in recorded]) if recorded else {},
        "by_category": by_category,
    }
