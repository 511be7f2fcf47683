"""The scanner's memory: scans (resumable), the pages each crawled, and each link's state.

- `Scan`: one run over one target with its options; `status` running → done. A run that was
  killed stays `running` and is resumed by the next run with the same target and options.
- `ScanPage`: the pages a scan has crawled (done once their links are stored); a resumed
  scan rebuilds its frontier from these pages' stored links instead of fetching them again.
- `LinkStateRow`: the confirmation state of a URL across scans (tools.linkcheck.linkstate), so that
  weekly runs build on each other. Keyed by a hash of the URL (URLs can exceed index limits).

The checks themselves are `LinkCheck` rows (store.models) tagged with `scan_id`; a check and
the state change it causes are written in one transaction (`record_checks`), which is what
makes a resumed or retried scan idempotent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Index,
    Integer,
    String,
    Text,
    bindparam,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from pagetrail.store.db import BulkWrite, Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Base, LinkCheck, LinkEdge, utcnow


def url_key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


class Scan(Base):
    __tablename__ = "scans"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    target: Mapped[str] = mapped_column(Text)
    options_key: Mapped[str] = mapped_column(String(64), index=True)
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="running")
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class ScanPage(Base):
    __tablename__ = "scan_pages"
    id: Mapped[int] = mapped_column(primary_key=True)
    scan_id: Mapped[str] = mapped_column(String(64))
    url_key: Mapped[str] = mapped_column(String(64))
    url: Mapped[str] = mapped_column(Text)
    depth: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[bool] = mapped_column(default=False)
    __table_args__ = (Index("ix_scan_pages_key", "scan_id", "url_key", unique=True),)


class LinkStateRow(Base):
    __tablename__ = "link_states"
    url_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default="new", index=True)
    counted: Mapped[list[Any]] = mapped_column(JSON, default=list)  # ISO times
    history: Mapped[str] = mapped_column(String(16), default="")
    first_failed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_checked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_verdict: Mapped[str] = mapped_column(String(16), default="")
    confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    changed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_scan_id: Mapped[str] = mapped_column(String(64), default="")


def aware(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything here is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


# --- scans --------------------------------------------------------------------------------

@store_call
def open_scan(store: Store, scan_id: str, target: str, options_key: str,
              options: dict[str, Any], *, at: datetime) -> tuple[str, bool]:
    """The unfinished scan with these target and options (resumed), or a new one."""
    with store.session() as s:
        running = s.scalars(select(Scan).where(
            Scan.target == target, Scan.options_key == options_key, Scan.status == "running",
        ).order_by(Scan.started_at.desc()).limit(1)).first()
        if running is not None:
            return running.id, True
        s.add(Scan(id=scan_id, target=target, options_key=options_key, options=options,
                   started_at=at))
    return scan_id, False


@store_call
def finish_scan(store: Store, scan_id: str, summary: dict[str, Any], *, at: datetime) -> None:
    with store.session() as s:
        s.execute(update(Scan).where(Scan.id == scan_id).values(
            status="done", finished_at=at, summary=summary))


@store_call
def get_scan(store: Store, scan_id: str) -> Scan | None:
    with store.session() as s:
        return s.get(Scan, scan_id)


# --- crawl frontier -------------------------------------------------------------------------

@dataclass(frozen=True)
class FrontierPage:
    url: str
    depth: int
    done: bool


def record_pages_done(session: Session, scan_id: str, pages: Iterable[tuple[str, int]]) -> None:
    """Mark crawled pages done (idempotent: a page already recorded is left alone).

    Core statements, not ORM objects: a crawl records thousands of pages, and the unit of
    work's bookkeeping cost more than the inserts."""
    keys = {url_key(url): (url, depth) for url, depth in pages}
    if not keys:
        return
    known = set(session.scalars(select(ScanPage.url_key).where(
        ScanPage.scan_id == scan_id, ScanPage.url_key.in_(list(keys)))))
    rows = [{"scan_id": scan_id, "url_key": k, "url": u, "depth": d, "done": True}
            for k, (u, d) in keys.items() if k not in known]
    _INSERT_PAGES.execute(session.connection(), rows)


@store_call
def done_pages(store: Store, scan_id: str) -> list[FrontierPage]:
    """Pages this scan has crawled and whose links are stored, in crawl order."""
    with store.session() as s:
        rows = s.execute(select(ScanPage.url, ScanPage.depth, ScanPage.done)
                         .where(ScanPage.scan_id == scan_id, ScanPage.done.is_(True))
                         .order_by(ScanPage.id)).all()
    return [FrontierPage(url, depth, done) for url, depth, done in rows]


@store_call
def scan_checks_and_counts(store: Store, scan_id: str
                           ) -> tuple[list[tuple[str, str, int | None, dict[str, Any] | None]],
                                      int, int]:
    """What a scan's report is built from: its checks (url, verdict, status, evidence), the
    number of pages it crawled, and the number of links recorded on those pages.

    Core statements on the session's connection: the ORM's row processing cost more than the
    queries (a scan of a site reads back thousands of checks)."""
    checks, edge_table = LinkCheck.__table__.c, LinkEdge.__table__.c
    with store.session() as s:
        connection = s.connection()
        rows = connection.execute(select(checks.url, checks.verdict, checks.status,
                                         checks.evidence)
                                  .where(checks.scan_id == scan_id)).all()
        pages = connection.execute(select(ScanPage.__table__.c.url)
                                   .where(ScanPage.__table__.c.scan_id == scan_id)
                                   ).scalars().all()
        edges = 0
        for start in range(0, len(pages), 500):
            chunk = list(pages[start:start + 500])
            edges += connection.execute(select(func.count()).select_from(LinkEdge.__table__)
                                        .where(edge_table.page_url.in_(chunk))).scalar_one()
    return [tuple(row) for row in rows], len(pages), int(edges)  # type: ignore[misc]


# --- checks and link states -------------------------------------------------------------------

@store_call
def checked_in_scan(store: Store, scan_id: str) -> dict[str, str]:
    """URL → verdict of the checks already recorded by this scan."""
    with store.session() as s:
        return dict(s.execute(select(LinkCheck.url, LinkCheck.verdict)
                              .where(LinkCheck.scan_id == scan_id)).all())


def load_states(session: Session, urls: Iterable[str]) -> dict[str, LinkStateRow]:
    keys = {url_key(u): u for u in urls}
    rows: dict[str, LinkStateRow] = {}
    key_list = list(keys)
    for start in range(0, len(key_list), 500):
        for row in session.scalars(select(LinkStateRow).where(
                LinkStateRow.url_key.in_(key_list[start:start + 500]))):
            rows[keys[row.url_key]] = row
    return rows


# The columns of a LinkStateRow row, as plain mappings for the scanner's write path.
STATE_COLUMNS = ("url_key", "url", "state", "counted", "history", "first_failed_at",
                 "last_checked_at", "last_verdict", "confirmed_at", "changed_at", "last_scan_id")


def load_state_rows(session: Session, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
    """URL → its LinkStateRow columns (`STATE_COLUMNS`), for the URLs that have a state.

    What `load_states` gives, as dictionaries: the scanner reads and rewrites thousands of
    states per batch, and ORM objects cost more to load and flush than the work itself."""
    keys = {url_key(u): u for u in urls}
    key_list = list(keys)
    columns = [LinkStateRow.__table__.c[name] for name in STATE_COLUMNS]
    rows: dict[str, dict[str, Any]] = {}
    for start in range(0, len(key_list), 500):
        chunk = key_list[start:start + 500]
        for row in session.connection().execute(
                select(*columns).where(LinkStateRow.__table__.c.url_key.in_(chunk))).mappings():
            rows[keys[row["url_key"]]] = dict(row)
    return rows


def save_state_rows(session: Session, new: Sequence[dict[str, Any]],
                    changed: Sequence[dict[str, Any]]) -> None:
    """Insert the `new` LinkStateRow rows and rewrite the `changed` ones (each a full row of
    `STATE_COLUMNS`, matched on url_key), one executemany each."""
    connection = session.connection()
    _INSERT_STATES.execute(connection, new)
    _UPDATE_STATES.execute(connection, [{**row, "key": row["url_key"]} for row in changed])


# The columns of a LinkCheck row as the scanner writes it (all but the generated id).
CHECK_COLUMNS = ("url", "checked_at", "verdict", "status", "final_url", "evidence", "scan_id")


def insert_checks(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """LinkCheck rows (`CHECK_COLUMNS` → value), one executemany."""
    _INSERT_CHECKS.execute(session.connection(), rows)


# The scanner's bulk writes (store.db.BulkWrite: the driver's executemany, without
# SQLAlchemy's per-row work). The UPDATE's SET clause is every column but the key.
_INSERT_PAGES = BulkWrite(lambda: insert(ScanPage.__table__),
                          ("scan_id", "url_key", "url", "depth", "done"))
_INSERT_CHECKS = BulkWrite(lambda: insert(LinkCheck.__table__), CHECK_COLUMNS)
_INSERT_STATES = BulkWrite(lambda: insert(LinkStateRow.__table__), STATE_COLUMNS)
_UPDATE_STATES = BulkWrite(
    lambda: update(LinkStateRow.__table__).where(
        LinkStateRow.__table__.c.url_key == bindparam("key")),
    ("key", *STATE_COLUMNS[1:]))


@store_call
def states_by_url(store: Store, urls: Iterable[str]) -> dict[str, LinkStateRow]:
    with store.session() as s:
        return load_states(s, urls)


@store_call
def states_in(store: Store, states: Sequence[str], urls: Iterable[str]) -> list[LinkStateRow]:
    wanted = set(states)
    return [row for row in states_by_url(store, urls).values() if row.state in wanted]


@store_call
def first_seen(store: Store, urls: Iterable[str]) -> dict[str, datetime]:
    """When each URL was first checked (its oldest LinkCheck): the moment a watched link is
    taken to have been made, for content-drift comparisons."""
    wanted = list(dict.fromkeys(urls))
    seen: dict[str, datetime] = {}
    c = LinkCheck.__table__.c
    with store.session() as s:
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            rows = s.execute(select(c.url, func.min(c.checked_at)).where(c.url.in_(chunk))
                             .group_by(c.url)).all()
            for url, at in rows:
                moment = aware(at)
                if moment is not None:
                    seen[url] = moment
    return seen
