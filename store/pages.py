"""Pages pagetrail has seen (candidates, mementos, linking pages): the local search index
(table `local_pages`, written only here; tools.engines.local is its engine).

On SQLite an FTS5 table (`local_pages_fts`, kept in sync by triggers, see migration 0002)
indexes title, text and URL, ranked with BM25 (title weighted over URL over text); on
PostgreSQL (or SQLite without FTS5) a token ILIKE match scores title, URL and text hits.
The caller gives the page's key (a hash of its normalised URL), its host and the query's
terms: the store knows no URL or text rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import DateTime, String, Text, case, func, inspect, literal, or_, select, text
from sqlalchemy.orm import Mapped, Session, mapped_column

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Base, utcnow

FTS_TABLE = "local_pages_fts"
MAX_TEXT = 100_000  # characters of page text kept per page
SNIPPET_WINDOW = 240


class LocalPage(Base):
    __tablename__ = "local_pages"
    id: Mapped[int] = mapped_column(primary_key=True)
    # sha256 of the normalised URL: a unique key that fits any index (URLs can be long).
    url_key: Mapped[str] = mapped_column(String(64), unique=True)
    url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(255), index=True, default="")
    title: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text, default="")
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


@dataclass(frozen=True)
class PageHit:
    url: str
    title: str
    snippet: str


@store_call
def has_fts(store: Store) -> bool:
    """Whether the database has the FTS5 index (SQLite with FTS5, migration 0002)."""
    engine = store.engine
    return engine.dialect.name == "sqlite" and inspect(engine).has_table(FTS_TABLE)


@store_call
def upsert_page(store: Store, key: str, url: str, *, host: str, title: str = "",
                body: str = "") -> None:
    """Insert or refresh the page with key `key` (its text cut to MAX_TEXT characters)."""
    with store.session() as session:
        page = session.scalar(select(LocalPage).where(LocalPage.url_key == key))
        if page is None:
            page = LocalPage(url_key=key, url=url)
            session.add(page)
        page.url = url
        page.host = host
        page.title = (title or "")[:1000]
        page.text = (body or "")[:MAX_TEXT]
        page.seen_at = utcnow()


@store_call
def search_pages(store: Store, terms: list[str], *, site: str | None, limit: int,
                 fts: bool) -> list[PageHit]:
    """Pages matching any of `terms` (on `site` and its subdomains when given), best first:
    BM25 over the FTS5 index when `fts`, else the ILIKE score."""
    if not terms or limit <= 0:
        return []
    with store.session() as session:
        if fts:
            return _search_fts(session, terms, site, limit)
        return _search_like(session, terms, site, limit)


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


def _site_clause(site: str | None) -> tuple[str, dict[str, str]]:
    if not site:
        return "", {}
    bare = bare_site(site)
    return (" AND (p.host = :site OR p.host LIKE :subdomains ESCAPE '\\')",
            {"site": bare, "subdomains": "%." + bare.replace("_", "\\_")})


def _search_fts(session: Session, terms: list[str], site: str | None,
                limit: int) -> list[PageHit]:
    site_sql, params = _site_clause(site)
    statement = text(
        f"SELECT p.url, p.title, snippet({FTS_TABLE}, 1, '', '', ' … ', 32) "
        f"FROM {FTS_TABLE} JOIN local_pages p ON p.id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH :match{site_sql} "
        # bm25 weights per column: title, text, url; lower is better.
        f"ORDER BY bm25({FTS_TABLE}, 4.0, 1.0, 2.0), p.id LIMIT :limit"
    )
    rows = session.execute(
        statement, {"match": fts_match_expression(terms), "limit": limit, **params})
    return [PageHit(url, title or "", snippet or "") for url, title, snippet in rows]


def _search_like(session: Session, terms: list[str], site: str | None,
                 limit: int) -> list[PageHit]:
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
                LocalPage.host.like("%." + bare.replace("_", "\\_"), escape="\\")))
    return [PageHit(url, title or "", snippet_around(body or "", terms))
            for url, title, body in session.execute(statement)]
