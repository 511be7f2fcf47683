"""The link graph (table `link_edges`, written only here): which pages link to which URLs,
with anchor text and context. The scanner records a crawl's links with
`replace_edges_of_pages`; recoveries read `backlinks` (link-neighbourhood evidence)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from pagetrail.store.db import BulkWrite, Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import LinkEdge, utcnow


@dataclass(frozen=True)
class Edge:
    page_url: str
    target_url: str
    anchor: str = ""
    context: str = ""


# Bulk, without SQLAlchemy's per-row work (a crawl records tens of thousands of links).
_INSERT_EDGES = BulkWrite(lambda: insert(LinkEdge.__table__),
                          ("page_url", "target_url", "anchor", "context", "seen_at"))


def replace_edges_of_pages(session: Session, pages: Sequence[tuple[str, Sequence[Edge]]]) -> int:
    """Record the links of these pages, replacing what an earlier crawl recorded for them, in
    the caller's transaction (a crawl records thousands of pages; one transaction each would
    make the store the bottleneck)."""
    if not pages:
        return 0
    urls = [url for url, _ in pages]
    for start in range(0, len(urls), 500):
        session.execute(delete(LinkEdge).where(LinkEdge.page_url.in_(urls[start:start + 500])))
    # seen_at per row, not one per batch: backlinks() lists the most recently seen first,
    # and ties would leave that order to the database.
    rows = [{"page_url": url, "target_url": e.target_url, "anchor": e.anchor[:1000],
             "context": e.context[:2000], "seen_at": utcnow()}
            for url, edges in pages for e in edges]
    _INSERT_EDGES.execute(session.connection(), rows)
    return len(rows)


@store_call
def outlinks(store: Store, page_urls: Sequence[str]) -> dict[str, list[Edge]]:
    """Links recorded for these pages (what a resumed scan already extracted)."""
    found: dict[str, list[Edge]] = {}
    with store.session() as s:
        for start in range(0, len(page_urls), 500):
            chunk = list(page_urls[start:start + 500])
            for row in s.execute(select(LinkEdge.page_url, LinkEdge.target_url, LinkEdge.anchor,
                                        LinkEdge.context).where(LinkEdge.page_url.in_(chunk))):
                found.setdefault(row[0], []).append(Edge(*row))
    return found


@store_call
def backlinks(store: Store, target_url: str, limit: int = 10) -> list[Edge]:
    """First-level backlinks of a URL (Klein & Nelson's link neighbourhood: ~10 pages)."""
    with store.session() as session:
        rows = session.scalars(
            select(LinkEdge).where(LinkEdge.target_url == target_url)
            .order_by(LinkEdge.seen_at.desc()).limit(limit * 3)
        ).all()
    seen: set[str] = set()
    found: list[Edge] = []
    for row in rows:
        if row.page_url in seen:
            continue
        seen.add(row.page_url)
        found.append(Edge(row.page_url, row.target_url, row.anchor, row.context))
        if len(found) >= limit:
            break
    return found
