"""The network edge: every HTTP request pagetrail makes, and what guards it.

Owns the async client (`Fetcher`: SSRF guard on every hop, size and decompression limits,
charset sniffing, proxies, retries), the lean bulk client of scans, per-host politeness
(in-process or on Redis), the SSRF guard, URL parsing and normalisation, and URL redaction
in logs, and whether pagetrail's own network is down (netcheck). Imports only the tools/ top
level (errors, settings, models).

Modules: bulkfetch, fetch, logsafe, netcheck, netguard, politeness, urls.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "BulkFetcher": "pagetrail.tools.net.bulkfetch",
    "Fetcher": "pagetrail.tools.net.fetch",
    "HostLimiter": "pagetrail.tools.net.politeness",
    "Response": "pagetrail.tools.net.fetch",
    "detect_charset": "pagetrail.tools.net.fetch",
    "endpoint_url": "pagetrail.tools.net.urls",
    "ensure_fetchable": "pagetrail.tools.net.netguard",
    "host_of": "pagetrail.tools.net.urls",
    "host_variants": "pagetrail.tools.net.urls",
    "install_log_redaction": "pagetrail.tools.net.logsafe",
    "normalize_url": "pagetrail.tools.net.urls",
    "origin_of": "pagetrail.tools.net.netguard",
    "refuse_local_host": "pagetrail.tools.net.netguard",
    "retry_after_seconds": "pagetrail.tools.net.fetch",
    "same_url": "pagetrail.tools.net.urls",
    "shared_limiter": "pagetrail.tools.net.politeness",
    "site_of": "pagetrail.tools.net.urls",
    "validate_url": "pagetrail.tools.net.urls",
    "without_userinfo": "pagetrail.tools.net.urls",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
