"""Pages pagetrail has seen (candidates, mementos, linking pages): the local search index.

On SQLite an FTS5 table (`local_pages_fts`, kept in sync by triggers, see migration 0002)
indexes title, text and URL; on PostgreSQL the engine falls back to token ILIKE matching.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from pagetrail.store.models import Base, utcnow

FTS_TABLE = "local_pages_fts"


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
