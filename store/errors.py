"""The store's named failures.

The root of every named failure (`PagetrailError`) is defined here, at the lowest layer, so
that the store's errors are PagetrailErrors (every face catches those) without the store
importing the engine: `pagetrail.tools.errors` re-exports these three classes unchanged.
"""

from __future__ import annotations


class PagetrailError(Exception):
    """Base class: a failure with a message fit for a person (one line)."""

    code = "error"

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url

    def to_dict(self) -> dict[str, str | None]:
        return {"error": self.code, "message": str(self), "url": self.url}


class ConfigError(PagetrailError):
    """A setting that cannot be used (here: a malformed database URL or unknown driver)."""

    code = "config_error"


class StoreUnavailable(PagetrailError):
    """The database could not be read or written (locked past the wait, unreachable)."""

    code = "store_unavailable"


class StoreRefused(StoreUnavailable):
    """The database answered and refused, in a way that no waiting changes: a program limit
    (an index row too large), a refused password or role, bad SQL or data (store.faults:
    `permanent`). Named at once with its SQLSTATE; never waited for, never put back."""

    code = "store_refused"
