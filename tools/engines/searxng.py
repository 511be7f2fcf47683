"""SearXNG (and anything serving its JSON API, such as the testbed's search).

`GET {base}/search?q=…&format=json&pageno=N` → `{"results": [{"url", "title", "content"}]}`.
A `site` restriction is sent as the `site:` operator (SearXNG passes it to its backends)
and enforced on the answer, since not every backend honours it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pagetrail.tools.engines.base import (
    EngineContext,
    EngineSkipped,
    HttpGetter,
    SearchContext,
    make_hits,
    result_rows,
)
from pagetrail.tools.engines.failures import EngineRefused, PartialHits, fetch_api_json
from pagetrail.tools.errors import EngineUnavailable, PagetrailError
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import endpoint_url

RESULTS_PER_PAGE = 10


def searxng_rows(payload: Any) -> list[tuple[object, object, object]]:
    """(url, title, snippet) rows of one SearXNG JSON page; EngineUnavailable if malformed."""
    results = payload.get("results") if isinstance(payload, dict) else None
    return result_rows("searxng", results, ("url", "title", "content"), what="no results list")


def unresponsive_engines(payload: Any) -> list[tuple[str, str]]:
    """SearXNG's `unresponsive_engines`: [[engine, why], …] — its backends that timed out,
    were suspended (too many requests, captcha, access denied) or failed."""
    listed = payload.get("unresponsive_engines") if isinstance(payload, dict) else None
    found: list[tuple[str, str]] = []
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, list | tuple) and item:
            name = str(item[0])
            why = " ".join(str(item[1]).split())[:120] if len(item) > 1 and item[1] else "?"
            found.append((name, why))
    return found


def searxng_failure(status: int, _headers: Mapping[str, str], _payload: Any
                    ) -> PagetrailError | None:
    """A SearXNG instance answers 403 to `format=json` unless JSON is enabled in its
    settings.yml (`search.formats`): a configuration to fix, not an API key."""
    if status == 403:
        return EngineRefused("searxng: the instance refuses format=json (HTTP 403): add `json` "
                             "to search.formats in its settings.yml")
    return None


def with_site(query: str, site: str | None) -> str:
    return f"{query} site:{site}" if site else query


class SearxngEngine:
    rate_limited = True
    scope = "web"
    uses_context = False

    def __init__(self, fetcher: HttpGetter, base_url: str, *, name: str = "searxng",
                 max_pages: int = 3) -> None:
        self.fetcher = fetcher
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.max_pages = max_pages

    def page_url(self, query: str, page: int) -> str:
        params = {"q": query, "format": "json", "pageno": page}
        return endpoint_url(self.base_url, "search", params=params)

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        rows: list[tuple[object, object, object]] = []
        hits: list[Hit] = []
        silent: dict[str, str] = {}
        for page in range(1, self.max_pages + 1):
            payload = await fetch_api_json(
                self.fetcher, self.name, self.page_url(with_site(query, site), page),
                explain=searxng_failure)
            page_rows = searxng_rows(payload)
            for name, why in unresponsive_engines(payload):
                silent.setdefault(name, why)
            rows.extend(page_rows)
            hits = make_hits(rows, engine=self.name, limit=limit, site=site)
            # Enough hits, or the last page (a short page means there are no more).
            if len(hits) >= limit or len(page_rows) < RESULTS_PER_PAGE:
                break
        if silent and not rows:
            # Nothing found because nothing answered: a failure, not "no results".
            raise EngineUnavailable("searxng: no engine answered: " + "; ".join(
                f"{name} ({why})" for name, why in silent.items()))
        return PartialHits(hits, list(silent.items())) if silent else hits


def build(context: EngineContext) -> SearxngEngine:
    """The `searxng` entry point. Its URL stays a product setting (PAGETRAIL_SEARXNG_URL):
    the SSRF guard must know every endpoint origin pagetrail itself calls."""
    settings = context.settings
    if not settings.searxng_url:
        raise EngineSkipped("set PAGETRAIL_SEARXNG_URL")
    engine = SearxngEngine(context.fetcher, settings.searxng_url)
    engine.rps = settings.searxng_rps  # self-hosted: its operator sets the pace
    return engine
