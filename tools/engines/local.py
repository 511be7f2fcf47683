"""A local index of pages pagetrail has seen, searchable like a web engine.

Pages (fetched candidates, mementos, linking pages) are added with `LocalIndex.add`. On
SQLite the FTS5 table of migration 0002 ranks with BM25 (title weighted over URL over
text); elsewhere (PostgreSQL, or SQLite without FTS5) a token ILIKE match scores title,
URL and text hits. Database calls run in a worker thread to keep the event loop free.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from sqlalchemy import case, func, inspect, literal, or_, select, text
from sqlalchemy.orm import Session

from pagetrail.store.db import Store
from pagetrail.store.models import utcnow
from pagetrail.store.pages import FTS_TABLE, LocalPage
from pagetrail.tools.engines.base import EngineContext, EngineSkipped, SearchContext, make_hits
from pagetrail.tools.engines.overlap import query_terms, text_tokens
from pagetrail.tools.models import Document, Hit
from pagetrail.tools.urls import host_of, normalize_url

MAX_TEXT = 100_000  # characters of page text kept per page
MAX_TERMS = 16
SNIPPET_WINDOW = 240


@dataclass(frozen=True)
class LocalRow:
    url: str
    title: str
    snippet: str


def url_key(url: str) -> str:
    return hashlib.sha256(normalize_url(url).encode("utf-8")).hexdigest()


def bare_site(site: str) -> str:
    site = site.lower().split("://", 1)[-1].split("/", 1)[0].strip(".")
    return site[4:] if site.startswith("www.") else site


def fts_match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH string: any of the terms, each quoted (no operator injection)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def snippet_around(body: str, terms: list[str], width: int = SNIPPET_WINDOW) -> str:
    """A window of `body` around the first query term found in it (plain substring)."""
    lower = body.lower()
    positions = [p for p in (lower.find(t) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    return body[start:start + width]


class LocalIndex:
    """Add pages; search them (sync API; `LocalEngine` wraps it for the service)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._fts: bool | None = None

    @property
    def has_fts(self) -> bool:
        if self._fts is None:
            engine = self.store.engine
            self._fts = engine.dialect.name == "sqlite" and inspect(engine).has_table(FTS_TABLE)
        return self._fts

    def add(self, url: str, title: str = "", body: str = "") -> None:
        """Insert or refresh one page (keyed by its normalised URL)."""
        key = url_key(url)
        with self.store.session() as session:
            page = session.scalar(select(LocalPage).where(LocalPage.url_key == key))
            if page is None:
                page = LocalPage(url_key=key, url=url)
                session.add(page)
            page.url = url
            page.host = host_of(url)
            page.title = (title or "")[:1000]
            page.text = (body or "")[:MAX_TEXT]
            page.seen_at = utcnow()

    def add_document(self, document: Document) -> None:
        self.add(document.url, document.title, document.text)

    def search(self, query: str, *, site: str | None = None, limit: int = 10) -> list[LocalRow]:
        terms = (query_terms(query) or text_tokens(query))[:MAX_TERMS]
        if not terms or limit <= 0:
            return []
        with self.store.session() as session:
            if self.has_fts:
                return self._search_fts(session, terms, site, limit)
            return self._search_like(session, terms, site, limit)

    @staticmethod
    def _site_clause(site: str | None) -> tuple[str, dict[str, str]]:
        if not site:
            return "", {}
        bare = bare_site(site)
        return (" AND (p.host = :site OR p.host LIKE :subdomains ESCAPE '\\')",
                {"site": bare, "subdomains": "%." + bare.replace("_", "\\_")})

    def _search_fts(self, session: Session, terms: list[str], site: str | None,
                    limit: int) -> list[LocalRow]:
        site_sql, params = self._site_clause(site)
        statement = text(
            f"SELECT p.url, p.title, snippet({FTS_TABLE}, 1, '', '', ' … ', 32) "
            f"FROM {FTS_TABLE} JOIN local_pages p ON p.id = {FTS_TABLE}.rowid "
            f"WHERE {FTS_TABLE} MATCH :match{site_sql} "
            # bm25 weights per column: title, text, url; lower is better.
            f"ORDER BY bm25({FTS_TABLE}, 4.0, 1.0, 2.0), p.id LIMIT :limit"
        )
        rows = session.execute(
            statement, {"match": fts_match_expression(terms), "limit": limit, **params}
        )
        return [LocalRow(url, title or "", snippet or "") for url, title, snippet in rows]

    def _search_like(self, session: Session, terms: list[str], site: str | None,
                     limit: int) -> list[LocalRow]:
        score = literal(0)
        matches = []
        for term in terms:
            pattern = like_pattern(term)
            in_title = LocalPage.title.ilike(pattern, escape="\\")
            in_url = LocalPage.url.ilike(pattern, escape="\\")
            in_text = LocalPage.text.ilike(pattern, escape="\\")
            matches.append(or_(in_title, in_url, in_text))
            score = (score + case((in_title, 4), else_=0) + case((in_url, 2), else_=0)
                     + case((in_text, 1), else_=0))
        statement = (
            select(LocalPage.url, LocalPage.title, func.substr(LocalPage.text, 1, 4000))
            .where(or_(*matches))
            .order_by(score.desc(), LocalPage.id)
            .limit(limit)
        )
        if site:
            bare = bare_site(site)
            statement = statement.where(
                or_(LocalPage.host == bare,
                    LocalPage.host.like("%." + bare.replace("_", "\\_"), escape="\\"))
            )
        return [LocalRow(url, title or "", snippet_around(body or "", terms))
                for url, title, body in session.execute(statement)]


class LocalEngine:
    name = "local"
    rate_limited = False  # our own database
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
