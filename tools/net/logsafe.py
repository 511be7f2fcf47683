"""Log output without credentials: every URL in a formatted log line (message, arguments,
traceback) is shown through settings.mask_url — its password and query values masked
(parsed as SQLAlchemy parses a database URL).

The HTTP client logs each request's full URL (httpx at INFO: "HTTP Request: GET
http://user:password@archive/…?token=…"), and so would any library or message of ours
that names an endpoint; redacting at the handler catches them all, whoever logged them.
"""

from __future__ import annotations

import logging

from pagetrail.tools.settings import mask_urls_in


def redact_urls(text: str) -> str:
    """`text` with each URL in it masked (pure): settings.mask_urls_in, the one masking."""
    return mask_urls_in(text)


class RedactingFormatter(logging.Formatter):
    """A formatter whose output has every URL masked (wraps the handler's own format)."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact_urls(self.inner.format(record))


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Mask URLs in everything the handlers of `logger` (default: root) write."""
    for handler in (logger or logging.getLogger()).handlers:
        if not isinstance(handler.formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(handler.formatter))
