"""What people and the web taught the engine: picks, moves, answers elsewhere, watches.

The engine's side of store.picks / store.moves / store.watches: it validates and normalises
URLs (tools.net.urls) and hands the store already-made keys and hosts, so that the store knows
no URL rules."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

from pagetrail.store import watches as _watches
from pagetrail.store.db import STORE_ERRORS, Store
from pagetrail.store.elsewhere import AnswerSite, insert_answer_elsewhere
from pagetrail.store.elsewhere import answer_sites as _answer_sites
from pagetrail.store.faults import is_store_fault
from pagetrail.store.linkgraph import backlinks
from pagetrail.store.moves import MOVE_SOURCES, MoveRecord, insert_move, moves_on_host
from pagetrail.store.picks import PickRecord, insert_pick, picked_since, picks_on_host
from pagetrail.store.recoveries import latest_recovery, remember_recovery
from pagetrail.store.scans import first_seen
from pagetrail.store.searches import cache_hits, cached_hits
from pagetrail.tools import policy
from pagetrail.tools.errors import InvalidURL
from pagetrail.tools.models import EngineFailure, Recovery
from pagetrail.tools.net.urls import normalize_url, same_url, site_of, validate_url

__all__ = [
    "MOVE_SOURCES", "AnswerSite", "MoveRecord", "PickRecord", "Remembered", "Store",
    "add_watch", "answer_sites", "backlink_anchors", "cached_answer", "first_seen",
    "keep_listing", "kept_listing", "list_watches", "moves_for_site", "picks_and_rejections",
    "picks_for", "record_answer_elsewhere", "record_move", "record_pick", "remember_answer",
    "remove_watch", "stored", "watched_channels",
]

log = logging.getLogger(__name__)

LISTING_CACHE = "site listing"  # the search cache's engine name for an answer site's map

T = TypeVar("T")


FailFn = Callable[[EngineFailure], None]  # where a failure is recorded (`Findings.fail`)


async def stored(fail: FailFn, what: str, default: T,
                 call: Callable[..., T], *args: Any, required: bool = False,
                 **kwargs: Any) -> T:
    """A store call in a thread; a database failure is the answer's named partial failure
    (`store`), never a crash of the recovery nor a silent gap.

    The store already waits out a fault within its budget (store/faults.py). A `required`
    write (a learned move, where an answer was found) that still meets the database away
    raises the named StoreUnavailable: the run stops, resumable, rather than losing what it
    learned; other calls (caches, reads that only add evidence) become the named failure."""
    try:
        return await asyncio.to_thread(call, *args, **kwargs)
    except STORE_ERRORS as exc:
        if required and is_store_fault(exc):
            raise
        log.warning("store failed while %s: %s", what, exc)
        fail(EngineFailure(engine="store", error=f"{what}: {type(exc).__name__}: {exc}"[:500]))
        return default


def record_move(store: Store, old_url: str, new_url: str, *, source: str) -> MoveRecord | None:
    """Remember that `old_url` moved to `new_url`; idempotent per (old, new, source).

    Returns None for a non-move (same URL). Raises InvalidURL for a bad URL or source.
    """
    old_url, new_url = validate_url(old_url), validate_url(new_url)
    if source not in MOVE_SOURCES:
        raise InvalidURL(f"unknown move source {source!r}; one of {', '.join(MOVE_SOURCES)}")
    if same_url(old_url, new_url):
        return None
    return insert_move(store, old_url, new_url, host=site_of(old_url), source=source)


def moves_for_site(store: Store, url_or_site: str, *, limit: int = 500) -> list[MoveRecord]:
    """Known moves whose old URL is on the same site (www. ignored), newest first."""
    site = site_of(url_or_site) if "://" in url_or_site else url_or_site.lower().removeprefix(
        "www.")
    return moves_on_host(store, site, limit=limit)


def record_pick(store: Store, dead_url: str, chosen_url: str, *, by: str = "",
                via: str = "cli", where: str = "", note: str = "",
                rejected: bool = False) -> PickRecord:
    """Store a pick (or, with rejected=True, a 'not it'); a pick is also move evidence."""
    pick = insert_pick(store, dead_url, chosen_url, host=site_of(dead_url), by=by, via=via,
                       where=where, note=note, rejected=rejected)
    if not rejected:
        record_move(store, dead_url, chosen_url, source="pick")
        record_answer_elsewhere(store, dead_url, chosen_url, kind="pick", confidence=1.0,
                                source="pick")
    return pick


def record_answer_elsewhere(store: Store, dead_url: str, answer_url: str, *, kind: str,
                            confidence: float, source: str = "recovery") -> bool:
    """Remember an answer that lives on another site than the dead link (a recovery's
    confident answer, a pick). False when it is on the same site (nothing to learn about
    other sites) or already known. Raises InvalidURL for a bad URL."""
    dead_url, answer_url = validate_url(dead_url), validate_url(answer_url)
    dead_site, answer_site = site_of(dead_url), site_of(answer_url)
    if dead_site == answer_site:
        return False
    return insert_answer_elsewhere(store, dead_url, answer_url, dead_site=dead_site,
                                   answer_site=answer_site, kind=kind, confidence=confidence,
                                   source=source)


def answer_sites(store: Store, *, exclude_url: str = "",
                 min_dead_sites: int = policy.ANSWER_SITE_MIN_DEAD_SITES,
                 min_copy_sites: int | None = policy.ANSWER_SITE_MIN_COPY_SITES,
                 limit: int = 4) -> list[AnswerSite]:
    """Sites that held answers for at least `min_dead_sites` other dead sites, or copies for
    `min_copy_sites`: where an answer for a new dead link may live too (a republisher, a
    mirror). The dead link's own site is left out, and what its own recoveries recorded is
    not counted."""
    return _answer_sites(store, min_dead_sites=min_dead_sites, min_copy_sites=min_copy_sites,
                         limit=limit, exclude=site_of(exclude_url) if exclude_url else "",
                         exclude_dead_url=exclude_url)


def picks_for(store: Store, dead_url: str) -> list[PickRecord]:
    """Every pick and rejection for this URL (normalised match), newest first."""
    key = normalize_url(dead_url)
    return [p for p in picks_on_host(store, site_of(dead_url))
            if normalize_url(p.dead_url) == key]


def add_watch(store: Store, channel: str, target: str, *, by: str = "") -> bool:
    """Watch `target` in `channel`; False when the channel already watches it."""
    return _watches.add_watch(store, channel, target, key=normalize_url, by=by)


def remove_watch(store: Store, channel: str, target: str) -> bool:
    return _watches.remove_watch(store, channel, target, key=normalize_url)


list_watches = _watches.list_watches
watched_channels = _watches.watched_channels


def picks_and_rejections(store: Store, url: str) -> tuple[list[str], set[str]]:
    """The URLs people chose for this dead URL (newest first, once each), and the
    normalised URLs they said are not it."""
    chosen: list[str] = []
    rejected: set[str] = set()
    for pick in picks_for(store, url):
        if pick.rejected:
            rejected.add(normalize_url(pick.chosen_url))
        elif pick.chosen_url not in chosen:
            chosen.append(pick.chosen_url)
    return chosen, rejected


class Remembered(NamedTuple):
    """An answer given before, and when it was given."""

    recovery: Recovery
    given_at: datetime


def cached_answer(store: Store, url: str, key: str) -> Remembered | None:
    """The answer remembered for this request within policy.ANSWER_CACHE_TTL, unless a person picked
    something on the site since (then it is answered afresh)."""
    row = latest_recovery(store, key)
    if row is None or datetime.now(UTC) - row.created_at > policy.ANSWER_CACHE_TTL:
        return None
    if picked_since(store, site_of(url), row.created_at):
        return None  # a person spoke since: answer afresh
    recovery = Recovery.model_validate(row.answer)
    recovery.cached = True
    recovery.requests = 0
    return Remembered(recovery, row.created_at)


def remember_answer(store: Store, url: str, key: str, recovery: Recovery,
                    request: dict[str, object]) -> None:
    remember_recovery(store, url, key, request=request,
                      answer=recovery.model_dump(mode="json"), seconds=recovery.seconds)


def kept_listing(store: Store, origin: str) -> dict[str, str] | None:
    """An answer site's map (URL → link text) kept within policy.LISTING_TTL, or None."""
    rows = cached_hits(store, LISTING_CACHE, "", origin, datetime.now(UTC))
    return None if rows is None else {str(row["url"]): str(row.get("text", "")) for row in rows}


def keep_listing(store: Store, origin: str, pages: dict[str, str]) -> None:
    cache_hits(store, LISTING_CACHE, "", origin,
               [{"url": url, "text": text} for url, text in pages.items()],
               now=datetime.now(UTC), ttl=policy.LISTING_TTL)


def backlink_anchors(store: Store, url: str) -> list[str]:
    """The anchor texts of the pages known to link to this URL (the link neighbourhood)."""
    return [e.anchor for e in backlinks(store, url, limit=10) if e.anchor]
