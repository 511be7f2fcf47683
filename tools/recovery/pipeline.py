"""recover(): the product's main job — check, archives, evidence, queries, ranking.

The stages follow DESIGN.md and the seed papers: confirm the link is dead; find the best
archived copy (Memento) and archived redirects; draw evidence from the copy (title, lexical
signatures, tags) and from the link (anchor, context, URL, linking page, backlinks); issue
queries cheapest-and-best first, fetching and ranking candidates after each stage and
stopping once a candidate is confirmed moved; answer with kind, confidence and evidence.
Every failure of a source (archive down, engine rate-limiting) is recorded in the answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pagetrail.store.db import STORE_ERRORS
from pagetrail.tools.archive.memento import CaptureListings, archived_redirects, fetch_memento
from pagetrail.tools.content.document import (
    extract_links,
    link_context,
    looks_like_error_page,
    parse_document,
)
from pagetrail.tools.content.signature import extract_signature
from pagetrail.tools.content.terms import frequency_terms, kld_terms, text_terms, url_terms
from pagetrail.tools.content.text import guess_language
from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.engines.overlap import rank_by_overlap, rank_by_url
from pagetrail.tools.engines.registry import build_engine_set
from pagetrail.tools.engines.service import SearchService
from pagetrail.tools.engines.site import SiteEngine, site_origin
from pagetrail.tools.errors import PagetrailError, RefusedAddress
from pagetrail.tools.evidence.anchor import anchor_info
from pagetrail.tools.evidence.queryplan import QueryEvidence, plan_queries
from pagetrail.tools.models import (
    ArchivedRedirect,
    Candidate,
    CheckResult,
    EngineFailure,
    Hit,
    Link,
    Memento,
    Query,
    Recovery,
    Scores,
)
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.urls import host_of, host_variants, normalize_url, site_of, validate_url
from pagetrail.tools.offload import off_loop
from pagetrail.tools.ranking.rank import (
    CandidateEvidence,
    Reference,
    exact_url_key,
    is_moved,
    rank_candidates,
    reciprocal_rank_fusion,
)
from pagetrail.tools.recovery.siblings import transplants
from pagetrail.tools.settings import Settings, get_settings

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int, int | None, str], Any]

SITE_LOCAL = ("site", "cdx")  # engines that look inside the dead site itself
NOT_WEB = frozenset({*SITE_LOCAL, "local"})  # engines that are no web search
NEW_HOSTS = 4  # other sites (where top candidates live) whose own map is read, per recovery
# How deep in the ranking a related page on another site names a site worth listing: an
# unindexed replacement sits on a site whose other pages rank low (another article of it).
NEIGHBOUR_DEPTH = 8
LINK_CANDIDATES = 5  # link-graph targets fetched per round, best overlap first
# Sites that held other dead links' answers (a republisher, a mirror: store.elsewhere) whose
# own map is read when the dead site and the first searches did not settle the link.
ANSWER_SITES = 4
ANSWER_SITE_HITS = 2  # pages taken from each such site, best overlap first
ANSWER_SITE_RECALL = 0.5  # share of a query's terms a listed page must carry to be taken
# An answer this sure teaches where answers live: below the answer threshold (a replacement
# rarely scores high), and one site is only read once it held answers for two other sites.
ANSWER_SITE_EVIDENCE = 0.3
COPY_TITLE = 0.8  # a page on another site with the lost page's title is a copy of it,
COPY_URL = 0.7  # and so is one whose address keeps the lost page's words
LISTING_CACHE = "site listing"  # the search cache's engine name for an answer site's map
LISTING_TTL = timedelta(days=1)
MAX_TRANSPLANTS = 4  # the dead slug tried under this many sibling folders, per recovery
RECOMMEND_AT = 0.5  # confidence from which the top live candidate is the answer
CONFIRM_TITLE = 0.8  # title similarity that, with a verified move, ends the search
CONFIRM_CONFIDENCE = 0.9  # a candidate this sure (and CONFIRM_MARGIN ahead) ends it too
CONFIRM_MARGIN = 0.3
CACHE_TTL = timedelta(days=1)


@dataclass
class Budget:
    """Limits of one recovery (defaults from settings)."""

    max_queries: int = 24
    max_candidates: int = 40
    seconds: float = 30.0
    hits_per_query: int = 10
    fetch_per_query: int = 5

    @classmethod
    def from_settings(cls, settings: Settings) -> Budget:
        return cls(max_queries=settings.max_queries, max_candidates=settings.max_candidates,
                   seconds=settings.recovery_seconds)


@dataclass
class _Run:
    """Mutable state of one recovery."""

    url: str
    settings: Settings
    fetcher: Fetcher
    budget: Budget
    methods: frozenset[str] | None
    progress: ProgressFn | None
    store: Any = None  # the store, when the recovery has one (answer sites' maps are kept)
    queries: list[Query] = field(default_factory=list)
    failures: list[EngineFailure] = field(default_factory=list)
    candidates: dict[str, CandidateEvidence] = field(default_factory=dict)  # normalised url
    fetched: set[str] = field(default_factory=set)
    timings: dict[str, float] = field(default_factory=dict)  # seconds spent per stage
    host_silent: bool = False  # the dead URL's host never answered (timeout)
    site_gone: bool = False  # the dead URL's host no longer serves its site (DNS, parked)
    listings: CaptureListings = field(default_factory=CaptureListings)  # one CDX call a run
    archived_redirects: list[ArchivedRedirect] = field(default_factory=list)
    outlinks: dict[str, list[Link]] = field(default_factory=dict)  # fetched page → its links
    linked_from: set[str] = field(default_factory=set)  # pages whose links were followed
    listed_sites: set[str] = field(default_factory=set)  # sites whose own map was read
    transplanted: set[str] = field(default_factory=set)  # the slug under siblings' folders
    unasked: list[str] = field(default_factory=list)  # web queries that could not be asked
    answer_sites: list[str] = field(default_factory=list)  # origins of sites that held answers
    answer_sites_read: bool = False
    search_evidence: dict[str, object] = field(default_factory=dict)  # the eval's figures
    _stage: tuple[str, float] | None = None

    def enter(self, stage: str) -> None:
        """Account the time since the last stage change to that stage."""
        now = time.monotonic()
        if self._stage is not None:
            name, since = self._stage
            self.timings[name] = round(self.timings.get(name, 0.0) + now - since, 3)
        self._stage = (stage, now)

    def allowed(self, method: str) -> bool:
        return self.methods is None or method in self.methods

    async def report(self, stage: str, done: int = 0, total: int | None = None,
                     message: str = "") -> None:
        self.enter(stage)
        if self.progress is None:
            return
        result = self.progress(stage, done, total, message)
        if inspect.isawaitable(result):
            await result

    def add_hit(self, method: str, hit: Hit) -> CandidateEvidence | None:
        # Only the very same URL is excluded: http→https or a www. change can be the move.
        if exact_url_key(hit.url) == exact_url_key(self.url):
            return None
        key = normalize_url(hit.url)
        evidence = self.candidates.get(key)
        if evidence is None:
            if len(self.candidates) >= self.budget.max_candidates * 3:
                return None
            evidence = self.candidates[key] = CandidateEvidence(
                url=hit.url, title=hit.title, snippet=hit.snippet
            )
        evidence.hits.append((method, hit.engine, max(1, hit.rank)))
        return evidence


def request_key(url: str, **request: object) -> str:
    payload = json.dumps({"url": url, **request}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


async def recover(
    url: str,
    *,
    source_url: str | None = None,
    anchor: str | None = None,
    context: str | None = None,
    link_date: datetime | None = None,
    settings: Settings | None = None,
    fetcher: Fetcher | None = None,
    store: Any | None = None,
    methods: frozenset[str] | None = None,
    progress: ProgressFn | None = None,
    budget: Budget | None = None,
    use_cache: bool = True,
) -> Recovery:
    """Recover a dead link. Raises InvalidURL / RefusedAddress for unusable input."""
    url = validate_url(url)
    if source_url:
        source_url = validate_url(source_url)
    settings = settings or get_settings()
    budget = budget or Budget.from_settings(settings)
    key = request_key(url, source=source_url, anchor=anchor, context=context,
                      date=link_date, methods=sorted(methods) if methods else None)
    store_failures: list[EngineFailure] = []
    if store is not None and use_cache:
        cached = await _stored(store_failures, "cached answer", None, _cached_answer,
                               store, url, key)
        if cached is not None:
            return cached
    started = time.monotonic()
    own_fetcher = fetcher is None
    fetcher = fetcher or Fetcher(settings)
    requests_before = fetcher.requests
    try:
        if own_fetcher:
            await fetcher.__aenter__()
        run = _Run(url, settings, fetcher, budget, methods, progress, store,
                   failures=store_failures)
        recovery = await _recover(run, source_url=source_url, anchor=anchor or "",
                                  context=context or "", link_date=link_date, store=store)
    finally:
        if own_fetcher:
            await fetcher.aclose()
    recovery.requests = fetcher.requests - requests_before
    recovery.seconds = round(time.monotonic() - started, 3)
    if store is not None:
        # Learn (FABLE): what this recovery saw move teaches the site's rewrite rules.
        for old_url, new_url, source in learned_moves(recovery, run.archived_redirects):
            await _stored(recovery.failures, f"recording the {source}", None,
                          _record_move, store, old_url, new_url, source)
        for found in answers_elsewhere(recovery):
            await _stored(recovery.failures, "recording where an answer was found", False,
                          _record_elsewhere, store, recovery.url, found)
        await _stored(recovery.failures, "remembering the answer", None, _remember,
                      store, url, key, recovery, {
                          "source_url": source_url, "anchor": anchor, "context": context,
                          "link_date": link_date.isoformat() if link_date else None,
                      })
    return recovery


T = TypeVar("T")


async def _stored(failures: list[EngineFailure], what: str, default: T,
                  call: Callable[..., T], *args: Any) -> T:
    """A store call in a thread; a database failure is the answer's named partial failure
    (`store`), never a crash of the recovery nor a silent gap."""
    try:
        return await asyncio.to_thread(call, *args)
    except STORE_ERRORS as exc:
        log.warning("store failed while %s: %s", what, exc)
        failures.append(EngineFailure(engine="store",
                                      error=f"{what}: {type(exc).__name__}: {exc}"[:500]))
        return default


def learned_moves(recovery: Recovery, archived: Sequence[ArchivedRedirect],
                  ) -> list[tuple[str, str, str]]:
    """(old URL, new URL, move source) that this recovery observed: a permanent live
    redirect of the dead URL, its archived redirects, and a confirmed move (a moved
    candidate of confidence ≥ CONFIRM_CONFIDENCE). Pure; the sources are store.moves'."""
    moves: list[tuple[str, str, str]] = []
    if recovery.answer == "redirected" and recovery.check and recovery.check.final_url:
        moves.append((recovery.url, recovery.check.final_url, "live redirect"))
    moves += [(r.original_url, r.target_url, "archived redirect") for r in archived]
    top = next((c for c in recovery.candidates if c.kind != "archived"), None)
    if (recovery.answer == "moved" and top is not None and top.kind == "moved"
            and top.confidence >= CONFIRM_CONFIDENCE):
        moves.append((recovery.url, top.url, "confirmed recovery"))
    return moves


def answers_elsewhere(recovery: Recovery) -> list[Candidate]:
    """Live candidates on another site than the dead link that say answers live there: the
    best one when it scores ANSWER_SITE_EVIDENCE, and among the top ten any copy of the lost
    page (`_is_copy`: a republisher's, a mirror's, the site's new address). What teaches
    later recoveries which sites hold answers. Pure."""
    if recovery.answer in ("alive", "unverified"):  # not dead: nothing was recovered
        return []
    dead_site = site_of(recovery.url)
    live = [c for c in recovery.candidates if c.kind != "archived"][:10]
    found = [c for i, c in enumerate(live)
             if site_of(c.url) != dead_site and c.confidence > 0.0
             and ((i == 0 and c.confidence >= ANSWER_SITE_EVIDENCE) or _is_copy(c))]
    return found


def _is_copy(candidate: Candidate) -> bool:
    """It bears the lost page's title (or the anchor's words, when there is no title to
    compare) or its address keeps the lost page's words (a slug carried over)."""
    scores = candidate.scores
    title = scores.title_similarity if scores.title_similarity is not None \
        else scores.anchor_dice
    return (title or 0.0) >= COPY_TITLE or scores.url_similarity >= COPY_URL


def _record_elsewhere(store: Any, dead_url: str, answer: Candidate) -> bool:
    from pagetrail.tools.errors import InvalidURL
    from pagetrail.tools.recovery.memory import record_answer_elsewhere

    try:
        return record_answer_elsewhere(store, dead_url, answer.url, kind=answer.kind,
                                       confidence=answer.confidence)
    except InvalidURL as exc:  # a page's final URL no URL parser accepts: no evidence
        log.info("answer %s for %s not recorded: %s", answer.url, dead_url, exc)
        return False


def _record_move(store: Any, old_url: str, new_url: str, source: str) -> None:
    from pagetrail.tools.errors import InvalidURL
    from pagetrail.tools.recovery.memory import record_move

    try:
        record_move(store, old_url, new_url, source=source)
    except InvalidURL as exc:  # an archive's Location no URL parser accepts: no evidence
        log.info("move %s → %s not recorded: %s", old_url, new_url, exc)


async def _recover(run: _Run, *, source_url: str | None, anchor: str, context: str,
                   link_date: datetime | None, store: Any | None) -> Recovery:
    from pagetrail.tools.linkcheck.check import check_link

    await run.report("checking", 0, None, run.url)
    check = await check_link(run.url, run.fetcher, settings=run.settings)
    early = _answer_for_live(run.url, check)
    if early is not None:
        early.failures.extend(run.failures)  # the store's, if its cache could not be read
        if early.answer == "alive":
            await _drift(run, early, link_date, store)
        return early
    run.host_silent = _silent(check)
    run.site_gone = _site_gone(check)

    await run.report("archive", 0, None, "looking for archived copies")
    at = link_date or check.checked_at
    memento, redirects, source_html = await asyncio.gather(
        _memento(run, at), _archived_redirects(run), _source_page(run, source_url),
    )
    if source_html and not anchor:
        found = link_context(source_html, run.url, page_url=source_url or "")
        if found is not None:
            anchor, context = found.anchor, context or found.context

    run.enter("evidence")
    document = memento.document if memento else None
    lang = (document.lang if document and document.lang else "") or guess_language(
        f"{anchor} {context}", "en")
    anchor_facts = anchor_info(anchor, lang) if anchor else None
    evidence: dict[str, object] = {"lang": lang}

    # Direct candidates first: picks, archived redirects, the site's inferred rewrite rules.
    picks, rejected = await _stored(run.failures, "reading picks", ([], set()), _picks,
                                    store, run.url) if store else ([], set())
    for chosen in picks:
        run.add_hit("PICK", Hit(url=chosen, rank=1, engine="store"))
    run.archived_redirects = list(redirects)
    if run.allowed("REDIRECT"):
        for i, redirect in enumerate(redirects, 1):
            run.add_hit("REDIRECT", Hit(url=redirect.target_url, rank=i, engine="archive"))
        evidence["archived_redirects"] = [r.target_url for r in redirects]
    rule_support: dict[str, float] = {}
    if store is not None and run.allowed("INFER"):
        for proposal_url, support in await _stored(
                run.failures, "reading known moves", [], _inferred, store, run.url,
                document.title if document else ""):
            run.add_hit("INFER", Hit(url=proposal_url, rank=1, engine="rules"))
            rule_support[normalize_url(proposal_url)] = support

    # Signature, linking-page parse and term models: CPU work, off the loop (tools.offload).
    query_evidence = await off_loop(_query_evidence, run, document, anchor, anchor_facts,
                                    context, source_html, source_url, lang, store, evidence)
    reference = Reference(
        dead_url=run.url, memento=document, memento_date=memento.datetime if memento else None,
        anchor=anchor, anchor_usable=bool(anchor_facts and not anchor_facts.is_stop_anchor),
        context_terms=_terms(context, lang, 20),
        linking_terms=list(query_evidence.expansion_terms.get("linking", [])),
        picks={normalize_url(u): 1.0 for u in picks},
        rule_support=rule_support, lang=lang,
    )

    ranked: list[Candidate] = []
    try:
        async with asyncio.timeout(run.budget.seconds):
            ranked = await _search_and_rank(run, reference, query_evidence, memento, link_date,
                                            store)
    except TimeoutError:
        run.failures.append(EngineFailure(engine="budget",
                                          error=f"stopped after {run.budget.seconds:.0f} s"))
        ranked = await _rank(run, reference)
    ranked = [c for c in ranked if normalize_url(c.url) not in rejected]
    recovery = _answer(run, check, memento, ranked, anchor_facts, evidence)
    if check.verdict == "transient":
        recovery.reason = ("the link did not answer (timeout): it may only be down for now; "
                           + recovery.reason)
    if recovery.answer == "none" and memento is None:
        recovery.related_archived = await _related_archived(run, link_date, evidence)
    run.enter("done")
    recovery.evidence["timings"] = run.timings
    if run.search_evidence:
        recovery.evidence["search"] = run.search_evidence
    return recovery


async def _related_archived(run: _Run, link_date: datetime | None,
                            evidence: dict[str, object]) -> list[dict[str, object]]:
    """Lost and never archived: archived pages on the same topic (seed 004), marked related."""
    from pagetrail.tools.errors import ModelMissing
    from pagetrail.tools.recovery.related import recommend_archived

    await run.report("related", 0, None, "archived pages on the same topic")
    try:
        async with asyncio.timeout(max(5.0, run.budget.seconds / 2)):
            result = await recommend_archived(run.url, link_date, 5, settings=run.settings)
    except ModelMissing:
        evidence["related"] = "no URI classifier trained (pagetrail classify train)"
        return []
    except (PagetrailError, TimeoutError) as exc:
        run.failures.append(EngineFailure(engine="related", error=str(exc) or "timed out"))
        return []
    return [item.to_dict() for item in result.items]


async def _drift(run: _Run, recovery: Recovery, link_date: datetime | None,
                 store: Any | None) -> None:
    """A working link: does it still serve what was linked? Compared with the capture from
    the link's date, else from when pagetrail first saw the link, else the latest one; when
    it drifted, the answer says so and offers that capture."""
    from pagetrail.store.scans import first_seen
    from pagetrail.tools.linkcheck.drift import detect_drift, drift_sentence

    await run.report("drift", 0, None, "comparing with the archived copy")
    since = link_date
    if since is None and store is not None:
        seen = await _stored(run.failures, "reading when the link was first seen", {},
                             first_seen, store, [run.url])
        since = seen.get(run.url)
    try:
        recovery.drift = await detect_drift(run.url, since=since, fetcher=run.fetcher,
                                            settings=run.settings)
    except PagetrailError as exc:
        recovery.failures.append(EngineFailure(engine="drift", error=f"{exc.code}: {exc}"))
        return
    if recovery.drift is not None and recovery.drift.drifted:
        recovery.reason = drift_sentence(recovery.drift)
        recovery.memento = recovery.drift.memento


def _answer_for_live(url: str, check: CheckResult) -> Recovery | None:
    if check.verdict == "refused":
        raise RefusedAddress(check.reason or "address refused", url=url)
    if check.verdict == "ok":
        return Recovery(url=url, check=check, answer="alive", reason="the link works")
    if check.verdict == "redirected" and check.final_url:
        moved = Candidate(url=check.final_url, kind="moved", confidence=0.97,
                          methods=["REDIRECT"], scores=Scores(),
                          evidence="the server redirects permanently to this page")
        return Recovery(url=url, check=check, answer="redirected", candidates=[moved],
                        reason="permanently redirected: the new address is the answer")
    if check.verdict == "transient" and not _silent(check):
        return Recovery(url=url, check=check, answer="unverified",
                        reason=f"not treated as dead: {check.verdict} ({check.reason})")
    if check.verdict == "blocked":
        return Recovery(url=url, check=check, answer="unverified",
                        reason=f"not treated as dead: {check.verdict} ({check.reason})")
    return None


def _site_gone(check: CheckResult) -> bool:
    """The host itself is gone — it does not resolve or connect, never answers, or serves a
    parking page —, so the site, if it lives on, lives at another address."""
    parking = check.evidence.get("parking") if isinstance(check.evidence, dict) else None
    parked = isinstance(parking, dict) and bool(parking.get("parked"))
    return check.verdict == "unreachable" or _silent(check) or parked


def _silent(check: CheckResult) -> bool:
    """The server never answered (a timeout, no status): it may be down for a while or gone
    for good. A server that answers 5xx/429 is there; one that is silent gets a recovery,
    whose answer says the link may only be down for now."""
    error = check.evidence.get("error") if isinstance(check.evidence, dict) else None
    kind = error.get("kind") if isinstance(error, dict) else None
    return check.status is None and kind == "timeout"


async def _memento(run: _Run, at: datetime | None) -> Memento | None:
    down: list[str] = []
    try:
        return await fetch_memento(run.url, run.fetcher, at=at, settings=run.settings,
                                   listings=run.listings, unavailable=down)
    except PagetrailError as exc:
        _archive_failure(run, f"{exc.code}: {exc}")
        return None
    finally:
        for note in down:
            _archive_failure(run, f"unavailable: {note}")


async def _archived_redirects(run: _Run) -> list[Any]:
    if not run.allowed("REDIRECT"):
        return []
    down: list[str] = []
    try:
        return await archived_redirects(run.url, run.fetcher, run.settings, run.listings,
                                        unavailable=down)
    except PagetrailError as exc:
        _archive_failure(run, f"{exc.code}: {exc}")
        return []
    finally:
        for note in down:
            _archive_failure(run, f"unavailable: {note}")


def _archive_failure(run: _Run, error: str) -> None:
    """An archive's failure, once per recovery (the memento and redirect lookups share
    the archives)."""
    failure = EngineFailure(engine="archive", error=error[:500])
    if failure not in run.failures:
        run.failures.append(failure)


async def _source_page(run: _Run, source_url: str | None) -> bytes | None:
    if not source_url:
        return None
    try:
        response = await run.fetcher.get(source_url)
    except PagetrailError as exc:
        run.failures.append(EngineFailure(engine="source", error=f"{exc.code}: {exc}"))
        return None
    return response.content if response.status == 200 and response.is_html else None


def _terms(text: str, lang: str, k: int) -> list[str]:
    if not text:
        return []
    from pagetrail.tools.content.terms import WordfreqBackground

    return [t.term for t in kld_terms(text_terms(text, lang), WordfreqBackground(lang), k)]


def _query_evidence(run: _Run, document: Any, anchor: str, anchor_facts: Any, context: str,
                    source_html: bytes | None, source_url: str | None, lang: str,
                    store: Any | None, evidence: dict[str, object]) -> QueryEvidence:
    qe = QueryEvidence()
    expansion: dict[str, list[str]] = {}
    if anchor_facts is not None:
        qe.anchor = anchor
        qe.anchor_usable = not anchor_facts.is_stop_anchor and bool(anchor_facts.terms)
        evidence["anchor"] = {"text": anchor[:300], "terms": anchor_facts.terms,
                              "named_entities": anchor_facts.named_entities,
                              "usable_alone": anchor_facts.usable_alone}
    if context:
        expansion["context"] = _terms(context, lang, 10)
    url_words = [t.term for t in url_terms(run.url, lang=lang)]
    qe.url_terms = url_words
    expansion["url"] = url_words[:10]
    if document is not None:
        signature = extract_signature(document)
        qe.title = document.title
        qe.ls5, qe.ls7 = signature.ls5, signature.ls7
        expansion["memento"] = [t.term for t in signature.kld_terms[:10]]
        qe.tags = [k for k in document.keywords if k][:5]
        evidence.update(title=document.title, ls5=signature.ls5, ls7=signature.ls7,
                        keywords=document.keywords[:10])
    if source_html:
        page = parse_document(source_html, source_url or "")
        expansion["linking"] = [t.term for t in frequency_terms(
            text_terms(page.text, page.lang or lang), 10)]
    if store is not None and run.allowed("LNLS"):
        anchors = _backlink_anchors(store, run.url)
        if anchors:
            qe.lnls = [t.term for t in frequency_terms(text_terms(" ".join(anchors), lang), 4)]
            evidence["lnls"] = qe.lnls
    qe.expansion_terms = expansion
    evidence["url_terms"] = url_words
    evidence["context_terms"] = expansion.get("context", [])
    return qe


async def _search_and_rank(run: _Run, reference: Reference, qe: QueryEvidence,
                           memento: Memento | None, link_date: datetime | None,
                           store: Any | None) -> list[Candidate]:
    engine_set = build_engine_set(run.settings, run.fetcher, store)
    service = SearchService(engine_set.engines, store=store, settings=run.settings,
                            secrets=engine_set.secrets)
    # A 429 is waited out as told while the wait fits in what is left of the budget.
    service.deadline = time.monotonic() + run.budget.seconds
    web = [e.name for e in engine_set.engines if e.name not in NOT_WEB]
    local = [e.name for e in engine_set.engines if e.name == "local"]
    site_local = [e.name for e in engine_set.engines if e.name in SITE_LOCAL
                  # a silent dead host would only make the site engine wait out its timeouts
                  and not (e.name == "site" and run.host_silent)]
    site = site_of(run.url)
    if store is not None and run.allowed("ELSEWHERE"):
        run.answer_sites = [site_origin(found.example_url) for found in await _stored(
            run.failures, "reading the sites that held answers", [], _answer_sites, store,
            run.url)]
    after = memento.datetime if memento else link_date
    search_context = SearchContext(dead_url=run.url, after=after)
    # A stop anchor ("click here", the URL itself) has no terms to match a listing with.
    site_query = qe.title or (qe.anchor if qe.anchor_usable else "") or " ".join(qe.url_terms)
    try:
        return await _stages(run, service, reference, qe, web, local, site_local, site,
                             site_query, search_context)
    finally:
        _search_figures(run, service, web)


async def _stages(run: _Run, service: SearchService, reference: Reference, qe: QueryEvidence,
                  web: list[str], local: list[str], site_local: list[str], site: str,
                  site_query: str, search_context: SearchContext) -> list[Candidate]:
    # Direct evidence first (picks, archived redirects, the site's rewrite rules): when it is
    # already a verified move, no search engine is asked at all.
    if run.candidates:
        ranked = await _rank(run, reference)
        if _confirmed(ranked, reference):
            return ranked

    # Stage 0: the site itself (moves within a site are the most common case), the local
    # index, and the title within the old site on the web.
    stage0: list[tuple[str, str, list[str], str | None]] = []
    url_like: list[tuple[str, str, list[str], str | None]] = []
    url_query = " ".join(qe.url_terms)
    for name in site_local:
        method = "SITE" if name == "site" else "CDX"
        if run.allowed(method) and site_query:
            stage0.append((method, site_query, [name], None))
        # The old URL's own words too: a renamed page often keeps its slug (free: the
        # listing is fetched once a recovery).
        if run.allowed(method) and url_query and url_query != site_query:
            stage0.append((method, url_query, [name], None))
        # And the URLs that look like the dead one, stop words included (overlap.rank_by_url):
        # a slug of common words, or the hub page (/tag/never/) that links an unlisted page.
        if run.allowed(method):
            url_like.append((method, run.url, [name], None))
    if run.allowed("SITE") and qe.title and web + local:
        stage0.append(("SITE", qe.title, web + local, site))  # the title within the old site
    run.enter("search")
    moved_site: list[tuple[str, str, list[str], str | None]] = []
    if run.site_gone and run.allowed("LINKS"):
        # The new host answers even when the old one is silent: every listing engine.
        listers = [name for name in SITE_LOCAL if name in service.names]
        for host in await _moved_site_hosts(run):
            run.listed_sites.add(site_of(f"https://{host}/"))
            moved_site += [("LINKS", query, [name], host) for name in listers
                           for query in dict.fromkeys(q for q in (site_query, url_query) if q)]
            url_like += [("LINKS", run.url, [name], host) for name in listers]
    # The variants are listed by host (no dead URL in their context: it is not theirs).
    variant_context = SearchContext(after=search_context.after)
    await asyncio.gather(
        _run_queries(run, service, stage0, search_context),
        _run_queries(run, service, moved_site, variant_context))
    await _complement(run, service, [q for q in url_like if q[3] is None], search_context)
    await _complement(run, service, [q for q in url_like if q[3] is not None], variant_context)
    await _redirected_home(run, service)
    ranked = await _rank(run, reference)
    if _confirmed(ranked, reference):
        return ranked
    listing_queries = list(dict.fromkeys(q for q in (site_query, url_query) if q))
    ranked = await _neighbourhood(run, service, reference, ranked, site_local,
                                  listing_queries, search_context)
    if _confirmed(ranked, reference):
        return ranked

    planned = plan_queries(qe, methods=run.methods, max_queries=run.budget.max_queries,
                           expansion_per_source=run.settings.expansion_per_source)
    engines = web + local  # the local index answers the same queries (no web search)
    for stage in sorted({q.stage for q in planned}):
        batch = [(q.method, q.text, engines, None) for q in planned if q.stage == stage]
        if not batch or not engines:
            continue
        await run.report("queries", len(run.queries), len(planned) + len(stage0),
                         f"stage {stage}")
        await _run_queries(run, service, batch, search_context)
        ranked = await _rank(run, reference)
        if _confirmed(ranked, reference):
            break
        ranked = await _neighbourhood(run, service, reference, ranked, site_local,
                                      listing_queries, search_context)
        if _confirmed(ranked, reference):
            break
    return ranked


def _search_figures(run: _Run, service: SearchService, web: list[str]) -> None:
    """Web-search queries sent and 429s received (the eval's `search` figures), and what
    could not be asked: a named partial failure."""
    run_evidence = run.search_evidence
    run_evidence["queries"] = sum(service.calls.get(name, 0) for name in web)
    run_evidence["rate_limited"] = sum(service.rate_limited.get(name, 0) for name in web)
    if run.unasked:
        run_evidence["unasked"] = run.unasked[:20]
        run.failures.append(EngineFailure(
            engine="search",
            error=f"{len(run.unasked)} web queries could not be asked (rate limit, budget or "
                  f"engine error): {'; '.join(run.unasked[:3])}"))


async def _neighbourhood(run: _Run, service: SearchService, reference: Reference,
                         ranked: list[Candidate], site_local: list[str], queries: list[str],
                         search_context: SearchContext) -> list[Candidate]:
    """Sources that need no web search, for pages the web index does not hold:

    - the own map (sitemap, root page links; CDX listing) of the sites where the best
      candidates live, when they are not the dead site (the site moved to a new host);
    - the link graph: links on the fetched candidate pages of the dead site and of those
      sites, ranked by overlap of their anchor text and URL with the evidence;
    - once a recovery: the maps of the sites that held other dead links' answers
      (`_read_answer_sites`). Waiting for the first web stage instead saved 1 request a
      recovery (median) on dev2 and lost a case.
    """
    site_engine = _site_engine(service)
    transplanted = await _transplant_slug(run, site_engine)
    transplanted += await _read_answer_sites(run, site_engine, queries)
    if not queries or not run.allowed("LINKS"):
        return await _rank(run, reference) if transplanted else ranked
    sites = {site_of(run.url)} | run.listed_sites
    batch: list[tuple[str, str, list[str], str | None]] = []
    for candidate in ranked[:NEIGHBOUR_DEPTH]:
        other = site_of(candidate.url)
        if other in sites or len(run.listed_sites) >= NEW_HOSTS or not _looks_related(candidate):
            continue
        sites.add(other)
        run.listed_sites.add(other)
        batch += [("LINKS", query, [name], host_of(candidate.url))
                  for name in site_local for query in queries]
    if batch:
        await _run_queries(run, service, batch, SearchContext(after=search_context.after))
    added = _follow_links(run, queries[0], sites)
    if not batch and not added and not transplanted:
        return ranked
    return await _rank(run, reference)


def _site_engine(service: SearchService) -> SiteEngine | None:
    return next((e for e in service.engines if isinstance(e, SiteEngine)), None)


async def _transplant_slug(run: _Run, site_engine: SiteEngine | None) -> int:
    """The dead page's slug under the folders its live siblings use now (tools.recovery.siblings):
    the folders of the same-site candidates (pages found for this link), else of the pages
    the site lists (sitemap, root page; already read by the site engine), else of the links
    on fetched pages; at most MAX_TRANSPLANTS URLs a recovery. Returns hits added."""
    if len(run.transplanted) >= MAX_TRANSPLANTS or not run.allowed("SITE") or run.site_gone:
        return 0
    urls = transplants(run.url, [evidence.url for evidence in run.candidates.values()])
    if not urls and site_engine is not None and not run.host_silent:
        listing = await site_engine.listing(site_origin(run.url))
        urls = transplants(run.url, list(listing.pages))
    if not urls:
        urls = transplants(run.url, [link.url for links in run.outlinks.values()
                                     for link in links])
    added = 0
    for url in urls:
        if url in run.transplanted or len(run.transplanted) >= MAX_TRANSPLANTS:
            continue
        run.transplanted.add(url)
        if run.add_hit("SITE", Hit(url=url, rank=len(run.transplanted),
                                   engine="siblings")) is not None:
            added += 1
    return added


async def _read_answer_sites(run: _Run, site_engine: SiteEngine | None,
                             queries: Sequence[str]) -> int:
    """Once a recovery: the own maps of the sites that held other dead links' answers
    (store.elsewhere), each page ranked by overlap with the queries; the best
    ANSWER_SITE_HITS of each site that carry ANSWER_SITE_RECALL of a query's terms become
    candidates. An unindexed republished copy is found here though no page links to it and
    no search engine returns it. Returns hits added."""
    if run.answer_sites_read or site_engine is None or not queries:
        return 0
    run.answer_sites_read = True
    own = {site_of(run.url)}
    origins = [o for o in run.answer_sites if site_of(o) not in own][:ANSWER_SITES]
    if not origins:
        return 0
    listings = await asyncio.gather(*(_answer_site_pages(run, site_engine, origin)
                                      for origin in origins))
    added = 0
    for origin, (pages, error) in zip(origins, listings, strict=True):
        if not pages:  # unreachable, or no sitemap and no links on its root page
            error = error or f"{host_of(origin)} lists no pages"
            run.failures.append(EngineFailure(engine="elsewhere", error=error[:500]))
            continue
        for rank, url in enumerate(_best_listed(pages, queries), 1):
            if run.add_hit("ELSEWHERE", Hit(url=url, rank=rank, engine="elsewhere")) is not None:
                added += 1
    run.search_evidence["answer_sites"] = [host_of(o) for o in origins]
    return added


async def _answer_site_pages(run: _Run, site_engine: SiteEngine,
                             origin: str) -> tuple[dict[str, str], str | None]:
    """An answer site's pages (URL → link text) and why there are none: from the store when
    a recovery read its map within LISTING_TTL (the same few sites are read by every
    recovery: once a day is polite and saves ~3 requests a site), else read now and kept."""
    if run.store is not None:
        cached = await _stored(run.failures, "reading an answer site's map", None,
                               _kept_listing, run.store, origin)
        if cached is not None:
            return cached, None
    listing = await site_engine.listing(origin)
    if listing.pages and run.store is not None:
        await _stored(run.failures, "keeping an answer site's map", None, _keep_listing,
                      run.store, origin, listing.pages)
    return listing.pages, listing.error


def _best_listed(listed: dict[str, str], queries: Sequence[str]) -> list[str]:
    """The listed pages that carry enough of a query's terms, best first (pure)."""
    pages = list(listed.items())
    best: dict[str, tuple[float, int]] = {}
    for query in queries:
        for rank, (url, _text, recall) in enumerate(rank_by_overlap(query, pages), 1):
            if rank > ANSWER_SITE_HITS or recall < ANSWER_SITE_RECALL:
                break
            best[url] = min(best.get(url, (1.0, rank)), (-recall, rank))
    return sorted(best, key=lambda url: best[url])[:ANSWER_SITE_HITS]


MAX_SITE_MOVES = 3  # answering variant hosts whose maps are read


async def _moved_site_hosts(run: _Run) -> list[str]:
    """The dead host's variants (`urls.host_variants`: www. twin, new subdomains, other
    top-level domains) that answer with a page of their own: where the site may live now.
    One root request each; a variant that redirects counts under its final host."""
    async def probe(host: str) -> str | None:
        try:
            response = await run.fetcher.get(f"https://{host}/")
        except PagetrailError:
            return None
        if response.status != 200 or response.squid_error or not response.is_html:
            return None
        final = host_of(response.final_url or "") or host
        return None if site_of(f"https://{final}/") == site_of(run.url) and \
            final == host_of(run.url) else final

    found = await asyncio.gather(*(probe(h) for h in host_variants(host_of(run.url))))
    hosts = list(dict.fromkeys(h for h in found if h))
    run.search_evidence["site_moved_to"] = hosts[:MAX_SITE_MOVES]
    return hosts[:MAX_SITE_MOVES]


def _looks_related(candidate: Candidate) -> bool:
    """Worth reading its site's map: the page resembles the dead one by its URL, title or
    text (a site the dead one moved to), not merely by ranking among weak candidates."""
    scores = candidate.scores
    return (scores.url_similarity >= 0.15 or (scores.title_similarity or 0.0) >= 0.5
            or (scores.content_cosine or 0.0) >= 0.5)


async def _complement(run: _Run, service: SearchService,
                      batch: Sequence[tuple[str, str, list[str], str | None]],
                      search_context: SearchContext) -> None:
    """Queries that only add pages: the same listings ranked another way are no new
    evidence about a page they already gave, so such a page gains no vote from them."""
    if not batch:
        return
    before = {key: len(evidence.hits) for key, evidence in run.candidates.items()}
    await _run_queries(run, service, batch, search_context)
    for key, count in before.items():
        if key in run.candidates:
            del run.candidates[key].hits[count:]


async def _redirected_home(run: _Run, service: SearchService) -> None:
    """The dead site's root redirects to another host (read by the site engine in stage 0):
    that host is the site's home now, so links on its pages count as the site's own
    (`_follow_links`). Not for a gone or parked site, whose root says nothing of the site."""
    if run.site_gone or run.host_silent:
        return
    site_engine = _site_engine(service)
    origin = site_origin(run.url)
    if site_engine is None or not site_engine.has_listing(origin):
        return
    listing = await site_engine.listing(origin)  # memoised: no request
    run.listed_sites |= listing.sites - {site_of(run.url)}


def _follow_links(run: _Run, query: str, sites: set[str]) -> int:
    """Link targets on `sites` from pages fetched so far, best first: by overlap with
    `query` and by how much their URL looks like the dead one (a slug of stop words, a
    renamed folder), the two orders fused."""
    links: dict[str, str] = {}
    for page, page_links in run.outlinks.items():
        if page in run.linked_from or site_of(page) not in sites:
            continue
        run.linked_from.add(page)
        for link in page_links:
            if site_of(link.url) not in sites or normalize_url(link.url) in run.candidates:
                continue
            # The anchor alone: the words around a link in a list of links are the
            # neighbours' and would make every link of the list look alike.
            if link.anchor and link.anchor not in links.get(link.url, ""):
                links[link.url] = f"{links.get(link.url, '')} {link.anchor}".strip()[:600]
            else:
                links.setdefault(link.url, "")
    # Reciprocal-rank fusion of the two orders: each keeps its own tie-breaks, and a link
    # near the top of both comes first.
    ranks: dict[str, list[int]] = {}
    for order in (rank_by_overlap(query, list(links.items())),
                  rank_by_url(run.url, list(links.items()))):
        for rank, (url, _text, _score) in enumerate(order, 1):
            ranks.setdefault(url, []).append(rank)
    fused = {url: reciprocal_rank_fusion(found) for url, found in ranks.items()}
    ranked = sorted(fused, key=lambda url: (-fused[url], len(url), url))
    added = 0
    for rank, url in enumerate(ranked[:LINK_CANDIDATES], 1):
        if run.add_hit("LINKS", Hit(url=url, rank=rank, engine="links")) is not None:
            added += 1
    return added


def _confirmed(ranked: Sequence[Candidate], reference: Reference) -> bool:
    """Stop searching: the top candidate is a verified move with a near-identical title.

    Content alone is not enough to stop: pages quoting the article (tag pages, updates
    with other text) reach the cosine too, and the next stage may find the real move.
    """
    if not ranked:
        return False
    top = ranked[0]
    if top.confidence >= CONFIRM_CONFIDENCE and (
            len(ranked) < 2 or ranked[1].confidence < top.confidence - CONFIRM_MARGIN):
        return True  # the calibrated ranking is already sure, and nothing else comes close
    if not is_moved(top.scores, reference.has_memento):
        return False
    return (top.scores.title_similarity or 0.0) >= CONFIRM_TITLE


async def _run_queries(run: _Run, service: SearchService,
                       batch: Sequence[tuple[str, str, list[str], str | None]],
                       search_context: SearchContext) -> None:
    async def one(method: str, text: str, engines: list[str], site: str | None) -> None:
        outcome = await service.search(text, site=site, limit=run.budget.hits_per_query,
                                       context=search_context, engines=engines)
        for failure in outcome.failures:
            if failure.engine not in NOT_WEB:
                run.unasked.append(f"{method}: {text[:80]}")
            if all(f.engine != failure.engine for f in run.failures):
                run.failures.append(failure)
        for engine, hits in outcome.hits.items():
            run.queries.append(Query(text=text[:500], method=method, engine=engine, site=site,
                                     hits=hits[: run.budget.hits_per_query]))
            for hit in hits[: run.budget.hits_per_query]:
                run.add_hit(method, hit)

    await asyncio.gather(*(one(*item) for item in batch))


async def _rank(run: _Run, reference: Reference) -> list[Candidate]:
    run.enter("candidates")
    await _fetch_candidates(run)
    await run.report("ranking", len(run.fetched), len(run.candidates), "")
    ranked = await off_loop(rank_candidates, reference, list(run.candidates.values()))
    run.enter("search")
    return ranked


def _fetch_order(run: _Run) -> list[CandidateEvidence]:
    """Unfetched candidates, the most promising first: direct evidence, then best rank."""
    direct = {"PICK": 0, "REDIRECT": 1, "INFER": 2}

    def key(evidence: CandidateEvidence) -> tuple[int, int, int]:
        best_direct = min((direct.get(m, 9) for m, _e, _r in evidence.hits), default=9)
        best_rank = min((r for _m, _e, r in evidence.hits), default=99)
        return best_direct, best_rank, -len(evidence.hits)

    pending = [e for k, e in run.candidates.items() if k not in run.fetched]
    pending.sort(key=key)
    # Only the top of each query's list is worth a fetch (budget: requests per case).
    return [e for e in pending
            if key(e)[0] < 9 or key(e)[1] <= run.budget.fetch_per_query]


async def _fetch_candidates(run: _Run) -> None:
    room = run.budget.max_candidates - len(run.fetched)
    todo = _fetch_order(run)[: max(0, room)]
    if not todo:
        return
    limit = asyncio.Semaphore(max(1, run.settings.concurrency))

    async def fetch(evidence: CandidateEvidence) -> None:
        run.fetched.add(normalize_url(evidence.url))
        async with limit:
            try:
                response = await run.fetcher.get(evidence.url)
            except PagetrailError as exc:
                log.info("candidate %s: %s", evidence.url, exc)
                return
        if response.status != 200 or not response.is_html:
            evidence.hits.clear()  # a dead or non-page candidate is no answer
            return
        # In a thread: extraction is ~50 ms of CPU a page, and the other candidates'
        # transfers (and other recoveries sharing the loop) go on meanwhile.
        document = await off_loop(
            parse_document, response.content, response.final_url,
            content_type=response.headers.get("content-type"), links=False)
        if looks_like_error_page(document):
            evidence.hits.clear()
            return
        evidence.document = document
        # The link graph: pages near the answer link to it (cheap: no text extraction).
        run.outlinks[normalize_url(evidence.url)] = extract_links(
            response.content, response.final_url,
            content_type=response.headers.get("content-type"))

    await asyncio.gather(*(fetch(e) for e in todo))
    for key in [k for k, e in run.candidates.items() if not e.hits]:
        del run.candidates[key]


def _answer(run: _Run, check: CheckResult, memento: Memento | None, ranked: list[Candidate],
            anchor_facts: Any, evidence: dict[str, object]) -> Recovery:
    ranked = [c for c in ranked if c.kind != "archived"]
    # Fig. 8 of Martinez-Romo & Araujo: a one-common-word anchor without an archived copy
    # to verify against is not enough to recommend anything.
    # (A stop anchor — "click here", the URL itself — says nothing: it is no weak anchor.)
    weak_anchor = (memento is None and anchor_facts is not None
                   and not anchor_facts.is_stop_anchor and not anchor_facts.usable_alone)
    if weak_anchor:
        ranked = [c.model_copy(update={"confidence": min(c.confidence, 0.3)}) for c in ranked]
    top = ranked[0] if ranked else None
    candidates = list(ranked)
    if memento is not None:
        candidates.append(Candidate(
            url=memento.memento_url, title=(memento.document.title if memento.document else ""),
            kind="archived", confidence=1.0 if not top or top.confidence < RECOMMEND_AT else 0.5,
            methods=["ARCHIVE"],
            evidence=f"archived copy of {memento.datetime:%Y-%m-%d} at {memento.archive}",
        ))
    if top is not None and top.confidence >= RECOMMEND_AT:
        answer, reason = top.kind, top.evidence
    elif memento is not None:
        answer, reason = "archived", "no live page fits well enough; the archived copy helps"
    else:
        answer = "none"
        reason = ("the anchor alone is too weak and there is no archived copy to verify"
                  if weak_anchor else "no archived copy and no live page fits")
    return Recovery(
        url=run.url, check=check, answer=answer, reason=reason, memento=memento,
        evidence=evidence, queries=run.queries, candidates=candidates, failures=run.failures,
    )


# --------------------------------------------------------------------------- store access


def _cached_answer(store: Any, url: str, key: str) -> Recovery | None:
    from pagetrail.store.picks import picked_since
    from pagetrail.store.recoveries import latest_recovery

    row = latest_recovery(store, key)
    if row is None or datetime.now(UTC) - row.created_at > CACHE_TTL:
        return None
    if picked_since(store, site_of(url), row.created_at):
        return None  # a person spoke since: answer afresh
    recovery = Recovery.model_validate(row.answer)
    recovery.cached = True
    recovery.requests = 0
    return recovery


def _remember(store: Any, url: str, key: str, recovery: Recovery,
              request: dict[str, object]) -> None:
    from pagetrail.store.recoveries import remember_recovery

    remember_recovery(store, url, key, request=request,
                      answer=recovery.model_dump(mode="json"), seconds=recovery.seconds)


def _picks(store: Any, url: str) -> tuple[list[str], set[str]]:
    from pagetrail.tools.recovery.memory import picks_for

    chosen: list[str] = []
    rejected: set[str] = set()
    for pick in picks_for(store, url):
        if pick.rejected:
            rejected.add(normalize_url(pick.chosen_url))
        elif pick.chosen_url not in chosen:
            chosen.append(pick.chosen_url)
    return chosen, rejected


def _inferred(store: Any, url: str, title: str) -> list[tuple[str, float]]:
    """Candidates from the site's rewrite rules, learnt from its known moves (FABLE)."""
    from pagetrail.tools.recovery.aliases import KnownMove, infer_aliases
    from pagetrail.tools.recovery.memory import moves_for_site

    moves = [KnownMove(m.old_url, m.new_url, source=m.source) for m in moves_for_site(store, url)]
    if not moves:
        return []
    inference = infer_aliases(moves, url, title=title or None)
    # Proposals are verified like every candidate (fetched, ranked); confident rules weigh more.
    return [(p.url, p.quality if p.confident else p.quality / 2)
            for p in inference.proposals[:3]]


def _kept_listing(store: Any, origin: str) -> dict[str, str] | None:
    from pagetrail.store.searches import cached_hits

    rows = cached_hits(store, LISTING_CACHE, "", origin, datetime.now(UTC))
    return None if rows is None else {str(row["url"]): str(row.get("text", "")) for row in rows}


def _keep_listing(store: Any, origin: str, pages: dict[str, str]) -> None:
    from pagetrail.store.searches import cache_hits

    cache_hits(store, LISTING_CACHE, "", origin,
               [{"url": url, "text": text} for url, text in pages.items()],
               now=datetime.now(UTC), ttl=LISTING_TTL)


def _answer_sites(store: Any, url: str) -> list[Any]:
    from pagetrail.tools.recovery.memory import answer_sites

    return answer_sites(store, exclude_url=url, limit=ANSWER_SITES)


def _backlink_anchors(store: Any, url: str) -> list[str]:
    from pagetrail.store.linkgraph import backlinks

    return [e.anchor for e in backlinks(store, url, limit=10) if e.anchor]


Progress = Callable[[str, int, int | None, str], Awaitable[None] | None]
