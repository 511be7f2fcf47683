"""A local index of pages pagetrail has seen, searchable like a web engine.

Pages (fetched candidates, mementos, linking pages) are added with `LocalIndex.add`; the
store keeps and searches them (store.pages: BM25 over SQLite's FTS5, else a token ILIKE
score). This side makes the keys and the query terms. Database calls run in a worker thread
to keep the event loop free.
"""

from __future__ import annotations

import asyncio
import hashlib

from pagetrail.store.db import Store
from pagetrail.store.pages import PageHit, has_fts, search_pages, upsert_page
from pagetrail.tools.engines.base import EngineContext, EngineSkipped, SearchContext, make_hits
from pagetrail.tools.engines.overlap import query_terms, text_tokens
from pagetrail.tools.models import Document, Hit
from pagetrail.tools.net.urls import host_of, normalize_url

MAX_TERMS = 16


def url_key(url: str) -> str:
    return hashlib.sha256(normalize_url(url).encode("utf-8")).hexdigest()


class LocalIndex:
    """Add pages; search them (sync API; `LocalEngine` wraps it for the service)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._fts: bool | None = None

    @property
    def has_fts(self) -> bool:
        if self._fts is None:
            self._fts = has_fts(self.store)
        return self._fts

    def add(self, url: str, title: str = "", body: str = "") -> None:
        """Insert or refresh one page (keyed by its normalised URL)."""
        upsert_page(self.store, url_key(url), url, host=host_of(url), title=title, body=body)

    def add_document(self, document: Document) -> None:
        self.add(document.url, document.title, document.text)

    def search(self, query: str, *, site: str | None = None, limit: int = 10) -> list[PageHit]:
        terms = (query_terms(query) or text_tokens(query))[:MAX_TERMS]
        return search_pages(self.store, terms, site=site, limit=limit, fts=self.has_fts)


class LocalEngine:
    name = "local"
    rate_limited = False  # our own database
    scope = "index"
    uses_context = False

    def __init__(self, index: LocalIndex | Store, *, name: str = "local") -> None:
        self.index = index if isinstance(index, LocalIndex) else LocalIndex(index)
        self.name = name

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        rows = await asyncio.to_thread(self.index.search, query, site=site, limit=limit)
        return make_hits(((r.url, r.title, r.snippet) for r in rows),
                         engine=self.name, limit=limit, site=site)


def build(context: EngineContext) -> LocalEngine:
    """The `local` entry point: pages pagetrail has seen, from the store."""
    if context.store is None:
        raise EngineSkipped("no store")
    return LocalEngine(context.store)
