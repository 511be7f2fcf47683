"""The local page index and its engine on every configured store backend."""

from __future__ import annotations

from sqlalchemy import func, select

from pagetrail.store.pages import LocalPage
from pagetrail.tools.engines.local import LocalEngine, LocalIndex
from pagetrail.tools.models import Document

PAGES = [
    ("https://www.news.example/energy/solar-farms-double", "Solar farms double in a year",
     "Solar farms across the midwest doubled their output as panel prices fell."),
    ("https://news.example/energy/wind", "Offshore wind", "Turbines at sea; some solar too."),
    ("https://blog.other.example/solar-farms", "Why solar farms matter",
     "A blog post about solar farms and farmland."),
    ("https://news.example/sports/cup", "Cup final", "The final of the cup, 50% off tickets."),
]


def fill(index: LocalIndex) -> None:
    for url, title, body in PAGES:
        index.add(url, title, body)


def check_search(index: LocalIndex) -> None:
    urls = [row.url for row in index.search("solar farms double")]
    assert urls[0] == "https://www.news.example/energy/solar-farms-double"
    assert "https://news.example/sports/cup" not in urls
    on_site = [row.url for row in index.search("solar farms", site="news.example")]
    assert set(on_site) == {"https://www.news.example/energy/solar-farms-double",
                            "https://news.example/energy/wind"}
    assert index.search("zeppelin") == []
    # LIKE wildcards and FTS operators in the query are plain text.
    cup = index.search('50% "cup" NEAR')
    assert cup and cup[0].url == "https://news.example/sports/cup"


def test_local_index_add_search_and_refresh(store) -> None:
    index = LocalIndex(store)
    fill(index)
    check_search(index)
    if store.engine.dialect.name == "sqlite":
        assert index.has_fts  # the migration built the FTS5 table
    # Re-adding a page (same normalised URL) refreshes it instead of duplicating it.
    index.add_document(Document(url="http://news.example/energy/wind/",
                                title="Offshore wind grows", text="Zeppelin-free turbines."))
    with store.session() as session:
        assert session.scalar(select(func.count()).select_from(LocalPage)) == len(PAGES)
    assert [r.url for r in index.search("zeppelin")] == ["http://news.example/energy/wind/"]
    assert index.search("sea") == []  # the old text left the index with the update


def test_like_fallback_gives_the_same_answers(store) -> None:
    index = LocalIndex(store)
    index._fts = False  # the PostgreSQL path, exercised on SQLite too
    fill(index)
    check_search(index)
    snippet = index.search("midwest")[0].snippet
    assert "midwest" in snippet


async def test_local_engine_hits(store) -> None:
    index = LocalIndex(store)
    fill(index)
    hits = await LocalEngine(store).search("solar farms", limit=2)
    assert [h.rank for h in hits] == [1, 2]
    assert all(h.engine == "local" and "solar" in h.url for h in hits)
    assert hits[0].title
