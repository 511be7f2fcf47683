"""Typed SQLAlchemy 2.x models. Every schema change comes with an Alembic migration."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, DateTime, Float, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class LinkCheck(Base):
    """One check of one URL: the verdict and the evidence behind it."""

    __tablename__ = "link_checks"
    id: Mapped[int] = mapped_column(primary_key=True)
    url: Mapped[str] = mapped_column(Text, index=True)
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    verdict: Mapped[str] = mapped_column(String(16))
    status: Mapped[int | None] = mapped_column(Integer)
    final_url: Mapped[str | None] = mapped_column(Text)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    scan_id: Mapped[str | None] = mapped_column(String(64), index=True)


class SearchCache(Base):
    """Cached answers of one search engine to one query, with expiry."""

    __tablename__ = "searches"
    id: Mapped[int] = mapped_column(primary_key=True)
    engine: Mapped[str] = mapped_column(String(32))
    query: Mapped[str] = mapped_column(Text)
    site: Mapped[str] = mapped_column(Text, default="")
    fetched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    hits: Mapped[list[Any]] = mapped_column(JSON, default=list)
    __table_args__ = (Index("ix_searches_key", "engine", "query", "site"),)


class RecoveryRow(Base):
    """One recovery: the request, the answer (JSON of tools.models.Recovery), the time."""

    __tablename__ = "recoveries"
    id: Mapped[int] = mapped_column(primary_key=True)
    url: Mapped[str] = mapped_column(Text, index=True)
    # The natural key (migration 0006): one remembered answer per request.
    request_key: Mapped[str] = mapped_column(String(64), index=True, unique=True)
    request: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    answer: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)


class Pick(Base):
    """The replacement a person chose (or rejected) for a dead URL."""

    __tablename__ = "picks"
    id: Mapped[int] = mapped_column(primary_key=True)
    dead_url: Mapped[str] = mapped_column(Text, index=True)
    chosen_url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(255), index=True, default="")
    by: Mapped[str] = mapped_column(String(255), default="")
    via: Mapped[str] = mapped_column(String(32), default="cli")
    where: Mapped[str] = mapped_column(String(255), default="")
    note: Mapped[str] = mapped_column(Text, default="")
    rejected: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Move(Base):
    """Evidence that a URL moved: pick, live redirect, archived redirect, confirmed recovery."""

    __tablename__ = "moves"
    id: Mapped[int] = mapped_column(primary_key=True)
    old_url: Mapped[str] = mapped_column(Text)
    new_url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(255), index=True)
    source: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("old_url", "new_url", "source", name="uq_moves"),)


class AnswerElsewhere(Base):
    """A dead link's answer that lives on another site than the dead one: a recovery's
    confident answer or a person's pick. Sites that hold answers for several dead sites
    (republishers, mirrors, a merged site) are worth reading in later recoveries."""

    __tablename__ = "answers_elsewhere"
    id: Mapped[int] = mapped_column(primary_key=True)
    dead_url: Mapped[str] = mapped_column(Text)
    dead_site: Mapped[str] = mapped_column(String(255))
    answer_url: Mapped[str] = mapped_column(Text)
    answer_site: Mapped[str] = mapped_column(String(255), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    confidence: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("dead_url", "answer_url", "source",
                                       name="uq_answers_elsewhere"),)


class Watch(Base):
    """A channel watching a site or page, on a schedule."""

    __tablename__ = "watches"
    id: Mapped[int] = mapped_column(primary_key=True)
    channel: Mapped[str] = mapped_column(String(64), index=True)
    target: Mapped[str] = mapped_column(Text)
    schedule: Mapped[str] = mapped_column(String(64), default="weekly")
    created_by: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("channel", "target", name="uq_watch"),)


class LinkEdge(Base):
    """page → URL with the anchor text and context words: feeds link-neighbourhood evidence."""

    __tablename__ = "link_edges"
    id: Mapped[int] = mapped_column(primary_key=True)
    page_url: Mapped[str] = mapped_column(Text)
    target_url: Mapped[str] = mapped_column(Text, index=True)
    anchor: Mapped[str] = mapped_column(Text, default="")
    context: Mapped[str] = mapped_column(Text, default="")
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (Index("ix_link_edges_page", "page_url"),)


class DigestRun(Base):
    """One digest run for one channel; `posted` guards against duplicate posts."""

    __tablename__ = "digest_runs"
    id: Mapped[int] = mapped_column(primary_key=True)
    channel: Mapped[str] = mapped_column(String(64), index=True)
    period: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    status: Mapped[str] = mapped_column(String(16), default="running")
    posted: Mapped[bool] = mapped_column(default=False)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[str] = mapped_column(Text, default="")


class SlackChannel(Base):
    """The Slack workspace a channel belongs to, as last seen in a request from it: which
    installation's token posts its digests, whose App Home lists its watches (store.slack)."""

    __tablename__ = "slack_channels"
    channel: Mapped[str] = mapped_column(String(64), primary_key=True)
    team: Mapped[str] = mapped_column(String(64), index=True)
    enterprise: Mapped[str] = mapped_column(String(64), default="")
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
