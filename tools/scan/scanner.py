"""The link-rot scanner: crawl a site, check every distinct link once, remember over time.

One scan (`scan(target, store=..., settings=...)`):
1. seeds: the target page; for a site root also its sitemap(s) (robots.txt `Sitemap:` lines
   and /sitemap.xml);
2. crawl same-site HTML pages breadth-first up to `depth` and `max_pages`, politely, never
   where robots.txt disallows; the fetch of a crawled page is also its check;
3. record each page's links (anchor text and context) in the link graph (store.linkgraph):
   these edges are the link-neighbourhood evidence of a later recovery;
4. check every other distinct link once (one GET, soft-404 probe shared per URL shape —
   tools.linkcheck.hostprobe), with `concurrency` workers; per-host limits come from the fetch layer.
   Pages, checks and probes go through the lean keep-alive client (tools.net.bulkfetch: same
   SSRF guard, redirects and bounds as the Fetcher, a fraction of its CPU per request);
   crawled pages are parsed for their links only (document.extract_links);
5. record each check with the confirmation-state change it causes (tools.linkcheck.linkstate), in one
   transaction per batch, so a scan killed mid-way resumes without redoing recorded work: the
   next run with the same target and options continues the unfinished scan, skips the pages
   whose links are stored and the URLs already checked.

The report (`ScanResult`) is rebuilt from the stored checks, so a resumed scan reports the
whole scan, not just its second half.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from protego import Protego

from pagetrail.store.db import JSONText, Store
from pagetrail.store.linkgraph import Edge, outlinks, replace_edges_of_pages
from pagetrail.store.scans import (
    aware,
    checked_in_scan,
    done_pages,
    finish_scan,
    insert_checks,
    load_state_rows,
    open_scan,
    record_pages_done,
    save_state_rows,
    scan_checks_and_counts,
    url_key,
)
from pagetrail.tools.archive.spn import CaptureQueue, SavePageNow, credentials, say_no_keys_once
from pagetrail.tools.engines.site import is_page_like, parse_sitemap, robots_sitemaps
from pagetrail.tools.errors import (
    BodyTooLarge,
    DecompressionBomb,
    FetchFailed,
    InvalidURL,
    PagetrailError,
    RefusedAddress,
    TooManyRedirects,
    UnsupportedContent,
)
from pagetrail.tools.linkcheck.check import ensure_network, observe_error
from pagetrail.tools.linkcheck.hostprobe import SiblingProber, assess, judge, may_need_sibling
from pagetrail.tools.linkcheck.linkstate import (
    LinkState,
    Policy,
    advance,
    earliest_confirmation,
)
from pagetrail.tools.linkcheck.linkstate import since as state_since
from pagetrail.tools.models import CheckResult, Link
from pagetrail.tools.net.bulkfetch import BulkFetcher
from pagetrail.tools.net.fetch import Fetcher, Response
from pagetrail.tools.net.netcheck import NetworkDown
from pagetrail.tools.net.netguard import ensure_fetchable
from pagetrail.tools.net.urls import site_of, validate_url
from pagetrail.tools.offload import off_loop
from pagetrail.tools.settings import Settings, get_settings

if TYPE_CHECKING:
    from pagetrail.store.db import Transaction

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
ProgressFn = Callable[[int, int], None]  # (done, total known so far)

FETCH_ERRORS = (FetchFailed, RefusedAddress, TooManyRedirects, BodyTooLarge, DecompressionBomb,
                UnsupportedContent)
FLUSH_EVERY = 1000  # checks and pages per store transaction (fewer, larger: cheaper)
FLUSH_SECONDS = 1.0  # ... or this often, whichever first: a kill loses at most this much
MAX_SITEMAP_FILES = 5
# Pages larger than this are parsed in the CPU pool (tools.offload): a small page costs less
# to parse than the hop, a large one would hold the loop (and a bot's acks) for seconds.
OFF_LOOP_BYTES = 256 * 1024
HTML_TYPES = ("text/html", "application/xhtml+xml")


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ScanOptions:
    depth: int = 2
    max_pages: int = 500
    same_site_only: bool = False
    concurrency: int | None = None  # None: settings.concurrency

    def key(self, target: str) -> str:
        """Identity of a scan for resuming: target and the options that shape the crawl."""
        payload = json.dumps({"target": target, "depth": self.depth, "max": self.max_pages,
                              "same": self.same_site_only}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class LinkChange:
    url: str
    verdict: str
    status: int | None
    reason: str
    before: str
    after: str
    failures: int = 0
    first_failed_at: str | None = None
    since: str | None = None  # since when it is in state `after` (ISO time)
    confirmable_at: str | None = None  # a suspect link: the earliest it can be confirmed


@dataclass
class PageProblem:
    """A page the scan meant to read and could not (its links are missing from the scan)."""

    url: str
    code: str  # the PagetrailError code: body_too_large, decompression_bomb, fetch_failed…
    reason: str


MAX_PROBLEMS = 50  # page problems listed in a result (all are counted)


@dataclass
class ScanResult:
    scan_id: str
    target: str
    resumed: bool
    started_at: str
    finished_at: str
    seconds: float
    pages_crawled: int
    links_found: int  # link occurrences on crawled pages (edges)
    urls_checked: int  # distinct URLs checked (pages included)
    requests: int
    verdicts: dict[str, int]
    states: dict[str, int]  # state after this scan, per checked URL
    changes: list[LinkChange] = field(default_factory=list)  # URLs whose state changed
    # Every checked URL in a state worth reporting (REPORTED_STATES), changed or not: a link
    # still suspect, still dead or still flapping is reported each scan, with since-when.
    links: list[LinkChange] = field(default_factory=list)
    # What this run did not do, and why: {"links_beyond_page_cap": n, "links_beyond_scan_cap":
    # n, "pages_unreadable": n}; the unreadable pages, listed (MAX_PROBLEMS at most).
    skipped: dict[str, int] = field(default_factory=dict)
    problems: list[PageProblem] = field(default_factory=list)
    limits: dict[str, int] = field(default_factory=dict)  # the caps this run applied
    # Save Page Now requests for outbound links first seen by this scan, per outcome.
    captures: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """to_dict() without `changes` and `links`: the counts a finished scan keeps (a first
        scan of a site changes every URL's state; deep-copying that list only to drop it is
        costly)."""
        kept = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("changes", "links", "problems")}
        return {**kept, "problems": [asdict(p) for p in self.problems]}


# --- pure helpers ---------------------------------------------------------------------------

def resolve_target(text: str) -> tuple[str, bool]:
    """(seed URL, whether it is a whole site). A bare host name means its https root."""
    raw = text.strip()
    if raw and "://" not in raw:
        raw = "https://" + raw
    url = validate_url(raw)
    parts = urlsplit(url)
    if not parts.path:
        url = urlunsplit((parts.scheme, parts.netloc, "/", parts.query, ""))
    return url, urlsplit(url).path == "/" and not parts.query


def is_same_site(url: str, site: str) -> bool:
    return site_of(url) == site


class RobotsRules:
    """robots.txt per origin, fetched once per run. Unreadable or missing robots.txt allows
    everything: a site that cannot serve robots.txt must still be checkable (its links may be
    dead precisely because the host is gone).

    Parsed by protego (RFC 9309: `*` and `$` wildcards, the longest matching rule wins, Allow
    wins a tie, the most specific user-agent group applies), not urllib.robotparser, which
    ignores wildcards and takes the first matching rule."""

    def __init__(self, fetcher: Fetcher, user_agent: str) -> None:
        self.fetcher = fetcher
        self.agent = user_agent.split("/", 1)[0]
        self._rules: dict[str, asyncio.Future[Protego | None]] = {}
        self._loaded: dict[str, Protego | None] = {}  # origins whose load finished
        self.texts: dict[str, str] = {}

    def loaded(self) -> dict[str, Protego | None]:
        """The rules of the origins loaded so far (None: allow all), to hand to `preload`."""
        return dict(self._loaded)

    def preload(self, rules: dict[str, Protego | None]) -> None:
        """Take rules another run of the same scan loaded (a page job's process keeps them:
        robots.txt is read once per origin per scan and process, not once per page)."""
        self._loaded.update(rules)

    @staticmethod
    def origin(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc.lower()}"

    async def _load(self, origin: str) -> Protego | None:
        try:
            response = await self.fetcher.get(origin + "/robots.txt", polite=True,
                                              max_bytes=512 * 1024)
        except (*FETCH_ERRORS, InvalidURL):
            return None
        if response.status != 200:
            return None
        text = response.text()
        self.texts[origin] = text
        return Protego.parse(text)

    async def allowed(self, url: str) -> bool:
        origin = self.origin(url)
        if origin in self._loaded:  # the common case: no future to await
            rules = self._loaded[origin]
            return rules is None or rules.can_fetch(url, self.agent)
        future = self._rules.get(origin)
        if future is None:
            future = self._rules[origin] = asyncio.get_running_loop().create_future()
            try:
                future.set_result(await self._load(origin))
            except BaseException:
                future.set_result(None)  # waiters go on; the URL's own check will tell
                raise
        rules = await asyncio.shield(future)
        self._loaded[origin] = rules
        return rules is None or rules.can_fetch(url, self.agent)


def blocked_by_robots(url: str) -> CheckResult:
    return CheckResult(url=url, verdict="blocked", reason="robots.txt disallows it",
                       evidence={"robots": True})


# --- recording ----------------------------------------------------------------------------

@dataclass
class PageDone:
    url: str
    depth: int
    edges: list[Edge]


class Recorder:
    """Batches checks and crawled pages into store transactions (off the event loop).

    A check and the state change it causes are written together; a page is marked done only
    after its edges are stored. Killing the process loses at most the unflushed batch.
    """

    def __init__(self, store: Store, scan_id: str, policy: Policy, clock: Clock,
                 first_seen: Callable[[list[CheckResult]], None] | None = None) -> None:
        self.store = store
        self.first_seen = first_seen  # told of URLs no earlier scan had checked
        self.scan_id = scan_id
        self.policy = policy
        self.clock = clock
        self._checks: list[CheckResult] = []
        self._pages: list[PageDone] = []
        self._lock = asyncio.Lock()
        self._last_flush = time.monotonic()

    async def check(self, result: CheckResult) -> None:
        result.checked_at = self.clock()
        self._checks.append(result)
        await self._maybe_flush()

    async def page(self, url: str, depth: int, edges: list[Edge], result: CheckResult) -> None:
        """A crawled page: its links and its own check, recorded in the same batch."""
        result.checked_at = self.clock()
        self._pages.append(PageDone(url, depth, edges))
        self._checks.append(result)
        await self._maybe_flush()

    async def _maybe_flush(self) -> None:
        if self._lock.locked():
            return  # a write is under way: keep collecting, never make workers queue up
        if (len(self._checks) + len(self._pages) >= FLUSH_EVERY
                or time.monotonic() - self._last_flush >= FLUSH_SECONDS):
            await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            checks, pages = self._checks, self._pages
            self._checks, self._pages = [], []
            self._last_flush = time.monotonic()
            if checks or pages:
                new = await asyncio.to_thread(self._write, checks, pages)
                if new and self.first_seen is not None:
                    self.first_seen(new)

    def _write(self, checks: list[CheckResult], pages: list[PageDone]) -> list[CheckResult]:
        """Record the batch; return the checks of URLs seen for the first time."""
        # One transaction: a page is marked done together with its stored links (a kill
        # before the commit loses both, and the resumed scan crawls the page again), and a
        # check together with the state change it causes.
        return self.store.call(self._write_once, checks, pages)

    def _write_once(self, checks: list[CheckResult], pages: list[PageDone]) -> list[CheckResult]:
        with self.store.session() as session:
            return write_records(session, self.scan_id, self.policy, self.clock, checks, pages)


def write_records(session: Transaction, scan_id: str, policy: Policy, clock: Clock,
                  checks: list[CheckResult], pages: list[PageDone]) -> list[CheckResult]:
    """Record crawled pages (their links) and checks (with the state change each causes) in
    the caller's transaction; return the checks of URLs seen for the first time."""
    replace_edges_of_pages(session, [(p.url, p.edges) for p in pages])
    record_pages_done(session, scan_id, [(p.url, p.depth) for p in pages])
    rows = load_state_rows(session, [c.url for c in checks])
    new_states: dict[str, dict[str, Any]] = {}
    changed_states: dict[str, dict[str, Any]] = {}
    check_rows: list[dict[str, Any]] = []
    first: list[CheckResult] = []
    for result in checks:
        row = rows.get(result.url)
        if row is not None and row["last_scan_id"] == scan_id:
            continue  # already recorded by this scan (a retried batch)
        before = _state_of(row)
        at = result.checked_at or clock()
        after = advance(before, result.verdict, at, policy)
        stored = _state_row(result.url, after, scan_id)
        (changed_states if row is not None else new_states)[result.url] = stored
        if row is None:
            first.append(result)
        rows[result.url] = stored
        check_rows.append(_check_row(result, at, before, after, scan_id))
    save_state_rows(session, list(new_states.values()), list(changed_states.values()))
    insert_checks(session, check_rows)
    return first


def _check_row(result: CheckResult, at: datetime, before: LinkState, after: LinkState,
               scan_id: str) -> dict[str, Any]:
    """The LinkCheck row of one check, with the state change it caused in its evidence."""
    evidence = dict(result.evidence)
    evidence["reason"] = result.reason
    evidence["state"] = {"before": before.state, "after": after.state,
                         "failures": after.failures}
    return {"url": result.url, "checked_at": at, "verdict": result.verdict,
            "status": result.status, "final_url": result.final_url,
            "evidence": _serialized(evidence), "scan_id": scan_id}


def _serialized(value: dict[str, Any]) -> JSONText:
    """`value` as JSON, values JSON cannot hold written as strings. The text stored is what
    storing the JSON-able copy (json.loads of this) would store: json.dumps of it again."""
    return JSONText(json.dumps(value, default=str))


def _state_of(row: dict[str, Any] | None) -> LinkState:
    if row is None:
        return LinkState()
    return LinkState(
        state=row["state"],
        counted=tuple(aware(datetime.fromisoformat(t)) for t in row["counted"] or ()),  # type: ignore[misc]
        history=row["history"] or "",
        first_failed_at=aware(row["first_failed_at"]),
        last_checked_at=aware(row["last_checked_at"]),
        last_verdict=row["last_verdict"] or "",
        confirmed_at=aware(row["confirmed_at"]),
        changed_at=aware(row["changed_at"]),
    )


def _state_row(url: str, state: LinkState, scan_id: str) -> dict[str, Any]:
    """A LinkStateRow (store.scans.STATE_COLUMNS) holding `state`."""
    return {"url_key": url_key(url), "url": url, "state": state.state,
            "counted": [t.isoformat() for t in state.counted], "history": state.history,
            "first_failed_at": state.first_failed_at,
            "last_checked_at": state.last_checked_at, "last_verdict": state.last_verdict,
            "confirmed_at": state.confirmed_at, "changed_at": state.changed_at,
            "last_scan_id": scan_id}


# --- the crawl ------------------------------------------------------------------------------

class Scanner:
    """One scan of one target. Use `await Scanner(...).run()`."""

    def __init__(self, target: str, *, store: Store, settings: Settings,
                 options: ScanOptions, clock: Clock, progress: ProgressFn | None = None,
                 scan_id: str | None = None) -> None:
        self.seed, self.site_mode = resolve_target(target)
        self.site = site_of(self.seed)
        self.store = store
        self.options = options
        self.settings = settings
        if options.concurrency:
            self.settings = settings.model_copy(update={"concurrency": options.concurrency})
        self.clock = clock
        self.progress = progress
        self.scan_id = scan_id or uuid.uuid4().hex
        self.resumed = False
        self._scheduled: set[str] = set()  # URLs queued for a check (pages included)
        self._pages = 0  # pages queued for crawling
        self._queue: asyncio.Queue[tuple[str, str, int]] = asyncio.Queue()
        self._already: dict[str, str] = {}  # URL → verdict recorded earlier by this scan
        self._done = 0
        self._total = 0
        self.skipped: Counter[str] = Counter()
        self.problems: list[PageProblem] = []
        self.captures: CaptureQueue | None = None
        # Set when pagetrail's own network is down (tools/net/netcheck.py): the run stops
        # and raises it; nothing more is checked or recorded.
        self.network_down: NetworkDown | None = None

    # -- scheduling --
    def _schedule_page(self, url: str, depth: int) -> None:
        if not self._admit(url):
            return
        self._pages += 1
        self._total += 1
        self._queue.put_nowait(("page", url, depth))

    def _room(self) -> bool:
        """Whether the scan may take one more URL (settings.scan_max_links, pages included)."""
        return len(self._scheduled) < self.settings.scan_max_links

    def _admit(self, url: str) -> bool:
        """Take `url` into the scan unless it is in already or the scan is at its cap
        (counted as skipped)."""
        if url in self._scheduled:
            return False
        if not self._room():
            self.skipped["links_beyond_scan_cap"] += 1
            return False
        self._scheduled.add(url)
        return True

    def _schedule_check(self, url: str) -> None:
        if not self._admit(url):
            return
        if url in self._already:
            return  # recorded before the interruption
        self._total += 1
        self._queue.put_nowait(("link", url, 0))

    def _expand(self, depth: int, links: list[Edge]) -> None:
        """Queue what a crawled page links to: same-site pages to crawl, the rest to check."""
        for edge in links:
            url = edge.target_url
            if url in self._scheduled:
                continue  # queued once already (most links of a site are shared by pages)
            same = is_same_site(url, self.site)
            if (same and depth + 1 <= self.options.depth and is_page_like(url)
                    and self._pages < self.options.max_pages and url not in self._already):
                self._schedule_page(url, depth + 1)
            elif same or not self.options.same_site_only:
                self._schedule_check(url)

    # -- workers --
    async def _crawl_page(self, url: str, depth: int) -> None:
        if not await self.robots.allowed(url):
            await self.recorder.check(blocked_by_robots(url))
            return
        try:
            response = await self.client.get(url, polite=True)
        except FETCH_ERRORS as exc:
            observed = observe_error(url, "GET", exc)
            await ensure_network(self.fetcher, observed)  # NetworkDown: no verdict at all
            self._problem(url, exc)
            await self.recorder.check(judge(url, observed, None))
            return
        # A redirect onto a page crawled in its own right: its links are recorded there.
        landed_elsewhere = response.final_url != url and await self._taken(response.final_url)
        want_links = response.content_type in HTML_TYPES and not landed_elsewhere \
            and is_same_site(response.final_url, self.site)
        result, links = await self._assess(url, response, want_links)
        cap = self.settings.scan_max_links_per_page
        if len(links) > cap:
            self.skipped["links_beyond_page_cap"] += len(links) - cap
            self.skipped["pages_over_link_cap"] += 1
            links = links[:cap]
        edges = [Edge(url, link.url, link.anchor, link.context) for link in links]
        if want_links and result.verdict in ("ok", "redirected"):
            # A redirect lands on a page that may be linked too: do not crawl it twice.
            self._take_landing(response.final_url)
        await self.recorder.page(url, depth, edges, result)
        self._expand(depth, edges)

    async def _taken(self, url: str) -> bool:
        """Whether the scan has taken `url` on (queued, crawled or checked)."""
        return url in self._scheduled

    def _take_landing(self, url: str) -> None:
        """A crawled page's redirect landed on `url`: never crawl or check it in its own right."""
        self._scheduled.add(url)

    def _problem(self, url: str, exc: PagetrailError) -> None:
        self.skipped["pages_unreadable"] += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(PageProblem(url=url, code=exc.code, reason=str(exc)[:300]))

    async def _assess(self, url: str, response: Response, want_links: bool
                      ) -> tuple[CheckResult, list[Link]]:
        """Verdict (and links) of a fetched page, with the shape's soft-404 probe."""
        sibling = await self.prober.sibling_for(url) if may_need_sibling(url, response) else None
        if len(response.content) > OFF_LOOP_BYTES:  # a big page: parsed off the loop
            return await off_loop(assess, url, response, sibling, want_links=want_links)
        return assess(url, response, sibling, want_links=want_links)

    async def _check_link(self, url: str) -> None:
        """One GET plus the shape's shared probe: hostprobe.scan_check, with the fetch
        failures and the judging split as for crawled pages."""
        try:
            if not await self.robots.allowed(url):
                result = blocked_by_robots(url)
            else:
                url = validate_url(url)
                try:
                    response = await self.client.get(url, polite=True)
                except FETCH_ERRORS as exc:
                    observed = observe_error(url, "GET", exc)
                    await ensure_network(self.fetcher, observed)
                    result = judge(url, observed, None)
                else:
                    result, _ = await self._assess(url, response, want_links=False)
        except InvalidURL as exc:
            result = CheckResult(url=url, verdict="refused", reason=str(exc))
        await self.recorder.check(result)

    async def _worker(self) -> None:
        while True:
            kind, url, depth = await self._queue.get()
            try:
                if kind == "page":
                    await self._crawl_page(url, depth)
                else:
                    await self._check_link(url)
            except NetworkDown as exc:  # nothing can be reached: stop, record no verdict
                self.network_down = self.network_down or exc
                self._drop_queued()
            except PagetrailError as exc:  # a named failure of one URL never stops the scan
                log.warning("scan: %s failed: %s", url, exc)
            finally:
                self._done += 1
                if self.progress is not None:
                    self.progress(self._done, self._total)
                self._queue.task_done()

    def _drop_queued(self) -> None:
        """The network is down: what is still queued is not checked (nor recorded)."""
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()

    # -- seeds --
    async def _sitemap_seeds(self) -> list[str]:
        origin = RobotsRules.origin(self.seed)
        await self.robots.allowed(self.seed)  # loads robots.txt (its Sitemap: lines)
        queue = robots_sitemaps(self.robots.texts.get(origin, ""), origin) \
            or [origin + "/sitemap.xml"]
        pages: list[str] = []
        fetched = 0
        while queue and fetched < MAX_SITEMAP_FILES and len(pages) < self.options.max_pages:
            sitemap = queue.pop(0)
            fetched += 1
            try:
                response = await self.fetcher.get(sitemap, polite=True)
            except (*FETCH_ERRORS, InvalidURL):
                continue
            if response.status != 200:
                continue
            try:
                entries = parse_sitemap(response.content)
            except UnsupportedContent as exc:  # corrupt/oversized .gz: no seeds from it
                log.warning("scan: sitemap %s skipped: %s", sitemap, exc)
                continue
            queue.extend(entries.sitemaps)
            pages.extend(url for url, _ in entries.pages if is_same_site(url, self.site))
        return pages

    async def _seed(self) -> None:
        if self.resumed:
            self._already = await asyncio.to_thread(checked_in_scan, self.store, self.scan_id)
            done = await asyncio.to_thread(done_pages, self.store, self.scan_id)
            links = await asyncio.to_thread(outlinks, self.store, [p.url for p in done])
            for page in done:
                self._scheduled.add(page.url)
                self._pages += 1
            for page in done:
                self._expand(page.depth, links.get(page.url, []))
        self._schedule_seed(self.seed, 0)
        if self.site_mode:
            for url in await self._sitemap_seeds():
                if self._pages >= self.options.max_pages:
                    break
                self._schedule_seed(url, 0)

    def _schedule_seed(self, url: str, depth: int) -> None:
        if url in self._already:
            self._scheduled.add(url)
            return
        self._schedule_page(url, depth)

    # -- Save Page Now --
    def _capture_queue(self, fetcher: Fetcher) -> CaptureQueue | None:
        return capture_queue(self.settings, fetcher, self.store, self.clock)

    def _first_seen(self, results: list[CheckResult]) -> None:
        assert self.captures is not None
        for result in results:
            if result.verdict in ("ok", "redirected") and not is_same_site(result.url, self.site):
                self.captures.offer(result.url)

    async def _offer_uncaptured(self) -> None:
        assert self.captures is not None
        await offer_uncaptured(self.captures, self.store, self.scan_id, self.site,
                               self.settings, self.clock)

    # -- the run --
    async def run(self) -> ScanResult:
        started = time.monotonic()
        started_at = self.clock()
        # The target is a user's URL: refused like in every other face, before anything
        # is recorded (a loopback target is an error, not a scan of one unreachable page).
        await ensure_fetchable(self.seed, self.settings)
        key = self.options.key(self.seed)
        self.scan_id, self.resumed = await asyncio.to_thread(
            open_scan, self.store, self.scan_id, self.seed, key,
            {**asdict(self.options), "site_mode": self.site_mode}, at=started_at)
        async with Fetcher(self.settings) as fetcher:
            self.captures = self._capture_queue(fetcher)
            self.recorder = Recorder(self.store, self.scan_id,
                                     Policy.from_settings(self.settings), self.clock,
                                     first_seen=self._first_seen if self.captures else None)
            # Bulk GETs (pages, checks, probes) take the lean client; robots.txt and
            # sitemaps, read once, the full one (which is also the lean one's fallback).
            self.fetcher = fetcher
            self.client = BulkFetcher(fetcher, html_only=True)
            self.robots = RobotsRules(fetcher, self.settings.user_agent)
            self.prober = SiblingProber(self.client, polite=True)
            workers: list[asyncio.Task[None]] = []
            finished = False
            try:
                await self._seed()
                workers = [asyncio.create_task(self._worker())
                           for _ in range(max(1, self.settings.concurrency))]
                await self._queue.join()
                if self.network_down is not None:
                    raise self.network_down  # the scan stays unfinished: resumable
                finished = True
            finally:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                await self.recorder.flush()
                await self.client.aclose()
                if finished and self.captures:
                    await self._offer_uncaptured()
                # Captures finish after the checks (within one capture's budget); a failed
                # scan stops them at once.
                capture_counts = (await self.captures.close(None if finished else 0)
                                  if self.captures else {})
            requests = fetcher.requests + self.client.requests
        result = await asyncio.to_thread(
            summarize, self.store, self.scan_id, target=self.seed, resumed=self.resumed,
            started_at=started_at, finished_at=self.clock(),
            seconds=time.monotonic() - started, requests=requests,
            policy=Policy.from_settings(self.settings))
        return await asyncio.to_thread(complete, self.store, result, self.settings,
                                       self.skipped, self.problems, capture_counts,
                                       at=self.clock())


def capture_queue(settings: Settings, fetcher: Fetcher, store: Store,
                  clock: Clock) -> CaptureQueue | None:
    """Save Page Now captures of a scan's outbound links, beside its checks (None: turned
    off, or no keys — the latter said once per process). Started; `close()` it."""
    if not settings.spn_on_scan or settings.spn_scan_max <= 0:
        return None
    if credentials(settings) is None:
        say_no_keys_once()
        return None
    spn = SavePageNow(settings, fetcher, store, clock=clock)
    queue = CaptureQueue(spn, limit=settings.spn_scan_max, source="scan")
    queue.start()
    return queue


async def offer_uncaptured(queue: CaptureQueue, store: Store, scan_id: str, site: str,
                           settings: Settings, clock: Clock) -> None:
    """Offer the scan's working outbound links still without a recent capture (an earlier
    scan's capture failed, was stopped or hit a limit; or — a scan fanned out over workers —
    nobody asked yet): after the first-seen ones the in-process scan offered as it went."""
    from pagetrail.store.captures import covered

    verdicts = await asyncio.to_thread(checked_in_scan, store, scan_id)
    working = sorted(url for url, verdict in verdicts.items()
                     if verdict in ("ok", "redirected") and not is_same_site(url, site))
    since = clock() - timedelta(days=settings.spn_recent_days)
    done = await asyncio.to_thread(covered, store, working, since)
    for url in working:
        if url not in done:
            queue.offer(url)


def complete(store: Store, result: ScanResult, settings: Settings, skipped: Counter[str],
             problems: list[PageProblem], captures: dict[str, int], *,
             at: datetime) -> ScanResult:
    """Add what the run (not the store) knows to the report, and mark the scan done with its
    summary."""
    result.skipped = {k: v for k, v in sorted(skipped.items()) if v}
    result.problems = list(problems)
    result.limits = {"links_per_page": settings.scan_max_links_per_page,
                     "links_per_scan": settings.scan_max_links,
                     "bytes_per_page": settings.max_bytes}
    result.captures = captures
    finish_scan(store, result.scan_id, result.summary(), at=at)
    return result


REPORTED_STATES = frozenset({"suspect", "confirmed", "fixed", "flapping"})


def summarize(store: Store, scan_id: str, *, target: str, resumed: bool, started_at: datetime,
              finished_at: datetime, seconds: float, requests: int,
              policy: Policy | None = None) -> ScanResult:
    """The scan's report, from what the store holds for it (complete after a resume)."""
    verdicts: Counter[str] = Counter()
    states: Counter[str] = Counter()
    changes: list[LinkChange] = []
    rows, pages, edges = scan_checks_and_counts(store, scan_id)
    reported: list[LinkChange] = []
    for url, verdict, status, evidence in rows:
        verdicts[verdict] += 1
        state = (evidence or {}).get("state") or {}
        after = str(state.get("after", "new"))
        before = str(state.get("before", "new"))
        states[after] += 1
        if after != before or after in REPORTED_STATES:
            link = LinkChange(url=url, verdict=verdict, status=status,
                              reason=str((evidence or {}).get("reason", "")),
                              before=before, after=after,
                              failures=int(state.get("failures", 0)))
            if after != before:
                changes.append(link)
            if after in REPORTED_STATES:
                reported.append(link)
    _add_since(store, reported, policy or Policy())
    changes.sort(key=lambda c: (c.after, c.url))
    reported.sort(key=lambda c: (c.after, c.url))
    return ScanResult(scan_id=scan_id, target=target, resumed=resumed,
                      started_at=started_at.isoformat(), finished_at=finished_at.isoformat(),
                      seconds=round(seconds, 3), pages_crawled=pages, links_found=edges,
                      urls_checked=len(rows), requests=requests, verdicts=dict(verdicts),
                      states=dict(states), changes=changes, links=reported)


def _add_since(store: Store, links: list[LinkChange], policy: Policy) -> None:
    """Fill each link's since-when and, if suspect, its earliest confirmation, from the
    link states the scan left (the latest: this scan's)."""
    from pagetrail.store.scans import load_state_rows

    def read() -> dict[str, dict[str, Any]]:
        with store.session() as s:
            return load_state_rows(s, [link.url for link in links])

    rows = store.call(read)
    for link in links:
        row = rows.get(link.url)
        if row is None or row["state"] != link.after:
            continue  # a later scan moved it on: this report keeps what it saw
        state = _state_of(row)
        moment, confirmable = state_since(state), earliest_confirmation(state, policy)
        link.since = moment.isoformat() if moment else None
        link.first_failed_at = (state.first_failed_at.isoformat()
                                if state.first_failed_at else None)
        link.confirmable_at = confirmable.isoformat() if confirmable else None


async def scan(target: str, *, store: Store, settings: Settings | None = None,
               options: ScanOptions | None = None, clock: Clock | None = None,
               progress: ProgressFn | None = None) -> ScanResult:
    """Scan `target` (a page URL, a site root, or a bare host name). Raises InvalidURL, and
    NetworkDown when pagetrail's own network is down (the scan stops; no verdict recorded)."""
    scanner = Scanner(target, store=store, settings=settings or get_settings(),
                      options=options or ScanOptions(), clock=clock or utc_now,
                      progress=progress)
    return await scanner.run()

