"""A distributed scan's frontier: every URL the scan took on, one row per (scan, URL).

A site scan fanned out over workers (tools.workers.scan_jobs) has no process that holds its crawl in
memory: this table is that memory. A row is a page to crawl (`page`), a link to check
(`link`), or the landing URL of a crawled page's redirect (`alias`, born done: it is neither
crawled nor checked again, as in the in-process scanner). Each row names the page whose job
added it (`parent_key`; "" for the scan's seeds): that job checks the links it added, so a
redelivered page job finds the same links to check instead of none.

- `claim` adds URLs under the scan's caps (URLs per scan, pages per scan), with the scan's row
  locked, so concurrent page jobs never take the scan past a cap, and a URL is taken once;
- `finish_page` marks a page and its links done in the caller's transaction, only those not
  done yet: of two deliveries of one page job, one records (PostgreSQL's row lock makes the
  second wait, then find the rows done);
- the crawl goes level by level, as the in-process scanner's breadth-first queue does (a
  page's depth is its shortest path from a seed, whichever worker is faster): the pages of
  level d+1 are sent (`send_level`) by the job that finds level d over
  (`unfinished_pages`);
- `pending_count` = 0 after a page job's commit means the frontier is drained.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import JSON, Boolean, Index, Integer, String, Text, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Mapped, Session, mapped_column

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import Base
from pagetrail.store.scans import Scan, url_key

EntryKind = Literal["page", "link", "alias"]


class FrontierEntry(Base):
    __tablename__ = "scan_frontier"
    id: Mapped[int] = mapped_column(primary_key=True)
    scan_id: Mapped[str] = mapped_column(String(64))
    url_key: Mapped[str] = mapped_column(String(64))
    url: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(8))  # page | link | alias
    depth: Mapped[int] = mapped_column(Integer, default=0)
    parent_key: Mapped[str] = mapped_column(String(64), default="")
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    sent: Mapped[bool] = mapped_column(Boolean, default=False)  # a page whose job was sent
    # A page's own account, summed when the scan finishes: skipped counts, the problem
    # that kept it unread, the requests its job made.
    notes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    __table_args__ = (Index("ix_scan_frontier_key", "scan_id", "url_key", unique=True),
                      Index("ix_scan_frontier_parent", "scan_id", "parent_key"))


@dataclass(frozen=True)
class Candidate:
    """A URL a page links to, as the scanner's rules see it: `page` if it may be crawled
    (same site, page-like, within the depth), else a link to check."""

    url: str
    page: bool
    depth: int


@dataclass(frozen=True)
class Claimed:
    added: int  # rows this claim inserted
    beyond_cap: int  # candidates refused because the scan holds `max_urls` URLs


@dataclass(frozen=True)
class Entry:
    url: str
    kind: str
    depth: int
    done: bool


def _insert(session: Session) -> Any:
    return postgresql.insert if session.bind.dialect.name == "postgresql" else sqlite.insert  # type: ignore[union-attr]


@store_call
def claim(store: Store, scan_id: str, parent: str, candidates: Sequence[Candidate], *,
          max_urls: int, max_pages: int, aliases: Sequence[str] = ()) -> Claimed:
    """Add `candidates` (in order) to the scan's frontier on behalf of page `parent` (a URL;
    "" for seeds): a URL already there is left alone; a page candidate becomes a page while
    the scan has fewer than `max_pages`, else a link; none is added once the scan holds
    `max_urls` URLs (those are counted in `beyond_cap`). `aliases`: landing URLs of the
    parent's redirect, added done. The scan's row is locked for the claim (one claim at a
    time per scan; SQLite's writer lock does the same)."""
    parent_key = url_key(parent) if parent else ""
    with store.session() as s:
        s.execute(select(Scan.id).where(Scan.id == scan_id).with_for_update())
        c = FrontierEntry.__table__.c
        urls, pages = s.execute(
            select(func.count(), func.count().filter(c.kind == "page"))
            .where(c.scan_id == scan_id)).one()
        keys = {url_key(x.url): x for x in candidates}
        keys.update({url_key(u): Candidate(u, False, 0) for u in aliases})
        known = _existing(s, scan_id, list(keys))
        rows: list[dict[str, Any]] = []
        beyond = 0
        for alias in aliases:
            key = url_key(alias)
            if key in known or urls >= max_urls:
                continue
            known.add(key)
            urls += 1
            rows.append({"scan_id": scan_id, "url_key": key, "url": alias, "kind": "alias",
                         "depth": 0, "parent_key": parent_key, "done": True, "sent": False,
                         "notes": {}})
        for candidate in candidates:
            key = url_key(candidate.url)
            if key in known:
                continue
            if urls >= max_urls:
                beyond += 1
                continue
            kind = "page" if candidate.page and pages < max_pages else "link"
            known.add(key)
            urls += 1
            pages += kind == "page"
            rows.append({"scan_id": scan_id, "url_key": key, "url": candidate.url,
                         "kind": kind, "depth": candidate.depth, "parent_key": parent_key,
                         "done": False, "sent": False, "notes": {}})
        if rows:
            s.execute(_insert(s)(FrontierEntry).on_conflict_do_nothing(
                index_elements=["scan_id", "url_key"]), rows)
    return Claimed(len(rows), beyond)


def _existing(session: Session, scan_id: str, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), 500):
        found.update(session.scalars(select(FrontierEntry.url_key).where(
            FrontierEntry.scan_id == scan_id,
            FrontierEntry.url_key.in_(keys[start:start + 500]))))
    return found


@store_call
def entry(store: Store, scan_id: str, url: str) -> Entry | None:
    with store.session() as s:
        row = s.execute(select(FrontierEntry.url, FrontierEntry.kind, FrontierEntry.depth,
                               FrontierEntry.done).where(
            FrontierEntry.scan_id == scan_id, FrontierEntry.url_key == url_key(url))).first()
    return Entry(*row) if row is not None else None


@store_call
def children(store: Store, scan_id: str, parent: str, kind: EntryKind, *,
             pending_only: bool = True) -> list[Entry]:
    """What page `parent` ("" for seeds) added of `kind`, in the order added."""
    c = FrontierEntry.__table__.c
    query = (select(c.url, c.kind, c.depth, c.done)
             .where(c.scan_id == scan_id, c.parent_key == (url_key(parent) if parent else ""),
                    c.kind == kind).order_by(c.id))
    if pending_only:
        query = query.where(c.done.is_(False))
    with store.session() as s:
        return [Entry(*row) for row in s.execute(query)]


def finish_page(session: Session, scan_id: str, page: str, links: Sequence[str],
                notes: dict[str, Any]) -> set[str] | None:
    """In the caller's transaction: mark page `page` done with its `notes`, and those of
    `links` not done yet. None when the page was done already (another delivery recorded
    it: record nothing); else the links this call marked (record their checks only)."""
    c = FrontierEntry.__table__.c
    marked = session.execute(update(FrontierEntry.__table__).where(
        c.scan_id == scan_id, c.url_key == url_key(page), c.done.is_(False))
        .values(done=True, notes=notes)).rowcount
    if not marked:
        return None
    keys = {url_key(u): u for u in links}
    done: set[str] = set()
    key_list = list(keys)
    for start in range(0, len(key_list), 500):
        chunk = key_list[start:start + 500]
        pending = session.scalars(select(c.url_key).where(
            c.scan_id == scan_id, c.url_key.in_(chunk), c.done.is_(False))).all()
        if pending:
            session.execute(update(FrontierEntry.__table__).where(
                c.scan_id == scan_id, c.url_key.in_(list(pending))).values(done=True))
            done.update(keys[k] for k in pending)
    return done


@store_call
def unfinished_pages(store: Store, scan_id: str, depth: int) -> int:
    """Pages at `depth` or less not done yet: 0 means the crawl's level `depth` is over."""
    c = FrontierEntry.__table__.c
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(FrontierEntry).where(
            c.scan_id == scan_id, c.kind == "page", c.depth <= depth,
            c.done.is_(False))) or 0)


@store_call
def send_level(store: Store, scan_id: str, depth: int,
               send: Callable[[list[Entry]], None]) -> int:
    """Hand the pages at `depth` not sent yet to `send`, and mark them sent, in one
    transaction: the rows stay locked while `send` runs, so of two callers one sends them
    (the other then finds none), and a caller that dies before its commit leaves them unsent
    for the next caller. Returns how many were sent."""
    c = FrontierEntry.__table__.c
    with store.session() as s:
        rows = s.execute(update(FrontierEntry.__table__).where(
            c.scan_id == scan_id, c.kind == "page", c.depth == depth, c.sent.is_(False),
            c.done.is_(False)).values(sent=True).returning(c.url, c.kind, c.depth, c.done)
        ).all()
        entries = sorted((Entry(*row) for row in rows), key=lambda e: e.url)
        if entries:
            send(entries)
    return len(entries)


@store_call
def pending_count(store: Store, scan_id: str) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(FrontierEntry).where(
            FrontierEntry.scan_id == scan_id, FrontierEntry.done.is_(False))) or 0)


@store_call
def page_notes(store: Store, scan_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(url, notes) of the scan's pages, in the order they were added."""
    with store.session() as s:
        return [(url, notes or {}) for url, notes in s.execute(
            select(FrontierEntry.url, FrontierEntry.notes).where(
                FrontierEntry.scan_id == scan_id, FrontierEntry.kind == "page")
            .order_by(FrontierEntry.id))]


@store_call
def counts(store: Store, scan_id: str) -> dict[str, int]:
    """Rows per kind (tests and progress)."""
    with store.session() as s:
        return dict(s.execute(select(FrontierEntry.kind, func.count()).where(
            FrontierEntry.scan_id == scan_id).group_by(FrontierEntry.kind)).all())


@store_call
def begin_finish(store: Store, scan_id: str) -> bool:
    """Take the scan from running to finishing; True for the one caller that did it (the
    coordinator of a drained frontier)."""
    with store.session() as s:
        return bool(s.execute(update(Scan).where(Scan.id == scan_id, Scan.status == "running")
                              .values(status="finishing")).rowcount)


@store_call
def open_scan_with_id(store: Store, scan_id: str, target: str, options_key: str,
                      options: dict[str, Any]) -> Scan:
    """The scan `scan_id`, created (status running) if it is not there yet."""
    with store.session() as s:
        s.execute(_insert(s)(Scan).on_conflict_do_nothing(index_elements=["id"]),
                  [{"id": scan_id, "target": target, "options_key": options_key,
                    "options": options, "status": "running", "summary": {}}])
    with store.session() as s:
        scan = s.get(Scan, scan_id)
        assert scan is not None
        return scan
