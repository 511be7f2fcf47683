"""The link's evidence, gathered before the search: the archived copy and archived
redirects (Memento), the linking page, and the query evidence drawn from them (title,
lexical signatures, tags, anchor, context, URL words, backlinks' anchors)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pagetrail.tools import policy
from pagetrail.tools.archive.memento import CaptureListings, archived_redirects, fetch_memento
from pagetrail.tools.content.document import parse_document
from pagetrail.tools.content.signature import extract_signature
from pagetrail.tools.content.terms import frequency_terms, kld_terms, text_terms, url_terms
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.evidence.queryplan import QueryEvidence
from pagetrail.tools.models import ArchivedRedirect, EngineFailure, Memento
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.context import DeadURL, Findings
from pagetrail.tools.settings import Settings


async def memento(url: DeadURL, fetcher: Fetcher, settings: Settings, found: Findings,
                  listings: CaptureListings, at: datetime | None) -> Memento | None:
    down: list[str] = []
    try:
        return await fetch_memento(url, fetcher, at=at, settings=settings,
                                   listings=listings, unavailable=down)
    except PagetrailError as exc:
        archive_failure(found, f"{exc.code}: {exc}")
        return None
    finally:
        for note in down:
            archive_failure(found, note)


async def redirects(url: DeadURL, fetcher: Fetcher, settings: Settings, found: Findings,
                    listings: CaptureListings, allowed: bool) -> list[ArchivedRedirect]:
    if not allowed:
        return []
    down: list[str] = []
    try:
        return await archived_redirects(url, fetcher, settings, listings,
                                        unavailable=down)
    except PagetrailError as exc:
        archive_failure(found, f"{exc.code}: {exc}")
        return []
    finally:
        for note in down:
            archive_failure(found, note)


def archive_failure(found: Findings, error: str) -> None:
    """An archive's failure, once per recovery (the memento and redirect lookups share
    the archives). The archive layer names each note itself (`<archive>: archive_excluded: …`,
    `<archive>: archive_unavailable: …`): recorded as named."""
    found.fail(EngineFailure(engine="archive", error=error[:500]), once="equal")


async def source_page(fetcher: Fetcher, found: Findings, source_url: str | None) -> bytes | None:
    if not source_url:
        return None
    try:
        response = await fetcher.get(source_url)
    except PagetrailError as exc:
        found.fail(EngineFailure(engine="source", error=f"{exc.code}: {exc}"))
        return None
    return response.content if response.status == 200 and response.is_html else None


def terms(text: str, lang: str, k: int) -> list[str]:
    if not text:
        return []
    from pagetrail.tools.content.terms import WordfreqBackground

    return [t.term for t in kld_terms(text_terms(text, lang), WordfreqBackground(lang), k)]


def query_evidence(url: DeadURL, store: memory.Store | None, lnls: bool, document: Any,
                   anchor: str, anchor_facts: Any, context: str, source_html: bytes | None,
                   source_url: str | None, lang: str,
                   evidence: dict[str, object]) -> QueryEvidence:
    """What the queries are made of (CPU work: run off the loop). `evidence` receives the
    figures the answer shows."""
    qe = QueryEvidence()
    expansion: dict[str, list[str]] = {}
    if anchor_facts is not None:
        qe.anchor = anchor
        qe.anchor_usable = not anchor_facts.is_stop_anchor and bool(anchor_facts.terms)
        evidence["anchor"] = {"text": anchor[:300], "terms": anchor_facts.terms,
                              "named_entities": anchor_facts.named_entities,
                              "usable_alone": anchor_facts.usable_alone}
    if context:
        expansion["context"] = terms(context, lang, policy.EVIDENCE_TERMS)
    url_words = [t.term for t in url_terms(url, lang=lang)]
    qe.url_terms = url_words
    expansion["url"] = url_words[:policy.EVIDENCE_TERMS]
    if document is not None:
        signature = extract_signature(document)
        qe.title = document.title
        qe.ls5, qe.ls7 = signature.ls5, signature.ls7
        expansion["memento"] = [t.term for t in signature.kld_terms[:policy.EVIDENCE_TERMS]]
        qe.tags = [k for k in document.keywords if k][:policy.TAG_TERMS]
        evidence.update(title=document.title, ls5=signature.ls5, ls7=signature.ls7,
                        keywords=document.keywords[:policy.EVIDENCE_TERMS])
    if source_html:
        page = parse_document(source_html, source_url or "")
        expansion["linking"] = [t.term for t in frequency_terms(
            text_terms(page.text, page.lang or lang), policy.EVIDENCE_TERMS)]
    if store is not None and lnls:
        anchors = memory.backlink_anchors(store, url)
        if anchors:
            qe.lnls = [t.term for t in frequency_terms(text_terms(" ".join(anchors), lang),
                                                       policy.LNLS_TERMS)]
            evidence["lnls"] = qe.lnls
    qe.expansion_terms = expansion
    evidence["url_terms"] = url_words
    evidence["context_terms"] = expansion.get("context", [])
    return qe
