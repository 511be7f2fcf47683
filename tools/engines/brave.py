"""Brave Search API (web results).

`GET {base}/res/v1/web/search?q=…&count=N&offset=P` with header `X-Subscription-Token`
→ `{"web": {"results": [{"url", "title", "description"}]}}`. The key travels in a header,
never in the URL, so it cannot leak into logs or error messages through a URL.
"""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from pagetrail.tools.engines.base import (
    EngineContext,
    EngineSkipped,
    HttpGetter,
    SearchContext,
    fetch_json,
    make_hits,
    result_rows,
)
from pagetrail.tools.engines.searxng import with_site
from pagetrail.tools.errors import EngineUnavailable
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
        payload = await fetch_json(
            self.fetcher, self.name, endpoint_url(self.base_url, "res/v1/web/search", params=params),
            headers={"X-Subscription-Token": secret}, secrets=[secret],
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
