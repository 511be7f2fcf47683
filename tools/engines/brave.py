"""Brave Search API (web results).

`GET {base}/res/v1/web/search?q=…&count=N&offset=P` with header `X-Subscription-Token`
→ `{"web": {"results": [{"url", "title", "description"}]}}`. The key travels in a header,
never in the URL, so it cannot leak into logs or error messages through a URL.
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
    parse_retry_after,
    result_rows,
)
from pagetrail.tools.engines.failures import (
    EngineRefused,
    QuotaExhausted,
    fetch_api_json,
    header_list,
)
from pagetrail.tools.engines.searxng import with_site
from pagetrail.tools.errors import EngineUnavailable, PagetrailError, RateLimited
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import endpoint_url

BRAVE_API = "https://api.search.brave.com"
MAX_COUNT = 20  # the API's largest page


def brave_rows(payload: Any) -> list[tuple[object, object, object]]:
    if not isinstance(payload, dict):
        raise EngineUnavailable("brave: unexpected answer")
    web = payload.get("web") or {}
    results = web.get("results") if isinstance(web, dict) else None
    # Brave omits "web" when nothing matched
    return result_rows("brave", results, ("url", "title", "description"),
                       what="web.results", missing_is_empty=True)


LONG_WINDOW = 3600.0  # a spent window resetting later than this is a quota, not a pace


def _number(value: object) -> float | None:
    try:
        return float(str(value))
    except (TypeError, ValueError):
        return None


def brave_failure(status: int, headers: Mapping[str, str], payload: Any
                  ) -> PagetrailError | None:
    """Brave's error answer, named. A 429 carries `X-RateLimit-Limit/Remaining/Reset`, one
    comma-separated value per window (per second, per month): a spent short window is a rate
    limit (retried after its reset), a spent monthly window is a spent quota (not retried),
    as is `quota_current >= quota_limit` in the JSON body's `meta`. 401/403/422 with the
    body's `code` (SUBSCRIPTION_TOKEN_INVALID, …) are refusals of the key or plan."""
    error = payload.get("error") if isinstance(payload, dict) else None
    error = error if isinstance(error, dict) else {}
    code = str(error.get("code") or "")
    detail = " ".join(str(error.get("detail") or "").split())[:200]
    meta = error.get("meta") if isinstance(error.get("meta"), dict) else {}
    said = f"HTTP {status} {code}: {detail}".rstrip(": ") if code else f"HTTP {status}"
    if status == 429 or "LIMITED" in code or "QUOTA" in code:
        limits = header_list(headers, "x-ratelimit-limit")
        remaining = header_list(headers, "x-ratelimit-remaining")
        resets = header_list(headers, "x-ratelimit-reset")
        spent = [(lim, _number(reset)) for lim, left, reset in zip(limits, remaining, resets,
                                                                     strict=False)
                 if _number(left) == 0]
        used, quota = _number(meta.get("quota_current")), _number(meta.get("quota_limit"))
        monthly = [(lim, reset) for lim, reset in spent if reset is not None
                   and reset > LONG_WINDOW]
        if monthly or "QUOTA" in code or (used is not None and quota and used >= quota):
            resets_in = monthly[0][1] if monthly else None
            when = f"; resets in {resets_in / 86400:.1f} days" if resets_in else ""
            plan = f" on plan {meta['plan']}" if meta.get("plan") else ""
            return QuotaExhausted(f"brave: quota spent{plan} ({said}, "
                                  f"{(quota and int(quota)) or '?'} requests){when}",
                                  resets_in=resets_in)
        wait = min((reset for _lim, reset in spent if reset is not None), default=None)
        if wait is None:
            wait = parse_retry_after(headers.get("retry-after"))
        return RateLimited(f"brave: rate limited ({said}; x-ratelimit-limit: "
                           f"{', '.join(limits) or '?'})", retry_after=wait)
    if status in (401, 403, 422) and code:
        return EngineRefused(f"brave: request refused ({said}); check PAGETRAIL_BRAVE_API_KEY "
                             "and its plan")
    return None


class BraveEngine:
    rate_limited = True
    scope = "web"
    uses_context = False

    def __init__(self, fetcher: HttpGetter, api_key: SecretStr, *, base_url: str = BRAVE_API,
                 name: str = "brave") -> None:
        self.fetcher = fetcher
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.name = name

    def __repr__(self) -> str:
        return f"BraveEngine(base_url={self.base_url!r})"

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        secret = self._api_key.get_secret_value()
        params = {"q": with_site(query, site), "count": min(max(limit, 1), MAX_COUNT)}
        payload = await fetch_api_json(
            self.fetcher, self.name, endpoint_url(self.base_url, "res/v1/web/search", params=params),
            headers={"X-Subscription-Token": secret}, secrets=[secret], explain=brave_failure,
        )
        return make_hits(brave_rows(payload), engine=self.name, limit=limit, site=site)


class BraveSettings(BaseSettings):
    """The Brave engine's own settings: PAGETRAIL_BRAVE_API_KEY, PAGETRAIL_BRAVE_BASE_URL."""

    model_config = SettingsConfigDict(env_prefix="PAGETRAIL_BRAVE_", extra="ignore")

    api_key: SecretStr | None = None
    base_url: str = BRAVE_API


def build(context: EngineContext) -> BraveEngine:
    """The `brave` entry point."""
    own = BraveSettings()
    if not context.secret(own.api_key):
        raise EngineSkipped("no API key (set PAGETRAIL_BRAVE_API_KEY)")
    assert own.api_key is not None
    return BraveEngine(context.fetcher, own.api_key, base_url=own.base_url)
