"""Named errors of the engine. Every failure a user can cause or meet has one."""

from __future__ import annotations

# The root and the store's own failures live in the store (it imports nothing from tools/);
# re-exported here so that every caller names them as before.
from pagetrail.store.errors import ConfigError as ConfigError
from pagetrail.store.errors import PagetrailError
from pagetrail.store.errors import StoreUnavailable as StoreUnavailable


class InvalidArgument(PagetrailError):
    """A request argument that is not a URL but is still unusable (empty query, no reference,
    an unknown evaluation method): every face shows it as a usage error."""

    code = "invalid_argument"


class InvalidURL(PagetrailError):
    """The text is not an absolute http(s) URL we can fetch."""

    code = "invalid_url"


class RefusedAddress(PagetrailError):
    """SSRF guard: the URL (or a redirect hop) points at a private/loopback/metadata address."""

    code = "refused_address"


class BodyTooLarge(PagetrailError):
    code = "body_too_large"


class DecompressionBomb(PagetrailError):
    code = "decompression_bomb"


class TooManyRedirects(PagetrailError):
    code = "too_many_redirects"


class RedirectLoop(TooManyRedirects):
    code = "redirect_loop"


class InvalidDate(PagetrailError, ValueError):
    """A date that tools.content.dates.parse_date cannot read (the message says what it accepts)."""

    code = "invalid_date"


class UnsupportedContent(PagetrailError):
    """Binary or otherwise unparseable content where a document was expected."""

    code = "unsupported_content"


class FetchFailed(PagetrailError):
    """Network-level failure (DNS, refused, TLS, timeout) after retries.

    `kind` says which: "dns" | "refused" | "tls" | "timeout" | "proxy" | "protocol" | "other";
    "protocol": the server's answer broke HTTP/1.1 or framed its body ambiguously (the bulk
    client refuses it, and the connection, rather than guess).
    """

    code = "fetch_failed"
    KINDS = ("dns", "refused", "tls", "timeout", "proxy", "protocol", "other")

    def __init__(self, message: str, *, url: str | None = None, kind: str = "other") -> None:
        super().__init__(message, url=url)
        self.kind = kind if kind in self.KINDS else "other"

    def to_dict(self) -> dict[str, str | None]:
        return {**super().to_dict(), "kind": self.kind}


class RateLimited(PagetrailError):
    """A remote service asked us to slow down (429 / Retry-After)."""

    code = "rate_limited"

    def __init__(self, message: str, *, url: str | None = None, retry_after: float | None = None):
        super().__init__(message, url=url)
        self.retry_after = retry_after


class ArchiveUnavailable(PagetrailError):
    """No configured web archive answered."""

    code = "archive_unavailable"


class NoMemento(PagetrailError):
    """No archive holds a usable copy of the URL."""

    code = "no_memento"


class ArchiveExcluded(NoMemento):
    """The archive refuses the URL: excluded ("This URL has been excluded from the Wayback
    Machine") or its site blocked ("Blocked Site Error"). A kind of "no copy" (callers that
    handle NoMemento handle it), named: the archive said why."""

    code = "archive_excluded"


class EngineUnavailable(PagetrailError):
    """A search engine that cannot be used (not configured, or refused)."""

    code = "engine_unavailable"


class BrokerUnavailable(PagetrailError):
    """The task queue's broker (Redis) does not answer."""

    code = "broker_unavailable"


class JobsStalled(PagetrailError):
    """Dispatched jobs stopped finishing (no worker is taking them)."""

    code = "jobs_stalled"


class JobFailed(PagetrailError):
    """A job that ran and failed on a worker (its error is kept)."""

    code = "job_failed"


class BadJobInput(PagetrailError):
    """A job's input (a batch file's row) that cannot be run: names file:line."""

    code = "bad_job_input"


class WorldError(PagetrailError):
    """A testbed world that does not follow FORMAT.md (names file and line)."""

    code = "world_error"


class ModelMissing(PagetrailError):
    """A model pagetrail needs is not there or cannot be read (the URL classifier, the
    answer-confidence model)."""

    code = "model_missing"
