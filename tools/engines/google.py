"""Google Programmable Search (Custom Search JSON API).

`GET {base}/customsearch/v1?cx=…&q=…&num=N&start=S` → `{"items": [{"link", "title",
"snippet"}]}`. The API key goes in the `X-Goog-Api-Key` header (a Google API system
parameter equivalent to `key=`), so it never appears in a URL, a log line or an error.
At most 10 results per request; `start` pages through them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from pagetrail.tools.engines.base import (
    EngineContext,
    EngineSkipped,
    HttpGetter,
    SearchContext,
    make_hits,
    result_rows,
)
from pagetrail.tools.engines.failures import EngineRefused, QuotaExhausted, fetch_api_json
from pagetrail.tools.errors import EngineUnavailable, PagetrailError, RateLimited
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import endpoint_url

GOOGLE_API = "https://www.googleapis.com"
PAGE = 10
MAX_PAGES = 3


def google_rows(payload: Any) -> list[tuple[object, object, object]]:
    if not isinstance(payload, dict):
        raise EngineUnavailable("google: unexpected answer")
    # no "items" at all when nothing matched
    return result_rows("google", payload.get("items"), ("link", "title", "snippet"),
                       what="items", missing_is_empty=True)


# Google API error reasons (errors[].reason) and what they mean here.
QUOTA_REASONS = frozenset({"dailyLimitExceeded", "quotaExceeded", "dailyLimitExceededUnreg"})
RATE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded",
                          "rateLimitExceededUnreg"})
REFUSED_REASONS = frozenset({"keyInvalid", "keyExpired", "accessNotConfigured", "forbidden",
                             "ipRefererBlocked", "badRequest", "invalid"})


def google_failure(status: int, _headers: Mapping[str, str], payload: Any
                   ) -> PagetrailError | None:
    """Google's JSON error answer, named: a spent daily quota (403/429 with
    `Quota exceeded … per day`, `dailyLimitExceeded`) is not retried; a per-minute limit is
    a rate limit; a bad, disabled or closed key is a refusal. None: not a Google error body."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return None
    message = " ".join(str(error.get("message") or "").split())[:300]
    details = error.get("errors") if isinstance(error.get("errors"), list) else []
    reasons = {str(d.get("reason")) for d in details if isinstance(d, dict)}
    state = str(error.get("status") or "")
    lowered = message.lower()
    if reasons & QUOTA_REASONS or (status in (403, 429) and "per day" in lowered):
        return QuotaExhausted(f"google: daily quota spent (HTTP {status} {state}: {message}); "
                              "it resets at midnight Pacific Time")
    if reasons & RATE_REASONS or state == "RESOURCE_EXHAUSTED" or status == 429:
        return RateLimited(f"google: rate limited (HTTP {status} {state}: {message})")
    if reasons & REFUSED_REASONS or state in ("PERMISSION_DENIED", "INVALID_ARGUMENT") \
            or status in (400, 401, 403):
        return EngineRefused(f"google: request refused (HTTP {status} {state}: {message}); "
                             "check PAGETRAIL_GOOGLE_API_KEY, PAGETRAIL_GOOGLE_CX and that "
                             "the Custom Search API is enabled for the key's project")
    return None


class GoogleEngine:
    rate_limited = True
    scope = "web"
    uses_context = False

    def __init__(self, fetcher: HttpGetter, api_key: SecretStr, cx: str, *,
                 base_url: str = GOOGLE_API, name: str = "google") -> None:
        self.fetcher = fetcher
        self._api_key = api_key
        self.cx = cx
        self.base_url = base_url.rstrip("/")
        self.name = name

    def __repr__(self) -> str:
        return f"GoogleEngine(base_url={self.base_url!r})"

    def page_url(self, query: str, start: int, num: int, site: str | None) -> str:
        params: dict[str, str | int] = {"cx": self.cx, "q": query, "num": num, "start": start}
        if site:
            params["siteSearch"] = site
            params["siteSearchFilter"] = "i"
        return endpoint_url(self.base_url, "customsearch/v1", params=params)

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        secret = self._api_key.get_secret_value()
        headers = {"X-Goog-Api-Key": secret}
        rows: list[tuple[object, object, object]] = []
        for page in range(MAX_PAGES):
            if len(rows) >= limit:
                break
            num = min(PAGE, limit - len(rows))
            page_rows = google_rows(await fetch_api_json(
                self.fetcher, self.name, self.page_url(query, 1 + page * PAGE, num, site),
                headers=headers, secrets=[secret], explain=google_failure,
            ))
            rows.extend(page_rows)
            if len(page_rows) < num:
                break
        return make_hits(rows, engine=self.name, limit=limit, site=site)


class GoogleSettings(BaseSettings):
    """The Google engine's own settings: PAGETRAIL_GOOGLE_API_KEY, PAGETRAIL_GOOGLE_CX
    (the Programmable Search Engine id), PAGETRAIL_GOOGLE_BASE_URL."""

    model_config = SettingsConfigDict(env_prefix="PAGETRAIL_GOOGLE_", extra="ignore")

    api_key: SecretStr | None = None
    cx: str | None = None
    base_url: str = GOOGLE_API


def build(context: EngineContext) -> GoogleEngine:
    """The `google` entry point."""
    own = GoogleSettings()
    if not context.secret(own.api_key) or not own.cx:
        raise EngineSkipped("needs PAGETRAIL_GOOGLE_API_KEY and PAGETRAIL_GOOGLE_CX")
    assert own.api_key is not None
    return GoogleEngine(context.fetcher, own.api_key, own.cx, base_url=own.base_url)
