"""The link graph: which pages link to which URLs, with anchor text and context."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import delete, select

from pagetrail.store.db import Store
from pagetrail.store.models import LinkEdge


@dataclass(frozen=True)
class Edge:
    page_url: str
    target_url: str
    anchor: str = ""
    context: str = ""


def replace_page_edges(store: Store, page_url: str, edges: Iterable[Edge]) -> int:
    """Record the links of one page, replacing what an earlier crawl recorded for it."""
    rows = [
        LinkEdge(page_url=page_url, target_url=e.target_url, anchor=e.anchor[:1000],
                 context=e.context[:2000])
        for e in edges
    ]
    with store.session() as session:
        session.execute(delete(LinkEdge).where(LinkEdge.page_url == page_url))
        session.add_all(rows)
    return len(rows)


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
