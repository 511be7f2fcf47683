"""DuckDuckGo through the `ddgs` package: the keyless default on the real web.

`ddgs` does its own HTTP (it scrapes the engines' HTML), so it bypasses our fetcher; it is
given the same proxy and CA bundle. It is synchronous: it runs in a worker thread. Imported
lazily, so pagetrail works without it (the engine then fails alone with a clear message).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pagetrail.tools.engines.base import (
    EngineContext,
    EngineTransient,
    SearchContext,
    make_hits,
    result_rows,
)
from pagetrail.tools.engines.searxng import with_site
from pagetrail.tools.errors import EngineUnavailable, RateLimited
from pagetrail.tools.models import Hit


def ddgs_rows(results: Any) -> list[tuple[object, object, object]]:
    return result_rows("ddgs", results, ("href", "title", "body"))


class DdgsEngine:
    rate_limited = True
    scope = "web"
    uses_context = False

    def __init__(self, *, proxy: str | None = None, verify: bool | str = True,
                 timeout: float = 10.0, backend: str = "duckduckgo", region: str = "us-en",
                 name: str = "ddgs") -> None:
        self.proxy = proxy
        self.verify = verify
        self.timeout = timeout
        self.backend = backend
        self.region = region
        self.name = name

    def _search_sync(self, query: str, limit: int) -> list[dict[str, Any]]:
        try:
            from ddgs import DDGS
            from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException
        except ImportError:
            raise EngineUnavailable(
                "ddgs: the 'ddgs' package is not installed (pip install 'ddgs>=9,<10')"
            ) from None
        try:
            client = DDGS(proxy=self.proxy, timeout=int(max(1, self.timeout)), verify=self.verify)
            return client.text(query, max_results=limit, backend=self.backend,
                               region=self.region)
        except RatelimitException as exc:
            raise RateLimited(f"ddgs: rate limited ({exc})") from None
        except TimeoutException as exc:
            raise EngineTransient(f"ddgs: timed out ({exc})") from None
        except DDGSException as exc:
            if "no results" in str(exc).lower():
                return []  # ddgs raises when nothing matched; that is an answer
            raise EngineUnavailable(f"ddgs: {exc}") from None

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        if not query.strip():
            return []
        results = await asyncio.to_thread(self._search_sync, with_site(query, site), limit)
        return make_hits(ddgs_rows(results), engine=self.name, limit=limit, site=site)


def build(context: EngineContext) -> DdgsEngine:
    """The `ddgs` entry point (keyless; through the product's proxy and CA bundle)."""
    settings = context.settings
    return DdgsEngine(proxy=settings.proxy, verify=settings.ca_bundle or True,
                      timeout=settings.total_timeout)
