"""What went wrong with an exchange: the kind of a network failure, and Retry-After.

Private to the fetch layer; `tools.net.fetch` is its surface (`failure_kind`,
`retry_after_seconds`)."""

from __future__ import annotations

import ssl
import time
from datetime import UTC
from email.utils import parsedate_to_datetime

import httpx


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def failure_kind(exc: BaseException) -> str:
    """FetchFailed kind for an httpx/OS exception."""
    import socket

    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return "timeout"
    if isinstance(exc, httpx.ProxyError):
        return "proxy"
    text = " ".join(str(e) for e in _causes(exc)).lower()
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLError | ssl.CertificateError):
            return "tls"
        if isinstance(cause, socket.gaierror):
            return "dns"
        if isinstance(cause, ConnectionRefusedError):
            return "refused"
    if "certificate" in text or "ssl" in text or "tls" in text:
        return "tls"
    if "name or service not known" in text or "nodename nor servname" in text \
            or "temporary failure in name resolution" in text or "getaddrinfo" in text:
        return "dns"
    if "connection refused" in text or "errno 111" in text:
        return "refused"
    return "other"



def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date), None if absent/unreadable.

    The one parser of the header (the Fetcher, the bulk client and the search engines).
    An HTTP date without a zone is UTC, as HTTP dates are (not the machine's local time)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))
