"""DuckDuckGo through the `ddgs` package: the keyless default on the real web.

`ddgs` does its own HTTP (it scrapes the engines' HTML), so it bypasses our fetcher; it is
given the same proxy and CA bundle. It is synchronous: it runs in a worker thread. Imported
lazily, so pagetrail works without it (the engine then fails alone with a clear message).

ddgs turns every answer but a 200 into "No results found." — DuckDuckGo's rate limit (202,
429), its block (403) and its bot challenge (the "anomaly" page) would read as an empty
result. For the DuckDuckGo backend, the answer is read here (`ddg_answer_failure`) before
ddgs parses it, so each is a named failure (#26 item 7): rate_limited, challenge.
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
from pagetrail.tools.engines.failures import EngineChallenged
from pagetrail.tools.engines.searxng import with_site
from pagetrail.tools.errors import EngineUnavailable, PagetrailError, RateLimited
from pagetrail.tools.models import Hit

DDG_HTML = "https://html.duckduckgo.com/html/"
# DuckDuckGo's bot challenge (the "anomaly" modal and its form), lower-case.
DDG_CHALLENGE = ("anomaly-modal", "bots use duckduckgo too", "challenge-form", "anomaly.js",
                 "/anomaly.js")


def ddg_answer_failure(status: int, text: str) -> PagetrailError | None:
    """DuckDuckGo's HTML endpoint answered something other than results: named."""
    sample = text[:100_000].lower()
    markers = [m for m in DDG_CHALLENGE if m in sample]
    if markers:
        return EngineChallenged(f"ddgs: DuckDuckGo answered a bot challenge (HTTP {status}: "
                                f"{', '.join(markers[:3])})")
    if status in (202, 429):
        return RateLimited(f"ddgs: DuckDuckGo rate limit (HTTP {status})")
    if status == 403:
        return EngineChallenged(f"ddgs: DuckDuckGo refused this client (HTTP {status})")
    if status >= 500:
        return EngineTransient(f"ddgs: DuckDuckGo server error (HTTP {status})")
    if status != 200:
        return EngineUnavailable(f"ddgs: DuckDuckGo answered HTTP {status}")
    return None


def _watched_engine(proxy: str | None, timeout: int, verify: bool | str, url: str) -> Any:
    """ddgs' DuckDuckGo engine whose answers are read before parsing (ddg_answer_failure)."""
    from ddgs.engines.duckduckgo import Duckduckgo

    class WatchedDuckduckgo(Duckduckgo):
        def request(self, *args: Any, **kwargs: Any) -> Any:
            response = self.http_client.request(*args, **kwargs)
            failure = ddg_answer_failure(response.status_code, response.text or "")
            if failure is not None:
                raise failure
            return response.text

    engine = WatchedDuckduckgo(proxy=proxy, timeout=timeout, verify=verify)
    engine.search_url = url
    return engine


def ddgs_rows(results: Any) -> list[tuple[object, object, object]]:
    return result_rows("ddgs", results, ("href", "title", "body"))


class DdgsEngine:
    rate_limited = True
    scope = "web"
    uses_context = False

    def __init__(self, *, proxy: str | None = None, verify: bool | str = True,
                 timeout: float = 10.0, backend: str = "duckduckgo", region: str = "us-en",
                 name: str = "ddgs", search_url: str = DDG_HTML) -> None:
        self.search_url = search_url
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
            if self.backend == "duckduckgo":
                return self._duckduckgo(query, limit)
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

    def _duckduckgo(self, query: str, limit: int) -> list[dict[str, Any]]:
        """DuckDuckGo's HTML results, page by page, each answer read before it is parsed."""
        engine = _watched_engine(self.proxy, int(max(1, self.timeout)), self.verify,
                                 self.search_url)
        found: list[dict[str, Any]] = []
        for page in (1, 2, 3):
            results = engine.search(query, region=self.region, page=page) or []
            found.extend({"href": r.href, "title": r.title, "body": r.body} for r in results)
            if len(found) >= limit or len(results) < 10:
                break
        return found[:limit]

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
