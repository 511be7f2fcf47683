"""The primitives' facade: one async function per primitive, typed in, pydantic out.

The MCP server and the Slack bot call these instead of wiring fetchers, engines and stores
themselves. Each function takes `settings` (default: get_settings()) and, where the store
helps (caches, picks, learned moves), `store`; each opens its own Fetcher, so a call is a
unit job: a pure function of (input, settings) that reads and writes only through store/.

User-given URLs pass the SSRF guard up front (`ensure_fetchable`), so a private address is a
clear `RefusedAddress` rather than a verdict buried in a result. Text from archives and
candidate pages is untrusted: it stays in data fields, clipped (`clip_document`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pagetrail.tools.content.dates import as_utc
from pagetrail.tools.content.document import parse_document
from pagetrail.tools.errors import (
    FetchFailed,
    InvalidArgument,
    ModelMissing,
    NoMemento,
    PagetrailError,
    UnsupportedContent,
)
from pagetrail.tools.models import (
    ArchivedRedirect,
    ArchiveResult,
    CheckResult,
    Document,
    Memento,
    PickResult,
    RankResult,
    Recovery,
    RelatedArchived,
    RelatedResult,
    RememberedRecovery,
    SearchResult,
    Signature,
    SiteScanJob,
    TagsResult,
    UnreachableCandidate,
    WatchChange,
    WatchList,
)
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.netguard import ensure_fetchable
from pagetrail.tools.net.urls import validate_url
from pagetrail.tools.offload import off_loop
from pagetrail.tools.recovery.context import ProgressFn

# The one route into a recovery (re-exported: the faces call `pagetrail.recover_link`).
from pagetrail.tools.recovery.route import MAX_TEXT_CHARS, clip_memento
from pagetrail.tools.recovery.route import clip_document as clip_document
from pagetrail.tools.recovery.route import recover_link as recover_link
from pagetrail.tools.recovery.route import slim_recovery as slim_recovery
from pagetrail.tools.settings import Settings, configured_store, get_settings

if TYPE_CHECKING:
    from pagetrail.store.db import Store
    from pagetrail.tools.scan.page import PageScan


NO_CLASSIFIER = ("no classifier trained: run `pagetrail classify train --data PATH` "
                 "(a url<TAB>category file) where pagetrail runs")
MAX_RELATED = 20
MAX_CANDIDATE_URLS = 20
RANK_FETCH_CONCURRENCY = 4

# ------------------------------------------------------------------------ helpers


def _settings(settings: Settings | None) -> Settings:
    return settings or get_settings()


# ------------------------------------------------------------------------ primitives


async def check_link(url: str, *, settings: Settings | None = None, drift: bool = False,
                     since: datetime | None = None, probe_sibling: bool = True,
                     ) -> CheckResult:
    """Is the link dead? One check (HEAD, GET, a soft-404 probe of a sibling URL unless
    `probe_sibling` is False). With `drift`, a working link is also compared with its
    archived copy from `since` (the link's date; latest copy when None): `result.drift`,
    `result.drifted`."""
    settings = _settings(settings)
    url = await ensure_fetchable(url, settings)
    from pagetrail.tools.linkcheck.check import check_link as check

    async with Fetcher(settings) as fetcher:
        result = await check(url, fetcher, settings=settings, probe_sibling=probe_sibling)
        if drift:
            result = await check_with_drift(result, fetcher, settings, since)
        return result


async def check_with_drift(result: CheckResult, fetcher: Fetcher, settings: Settings,
                     since: datetime | None) -> CheckResult:
    """`result` with its drift when the link works (a failed comparison is in evidence)."""
    if result.verdict != "ok":
        return result
    from pagetrail.tools.errors import PagetrailError
    from pagetrail.tools.linkcheck.drift import detect_drift

    try:
        drift = await detect_drift(result.url, since=(as_utc(since) if since else None),
                                   fetcher=fetcher, settings=settings)
    except PagetrailError as exc:
        return result.model_copy(update={
            "evidence": {**result.evidence, "drift_error": f"{exc.code}: {exc}"}})
    return result.model_copy(update={"drift": drift})


async def fetch_memento(url: str, *, at: datetime | None = None,
                        settings: Settings | None = None,
                        max_text_chars: int = MAX_TEXT_CHARS, whole: bool = False) -> Memento:
    """The archived copy of `url` closest before `at` (default: the newest good one), its
    text clipped to `max_text_chars` and its links dropped unless `whole`.
    Raises NoMemento when no archive holds a usable copy."""
    settings = _settings(settings)
    url = await ensure_fetchable(url, settings)
    from pagetrail.tools.archive.memento import fetch_memento as fetch

    async with Fetcher(settings) as fetcher:
        memento = await fetch(url, fetcher, at=(as_utc(at) if at else None), settings=settings)
    if memento is None:
        raise NoMemento("no archive holds a usable copy of this URL", url=url)
    if whole:
        return memento
    clipped = clip_memento(memento, max_text_chars)
    assert clipped is not None
    return clipped


async def list_captures(url: str, *, settings: Settings | None = None,
                        unavailable: list[str] | None = None) -> list[Memento]:
    """Every capture of `url` in the configured archives, oldest first (no page fetched).
    Raises ArchiveUnavailable (or ArchiveExcluded) when no archive answered; an archive that
    failed or refused while others answered is named in `unavailable` when given
    ("<archive>: archive_unavailable: …"): the listing is then partial."""
    from pagetrail.tools.archive.memento import list_mementos

    settings = _settings(settings)
    url = await ensure_fetchable(url, settings)
    async with Fetcher(settings) as fetcher:
        return await list_mementos(url, fetcher, settings, unavailable=unavailable)


async def archived_redirects(url: str, *, settings: Settings | None = None,
                             ) -> list[ArchivedRedirect]:
    """Captures of `url` that redirect elsewhere, newest first, one per target."""
    from pagetrail.tools.archive.memento import archived_redirects as redirects_of

    settings = _settings(settings)
    url = await ensure_fetchable(url, settings)
    async with Fetcher(settings) as fetcher:
        return await redirects_of(url, fetcher, settings)


def split_memento_url(url: str, settings: Settings) -> tuple[str, datetime] | None:
    """(original URL, capture time) if `url` is a replay URL of a configured archive."""
    from pagetrail.tools.archive.memento import ArchiveEndpoint, parse_timestamp

    for prefix in settings.archives:
        parts = ArchiveEndpoint.of(prefix).split_memento_url(url)
        if parts is not None:
            moment = parse_timestamp(parts[0])
            if moment is not None:
                return parts[1], moment
    return None


async def live_document(url: str, fetcher: Fetcher) -> Document:
    """The live page at `url`, parsed; FetchFailed / UnsupportedContent when there is none."""
    response = await fetcher.get(url)
    if response.status != 200:
        raise FetchFailed(f"the live page answered {response.status}", url=url)
    if not response.is_html and not response.content_type.startswith("text/"):
        raise UnsupportedContent(f"not an HTML page ({response.content_type})", url=url)
    return await off_loop(parse_document, response.content, response.final_url,
                          content_type=response.headers.get("content-type"))


async def extract_signature(url: str, *, source: Literal["archive", "live"] = "archive",
                            at: datetime | None = None,
                            settings: Settings | None = None) -> Signature:
    """Lexical signature of the archived copy of `url` (or of a memento URL, or of the live
    page with source="live"), against wordfreq's background."""
    from pagetrail.tools.archive.memento import fetch_memento as fetch
    from pagetrail.tools.content.signature import extract_signature as signature

    settings = _settings(settings)
    url = validate_url(url)
    memento_parts = split_memento_url(url, settings)
    if memento_parts is not None:
        url, at = memento_parts
        source = "archive"
    url = await ensure_fetchable(url, settings)
    async with Fetcher(settings) as fetcher:
        if source == "live":
            document = await live_document(url, fetcher)
        else:
            memento = await fetch(url, fetcher, at=(as_utc(at) if at else None), settings=settings)
            if memento is None or memento.document is None:
                raise NoMemento("no usable archived copy (try source='live')", url=url)
            document = memento.document
    return await off_loop(signature, document)


async def get_tags(url: str, *, settings: Settings | None = None) -> TagsResult:
    """Tags of `url`: the archived copy's keywords and social sources; tags no longer on the
    live page are marked ghost."""
    from pagetrail.tools.archive.memento import fetch_memento as fetch
    from pagetrail.tools.evidence.tags import get_tags as tags_of

    settings = _settings(settings)
    url = await ensure_fetchable(url, settings)
    async with Fetcher(settings) as fetcher:
        try:
            memento = await fetch(url, fetcher, settings=settings)
        except PagetrailError:
            memento = None  # tags are evidence: other sources still answer
        try:
            current: Document | None = await live_document(url, fetcher)
        except PagetrailError:
            current = None  # a dead page: nothing to call tags ghosts by
        tags = await tags_of(url, fetcher, memento=memento, current=current, settings=settings)
    return TagsResult(url=url, tags=tags)


def search_engines() -> tuple[str, ...]:
    """Names of the registered search engines (built-ins and installed plugins)."""
    from pagetrail.tools.engines.registry import engine_names

    return engine_names()


async def search_web(query: str, *, engines: Sequence[str] | None = None,
                     site: str | None = None, limit: int = 10,
                     dead_url: str | None = None, after: datetime | None = None,
                     settings: Settings | None = None, store: Store | None = None,
                     ) -> SearchResult:
    """One query on the configured (or named) engines; cached, paced, each engine failing
    alone. `dead_url` gives the site and archive-listing engines a host, `after` keeps only
    URLs that appeared after that moment."""
    from pagetrail.tools.engines.base import SearchContext
    from pagetrail.tools.engines.failures import raise_if_network_down
    from pagetrail.tools.engines.registry import build_engine_set
    from pagetrail.tools.engines.service import SearchService

    settings = _settings(settings)
    if not query.strip():
        raise InvalidArgument("empty query")
    if dead_url:
        dead_url = await ensure_fetchable(dead_url, settings)
    context = (SearchContext(dead_url=dead_url, after=(as_utc(after) if after else None))
               if dead_url or after else None)
    async with Fetcher(settings) as fetcher:
        engine_set = build_engine_set(settings, fetcher, store, list(engines) if engines else None)
        service = SearchService(engine_set.engines, store=store, settings=settings,
                                secrets=engine_set.secrets)
        outcome = await service.search(query, site=site or None, limit=limit, context=context)
        if not outcome.hits:  # no engine answered: is it the engines, or our network?
            await raise_if_network_down(outcome.failures, fetcher)
    hits = [hit if hit.engine else hit.model_copy(update={"engine": name})
            for name, engine_hits in outcome.hits.items() for hit in engine_hits]
    return SearchResult(query=outcome.query, site=outcome.site, hits=hits,
                        failures=outcome.failures, cached=sorted(outcome.cached),
                        notes=engine_set.notes)


async def rank_candidates(candidate_urls: Sequence[str], *, reference_url: str | None = None,
                          reference_text: str | None = None, reference_title: str = "",
                          anchor: str = "", settings: Settings | None = None,
                          ) -> RankResult:
    """Score candidate pages against what the dead page said: its archived copy
    (`reference_url`) or a text you supply (`reference_text`). Each candidate is fetched once."""
    from pagetrail.tools.archive.memento import fetch_memento as fetch
    from pagetrail.tools.ranking.rank import CandidateEvidence, Reference
    from pagetrail.tools.ranking.rank import rank_candidates as rank

    settings = _settings(settings)
    if not candidate_urls:
        raise InvalidArgument("no candidate URLs given")
    if len(candidate_urls) > MAX_CANDIDATE_URLS:
        raise InvalidArgument(f"at most {MAX_CANDIDATE_URLS} candidate URLs per call")
    if not reference_url and not (reference_text or "").strip():
        raise InvalidArgument("give reference_url (its archived copy is the reference) or "
                         "reference_text")
    dead_url = await ensure_fetchable(reference_url, settings) if reference_url else ""
    urls = [await ensure_fetchable(u, settings) for u in dict.fromkeys(candidate_urls)]
    async with Fetcher(settings) as fetcher:
        if reference_text and reference_text.strip():
            reference = Reference.from_text(reference_text, title=reference_title,
                                            dead_url=dead_url, anchor=anchor)
            described = "text"
        else:
            memento = await fetch(dead_url, fetcher, settings=settings)
            if memento is None or memento.document is None:
                raise NoMemento("no archived copy to compare with; pass reference_text",
                                url=dead_url)
            reference = Reference(dead_url=dead_url, memento=memento.document,
                                  memento_date=memento.datetime, anchor=anchor)
            described = f"memento of {dead_url} ({memento.datetime:%Y-%m-%d})"
        limit = asyncio.Semaphore(RANK_FETCH_CONCURRENCY)
        unreachable: list[UnreachableCandidate] = []

        async def fetch_one(url: str) -> CandidateEvidence | None:
            async with limit:
                try:
                    document = await live_document(url, fetcher)
                except PagetrailError as exc:
                    unreachable.append(UnreachableCandidate(url=url, error=f"{exc.code}: {exc}"))
                    return None
            return CandidateEvidence(url=url, document=document)

        fetched = await asyncio.gather(*(fetch_one(u) for u in urls))
    evidence = [e for e in fetched if e is not None]
    ranked = rank(reference, evidence, keep_junk=True)
    return RankResult(reference=described, has_content=reference.has_memento,
                      candidates=ranked, unreachable=unreachable)


async def record_pick(dead_url: str, chosen_url: str, *, note: str = "", by: str = "",
                      via: str = "api", where: str = "", rejected: bool = False,
                      store: Store | None = None) -> PickResult:
    """Remember that a person chose (or, with rejected=True, turned down) `chosen_url` as the
    replacement of `dead_url`; later recoveries of that link and site learn from it.
    `where`: the place it was chosen in (a Slack channel), `via` the face."""
    from pagetrail.tools.recovery.memory import record_pick as record

    dead_url = validate_url(dead_url)
    chosen_url = validate_url(chosen_url)
    store = store or configured_store()
    pick = await asyncio.to_thread(record, store, dead_url, chosen_url, by=by, via=via,
                                   where=where, note=note, rejected=rejected)
    return PickResult(dead_url=pick.dead_url, chosen_url=pick.chosen_url,
                      rejected=pick.rejected, note=pick.note, recorded_at=pick.created_at)


MAX_REMEMBERED = 100  # answers listed at once


async def recent_recoveries(*, limit: int = 20, url: str | None = None,
                            store: Store | None = None) -> list[RememberedRecovery]:
    """The recoveries the store remembers, newest first (only `url`'s when given), each as
    slim as recover_link answers it. Nothing is fetched."""
    from pagetrail.store.recoveries import recent_recoveries as remembered

    if not 1 <= limit <= MAX_REMEMBERED:
        raise InvalidArgument(f"limit must be between 1 and {MAX_REMEMBERED}")
    url = validate_url(url) if url is not None else None
    store = store or configured_store()
    rows = await asyncio.to_thread(remembered, store, limit=limit, url=url)
    return [RememberedRecovery(recovered_at=row.created_at,
                               recovery=slim_recovery(Recovery.model_validate(row.answer)))
            for row in rows]


async def _watch_target(target: str, settings: Settings) -> str:
    """A page URL, or a site (`example.org`) as its home page; refused like any user URL."""
    from pagetrail.tools.scan.scanner import resolve_target

    url, _site = resolve_target(target)
    return await ensure_fetchable(url, settings)


async def add_watch(target: str, *, channel: str, by: str = "",
                    settings: Settings | None = None, store: Store | None = None) -> WatchChange:
    """Watch `target` for `channel`'s weekly digest (tools.scan.digest.run_digests)."""
    from pagetrail.tools.recovery.memory import add_watch as add

    settings = _settings(settings)
    url = await _watch_target(target, settings)
    store = store or configured_store(settings.database_url)
    added = await asyncio.to_thread(add, store, channel, url, by=by)
    return WatchChange(channel=channel, target=url, changed=added)


async def remove_watch(target: str, *, channel: str, settings: Settings | None = None,
                       store: Store | None = None) -> WatchChange:
    """Stop watching `target` for `channel`'s digest."""
    from pagetrail.tools.recovery.memory import remove_watch as remove
    from pagetrail.tools.scan.scanner import resolve_target

    settings = _settings(settings)
    url, _site = resolve_target(target)  # no address check: removing reaches nothing
    store = store or configured_store(settings.database_url)
    removed = await asyncio.to_thread(remove, store, channel, url)
    return WatchChange(channel=channel, target=url, changed=removed)


async def list_watches(*, channel: str | None = None, settings: Settings | None = None,
                       store: Store | None = None) -> list[WatchList]:
    """Each channel's watched targets (only `channel`'s when given)."""
    from pagetrail.tools.recovery.memory import list_watches as targets_of
    from pagetrail.tools.recovery.memory import watched_channels

    settings = _settings(settings)
    store = store or configured_store(settings.database_url)
    channels = [channel] if channel else await asyncio.to_thread(watched_channels, store)
    return [WatchList(channel=name, targets=await asyncio.to_thread(targets_of, store, name))
            for name in channels]


async def scan_page(url: str, *, limit: int = 3, max_links: int | None = None,
                    settings: Settings | None = None, store: Store | None = None,
                    max_candidates: int = 3, progress: ProgressFn | None = None) -> PageScan:
    """Check every link on a page (at most `max_links`, never beyond the setting
    scan_max_links_per_page, the scanner's cap too); recover the first `limit` dead ones."""
    from pagetrail.tools.scan.page import scan_page as scan

    settings = _settings(settings)
    url = await ensure_fetchable(url, settings)
    cap = settings.scan_max_links_per_page
    max_links = min(max_links or cap, cap)
    return await scan(url, settings=settings, store=store, limit=limit, max_links=max_links,
                      max_candidates=max_candidates, progress=progress)


async def recommend_archived(url: str, *, at: datetime | None = None, limit: int = 10,
                             settings: Settings | None = None, store: Store | None = None,
                             ) -> RelatedResult:
    """Archived pages on the same topic as `url` (seed 004), best first, for a link that is
    neither live nor archived. They are *related* pages, never replacements.

    Raises InvalidURL, and ModelMissing (message: how to train one) when no classifier was
    trained. `url` itself is only classified, never fetched: the requests go to the
    configured archives. `store` is accepted like the other primitives' (nothing is cached).
    """
    from pagetrail.tools.learning.related import recommend_archived as recommend

    del store  # same signature as the other primitives; related pages are not cached
    settings = _settings(settings)
    url = await ensure_fetchable(url, settings)
    try:
        result = await recommend(url, (as_utc(at) if at else None), max(1, min(MAX_RELATED, limit)),
                                 settings=settings)
    except ModelMissing as exc:
        # The original message names a server path; callers only need to know what to do.
        raise ModelMissing(NO_CLASSIFIER, url=url) from exc
    return RelatedResult(
        url=result.url, at=result.at, note=result.note, category=result.category,
        category_source=result.category_source, confidence=round(result.confidence, 4),
        items=[RelatedArchived(url=p.url, memento_url=p.memento_url, datetime=p.datetime,
                               captures=p.captures, score=round(p.score, 4),
                               components={k: None if v is None else round(v, 4)
                                           for k, v in p.components.items()})
               for p in result.items],
        candidates_in_category=result.candidates_in_category, looked_up=result.looked_up,
        archived=result.archived, weights=result.weights, failures=result.failures,
    )


# ------------------------------------------------------------------------ long work, enqueued

MAX_SCAN_LIST = 50  # links per digest section returned to a caller


async def start_site_scan(target: str, *, depth: int = 2, max_pages: int = 500,
                          settings: Settings | None = None, store: Store) -> SiteScanJob:
    """Enqueue a scan of a whole site; poll `site_scan_status(job_id)` for its digest."""
    import uuid

    from pagetrail.tools.scan.scanner import resolve_target
    from pagetrail.tools.workers.dispatch import get_dispatcher

    settings = _settings(settings)
    url, _site = resolve_target(target)
    url = await ensure_fetchable(url, settings)
    job_id = uuid.uuid4().hex
    item = {"target": url, "request": job_id, "depth": depth, "max_pages": max_pages,
            "same_site_only": False}
    # get_dispatcher pings the broker (blocking): off the event loop.
    dispatcher = await asyncio.to_thread(get_dispatcher, settings, store)
    await dispatcher.enqueue("scan", item)
    return SiteScanJob(job_id=job_id, status="queued", target=url)


async def site_scan_status(job_id: str, *, store: Store) -> SiteScanJob:
    """Where a scan started by `start_site_scan` stands, from the store's jobs table."""
    from pagetrail.store.jobs import job_state
    from pagetrail.tools.workers.jobs import job_key

    key = job_key("scan", {"request": job_id})
    state, record = await asyncio.to_thread(job_state, store, "scan", key)
    if record is None:
        return SiteScanJob(job_id=job_id, status=state)
    digest = None
    if state == "done":
        digest = {name: value[:MAX_SCAN_LIST] if isinstance(value, list) else value
                  for name, value in record.result.items()}
    return SiteScanJob(job_id=job_id, status=state, target=str(record.input.get("target", "")),
                       digest=digest, error=record.error)


MAX_ARCHIVE_URLS = 20  # one request's captures (Save Page Now's limits are per account)


async def archive_links(urls: Sequence[str], *, source: str = "api",
                        settings: Settings | None = None, store: Store | None = None,
                        ) -> ArchiveResult:
    """Ask Save Page Now to capture each URL (skipped when archived recently), within IA's
    limits; each capture is recorded in the store. Without IA keys every answer says so."""
    from pagetrail.tools.archive.spn import SavePageNow

    settings = _settings(settings)
    if not urls:
        raise InvalidArgument("give at least one URL to archive")
    if len(urls) > MAX_ARCHIVE_URLS:
        raise InvalidArgument(f"at most {MAX_ARCHIVE_URLS} URLs at a time")
    checked = [await ensure_fetchable(url, settings) for url in urls]
    store = store or configured_store(settings.database_url)
    async with Fetcher(settings) as fetcher:
        client = SavePageNow(settings, fetcher, store)
        results = await asyncio.gather(*(client.capture(url, source=source)
                                         for url in dict.fromkeys(checked)))
    return ArchiveResult(captures=list(results))


# ------------------------------------------------------------------------ the store, workers, guard


def refuse_local_url(url: str, settings: Settings | None = None) -> str:
    """`url` validated and refused (RefusedAddress) when its host is a literal private
    address or a local name: the address guard's checks that need no DNS, for a face that
    must answer before any network I/O (names that resolve to private addresses are
    refused when fetched)."""
    from pagetrail.tools.net.netguard import refuse_local_host

    url = validate_url(url)
    refuse_local_host(url, _settings(settings))
    return url


def migrate_store(database_url: str, revision: str = "head") -> str | None:
    """Bring the database at `database_url` to `revision`; the revision it is at after.
    Under the store's fault policy: a server away is waited for, a refusal (a wrong
    password) is StoreRefused at once."""
    from pagetrail.store.db import create_db_engine, unavailable_as_error
    from pagetrail.store.faults import call_with_policy
    from pagetrail.store.migrate import current_revision, upgrade

    def migrate() -> str | None:
        engine = create_db_engine(database_url)
        try:
            with unavailable_as_error("migrating"):
                upgrade(engine, revision)
                return current_revision(engine)
        finally:
            engine.dispose()

    return call_with_policy(get_settings().store_fault_budget, migrate)


def store_revisions(database_url: str) -> tuple[str | None, str | None]:
    """(the revision the database is at, the newest migration)."""
    from pagetrail.store.db import create_db_engine, unavailable_as_error
    from pagetrail.store.faults import call_with_policy
    from pagetrail.store.migrate import current_revision, head_revision

    def revisions() -> tuple[str | None, str | None]:
        engine = create_db_engine(database_url)
        try:
            with unavailable_as_error("reading the schema revision"):
                return current_revision(engine), head_revision()
        finally:
            engine.dispose()

    return call_with_policy(get_settings().store_fault_budget, revisions)


def run_worker(argv: Sequence[str]) -> None:
    """Run a Celery worker of pagetrail's jobs until it is stopped; `argv` as for Celery's
    `worker` command (call prepare_distributed first for clear configuration errors)."""
    from pagetrail.tools.workers.celery_app import app

    app.worker_main(list(argv))
