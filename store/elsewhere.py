"""Answers found on another site (table `answers_elsewhere`, written only here).

A recovery's confident answer, or a person's pick, that lives on another site than the dead
link: the sites that hold answers for several dead sites (republishers, mirrors, where a
site merged into) are read by later recoveries (tools.recovery.memory.answer_sites). The
caller validates the URLs and gives the sites."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, or_, select
from sqlalchemy.exc import IntegrityError

from pagetrail.store.db import Store
from pagetrail.store.faults import store_call
from pagetrail.store.models import AnswerElsewhere

ANSWER_SOURCES = ("recovery", "pick")


@dataclass(frozen=True)
class AnswerSite:
    """A site holding answers for other sites' dead links."""

    site: str
    example_url: str  # one answer on it (its scheme and host: where to read the site)
    dead_sites: int  # distinct dead sites it answered for
    answers: int
    last_seen: datetime


@store_call
def insert_answer_elsewhere(store: Store, dead_url: str, answer_url: str, *, dead_site: str,
                            answer_site: str, kind: str, confidence: float,
                            source: str) -> bool:
    """Remember one answer; idempotent per (dead URL, answer URL, source). True when new.
    ValueError for an unknown source or an answer on the dead link's own site."""
    if source not in ANSWER_SOURCES:
        raise ValueError(f"unknown answer source {source!r}; one of {', '.join(ANSWER_SOURCES)}")
    if dead_site == answer_site:
        raise ValueError(f"the answer is on the dead link's own site ({dead_site})")
    if _exists(store, dead_url, answer_url, source):
        return False
    try:
        with store.session() as session:
            session.add(AnswerElsewhere(
                dead_url=dead_url, dead_site=dead_site, answer_url=answer_url,
                answer_site=answer_site, kind=kind, confidence=float(confidence),
                source=source))
        return True
    except IntegrityError:  # the same answer recorded concurrently by another worker
        return False


def _exists(store: Store, dead_url: str, answer_url: str, source: str) -> bool:
    with store.session() as session:
        return session.scalars(select(AnswerElsewhere.id).where(
            AnswerElsewhere.dead_url == dead_url, AnswerElsewhere.answer_url == answer_url,
            AnswerElsewhere.source == source)).first() is not None


@store_call
def answer_sites(store: Store, *, min_dead_sites: int = 2, min_copy_sites: int | None = None,
                 limit: int = 10, exclude: str = "",
                 exclude_dead_url: str = "") -> list[AnswerSite]:
    """Sites holding answers for at least `min_dead_sites` distinct dead sites — or, with
    `min_copy_sites`, holding copies (answers of kind "replacement") for that many —, those
    that answered for the most sites first (then the most recent); `exclude` (a site) left
    out, and the answers recorded for `exclude_dead_url` not counted (what a dead link's own
    recovery taught is no news to it)."""
    dead_sites = func.count(func.distinct(AnswerElsewhere.dead_site))
    copy_sites = func.count(func.distinct(
        case((AnswerElsewhere.kind == "replacement", AnswerElsewhere.dead_site))))
    enough = dead_sites >= min_dead_sites
    if min_copy_sites is not None:
        enough = or_(enough, copy_sites >= min_copy_sites)
    last_seen = func.max(AnswerElsewhere.created_at)
    query = (select(AnswerElsewhere.answer_site, func.max(AnswerElsewhere.answer_url),
                    dead_sites, func.count(AnswerElsewhere.id), last_seen)
             .where(AnswerElsewhere.dead_url != exclude_dead_url)
             .group_by(AnswerElsewhere.answer_site)
             .having(enough)
             .order_by(dead_sites.desc(), last_seen.desc(), AnswerElsewhere.answer_site)
             .limit(limit + 1))
    with store.session() as session:
        rows = session.execute(query).all()
    return [AnswerSite(site, example, int(n_sites), int(n_answers), seen)
            for site, example, n_sites, n_answers, seen in rows if site != exclude][:limit]
