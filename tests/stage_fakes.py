"""A fake recovery context for the stages' unit tests: engines that answer from a table (the
internet is what is faked), the real SearchService over them, a fetcher that answers from a
table, no store unless a test passes one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.engines.service import SearchService
from pagetrail.tools.errors import FetchFailed
from pagetrail.tools.evidence.queryplan import QueryEvidence
from pagetrail.tools.models import Hit
from pagetrail.tools.ranking.rank import Reference
from pagetrail.tools.recovery.context import (
    Budget,
    Context,
    DeadURL,
    DirectEvidence,
    Engines,
    Findings,
)
from pagetrail.tools.settings import Settings


@dataclass
class TableEngine:
    """An engine of a given scope answering every query with the same URLs; it records
    what it was asked."""

    name: str
    scope: str = "web"
    urls: list[str] = field(default_factory=list)
    asked: list[tuple[str, str | None]] = field(default_factory=list)
    rate_limited: bool = False
    uses_context: bool = False

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        self.asked.append((query, site))
        return [Hit(url=u, title=f"page {i}", rank=i, engine=self.name)
                for i, u in enumerate(self.urls[:limit], 1)]


@dataclass
class Listing:
    origin: str
    sites: set[str] = field(default_factory=set)
    pages: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass
class ListingEngine(TableEngine):
    """A "site" engine that also hands out maps (engines.base.SiteLister)."""

    scope: str = "site"
    maps: dict[str, Listing] = field(default_factory=dict)

    def has_listing(self, origin: str) -> bool:
        return origin in self.maps

    async def listing(self, origin: str) -> Listing:
        return self.maps.get(origin, Listing(origin, error=f"{origin} unreachable"))


@dataclass
class Response:
    status: int = 200
    final_url: str = ""
    content: bytes = b"<html><title>x</title><body>x</body></html>"
    is_html: bool = True
    squid_error: bool = False
    headers: Mapping[str, str] = field(default_factory=lambda: {"content-type": "text/html"})


@dataclass
class TableFetcher:
    """Answers the URLs of its table; any other URL fails to connect."""

    pages: dict[str, Response] = field(default_factory=dict)
    requests: int = 0

    async def get(self, url: str, **_options: Any) -> Response:
        self.requests += 1
        if url not in self.pages:
            raise FetchFailed(f"{url}: could not connect")
        response = self.pages[url]
        return Response(**{**response.__dict__, "final_url": response.final_url or url})


def make_context(url: str = "https://old.example/news/solar-farms-double.html", *,
                 engines: list[Any] | None = None, fetcher: TableFetcher | None = None,
                 evidence: QueryEvidence | None = None, methods: frozenset[str] | None = None,
                 host_silent: bool = False, site_gone: bool = False, store: Any = None,
                 direct: DirectEvidence | None = None) -> tuple[Context, Findings]:
    dead = DeadURL(url)
    engines = engines if engines is not None else []
    settings = Settings()
    evidence = evidence or QueryEvidence(title="Solar farms double",
                                         url_terms=["solar", "farms", "double"])
    site_query = evidence.title or " ".join(evidence.url_terms)
    budget = Budget()
    ctx = Context(
        url=dead, settings=settings, fetcher=fetcher or TableFetcher(),  # type: ignore[arg-type]
        budget=budget, store=store, methods=methods,
        reference=Reference(dead_url=dead, lang="en"), evidence=evidence,
        service=SearchService(engines, settings=settings),
        engines=Engines.of(engines, host_silent=host_silent),
        search=SearchContext(dead_url=dead), host_silent=host_silent, site_gone=site_gone,
        site_query=site_query,
        listing_queries=list(dict.fromkeys(
            q for q in (site_query, " ".join(evidence.url_terms)) if q)),
        direct=direct or DirectEvidence(),
    )
    return ctx, Findings.start(dead, budget)
