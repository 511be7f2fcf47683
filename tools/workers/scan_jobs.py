"""A site scan fanned out over workers: one job per page, the crawl's frontier in the store.

With a broker configured, a scan job (tools.workers.jobs.scan_job) does not crawl the site itself:
1. `start_scan` opens the scan (its id is the scan job's key, so a redelivery finds it), adds
   the seeds (the target; for a site root its sitemap pages, as the in-process scanner does)
   to the frontier (store.frontier) and sends one `page` job per seed;
2. `page_job` crawls one page with the in-process scanner's own code (robots.txt, the fetch
   that is also the page's check, the soft-404 probe, the per-page link cap), claims the URLs
   the page links to under the scan's caps (same-site pages within the depth become pages,
   the rest links, URLs per scan and pages per scan capped as in-process), checks the links
   it claimed, and records the page, its links and every check in one transaction that also
   marks its frontier rows done; the page job that ends a level of the crawl (no page at its
   depth or less left) sends the next level's page jobs — level by level, so that a page's
   depth is its shortest path from a seed, as in the in-process breadth-first crawl, however
   fast each worker is;
3. the page job whose commit leaves no frontier row pending is the coordinator: it takes the
   scan from running to finishing (one caller can), builds the report and the digest from
   the store exactly as an in-process scan does (scanner.summarize, scanner.complete,
   digest.build_digest) and records the scan job's outcome, which the dispatcher is polling.

Redelivery: a page job whose page row is done records nothing again; it only looks for the
end of its level (it may have died before sending the next) and for the drained frontier (it
may have died before finishing the scan). Two deliveries of one page at once: the page
row's lock lets one record (store.frontier.finish_page). A page job lost with a killed worker
comes back from the broker (late acks) and is done then.

Save Page Now: the coordinator asks for captures of the scan's working outbound links
without a recent one (the in-process scanner's own queue and choice, `capture_queue` and
`offer_uncaptured`) before it writes the report, which counts them. Not done here: the
per-URL-shape soft-404 probe is shared within a page job, not across the scan.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from protego import Protego

from pagetrail.store.db import Store
from pagetrail.store.frontier import (
    Candidate,
    begin_finish,
    children,
    claim,
    entry,
    finish_page,
    open_scan_with_id,
    page_notes,
    pending_count,
    send_level,
    unfinished_pages,
)
from pagetrail.store.jobs import JobRecord, record_jobs
from pagetrail.store.linkgraph import Edge
from pagetrail.store.scans import aware, get_scan
from pagetrail.tools.engines.site import is_page_like
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.linkcheck.hostprobe import SiblingProber
from pagetrail.tools.linkcheck.linkstate import Policy
from pagetrail.tools.models import CheckResult
from pagetrail.tools.net.bulkfetch import BulkFetcher
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.netcheck import NetworkDown
from pagetrail.tools.net.netguard import ensure_fetchable
from pagetrail.tools.net.urls import site_of
from pagetrail.tools.scan.scanner import (
    MAX_PROBLEMS,
    PageDone,
    PageProblem,
    RobotsRules,
    Scanner,
    ScanOptions,
    capture_queue,
    complete,
    is_same_site,
    offer_uncaptured,
    resolve_target,
    summarize,
    utc_now,
    write_records,
)
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

Send = Callable[[str, list[dict[str, Any]]], None]  # (job kind, inputs): one job per input
ROBOTS_SCANS_KEPT = 16  # scans whose robots.txt rules a worker process keeps


def scan_options(item: dict[str, Any]) -> ScanOptions:
    return ScanOptions(depth=int(item.get("depth", 2)),
                       max_pages=int(item.get("max_pages", 500)),
                       same_site_only=bool(item.get("same_site_only", False)))


def page_item(scan_id: str, scan_item: dict[str, Any], url: str, depth: int) -> dict[str, Any]:
    """A page job's input: the scan, the page, and the scan's options."""
    return {"scan": scan_id, "url": url, "depth": depth, "target": scan_item["target"],
            "max_depth": int(scan_item.get("depth", 2)),
            "max_pages": int(scan_item.get("max_pages", 500)),
            "same_site_only": bool(scan_item.get("same_site_only", False))}


def candidates(site: str, options: ScanOptions, depth: int, edges: list[Edge]
               ) -> list[Candidate]:
    """What a page at `depth` links to, by the in-process scanner's rules (Scanner._expand):
    a same-site page-like URL within the depth may be crawled; other same-site URLs, and
    other sites' unless same_site_only, are checked. The caps are the frontier's (claim)."""
    found: list[Candidate] = []
    for edge in edges:
        url = edge.target_url
        same = is_same_site(url, site)
        if same and depth + 1 <= options.depth and is_page_like(url):
            found.append(Candidate(url, True, depth + 1))
        elif same or not options.same_site_only:
            found.append(Candidate(url, False, 0))
    return found


# --- robots.txt, once per origin per scan per process -------------------------------------

_robots_rules: OrderedDict[str, dict[str, Protego | None]] = OrderedDict()


def _robots(scan_id: str, fetcher: Fetcher, settings: Settings) -> RobotsRules:
    rules = RobotsRules(fetcher, settings.user_agent)
    rules.preload(_robots_rules.get(scan_id, {}))
    return rules


def _keep_robots(scan_id: str, rules: RobotsRules) -> None:
    _robots_rules[scan_id] = rules.loaded()
    _robots_rules.move_to_end(scan_id)
    while len(_robots_rules) > ROBOTS_SCANS_KEPT:
        _robots_rules.popitem(last=False)


# --- one page, with the in-process scanner's code -------------------------------------------

class _Collected:
    """The scanner's recorder, holding a page job's checks for its one transaction."""

    def __init__(self) -> None:
        self.checks: list[CheckResult] = []
        self.pages: list[PageDone] = []

    async def check(self, result: CheckResult) -> None:
        result.checked_at = utc_now()
        self.checks.append(result)

    async def page(self, url: str, depth: int, edges: list[Edge], result: CheckResult) -> None:
        result.checked_at = utc_now()
        self.pages.append(PageDone(url, depth, edges))
        self.checks.append(result)


class _PageScanner(Scanner):
    """The scanner for one page of a distributed scan: what the page links to is collected
    for the frontier instead of queued in memory, and "already taken" is the frontier's."""

    def __init__(self, item: dict[str, Any], settings: Settings, store: Store) -> None:
        super().__init__(item["target"], store=store, settings=settings,
                         options=ScanOptions(depth=int(item["max_depth"]),
                                             max_pages=int(item["max_pages"]),
                                             same_site_only=bool(item["same_site_only"])),
                         clock=utc_now, scan_id=item["scan"])
        self.found: list[tuple[int, list[Edge]]] = []
        self.landings: list[str] = []
        self.collected = _Collected()
        self.recorder = self.collected  # type: ignore[assignment]

    async def _taken(self, url: str) -> bool:
        if url in self.landings:
            return True
        return await asyncio.to_thread(entry, self.store, self.scan_id, url) is not None

    def _take_landing(self, url: str) -> None:
        self.landings.append(url)

    def _expand(self, depth: int, links: list[Edge]) -> None:
        self.found.append((depth, links))


async def page_job(item: dict[str, Any], settings: Settings, store: Store, send: Send) -> None:
    """Crawl one page of a distributed scan (see the module's docstring)."""
    scan_id, url = str(item["scan"]), str(item["url"])
    own = await asyncio.to_thread(entry, store, scan_id, url)
    if own is None or own.kind != "page":
        log.warning("page job for %s: not a page of scan %s; ignored", url, scan_id)
        return
    if not own.done:
        await _crawl({**item, "depth": own.depth}, settings, store)
    await advance(item, own.depth, settings, store, send, redelivered=own.done)


async def advance(item: dict[str, Any], depth: int, settings: Settings, store: Store,
                  send: Send, *, redelivered: bool) -> None:
    """After a page of level `depth` is done: if that level is over, send the next level's
    pages (one caller does: store.frontier.send_level); if nothing is left, finish."""
    scan_id = str(item["scan"])
    if not await asyncio.to_thread(unfinished_pages, store, scan_id, depth):
        await asyncio.to_thread(
            send_level, store, scan_id, depth + 1,
            lambda pages: send("page", [{**item, "url": e.url, "depth": e.depth}
                                        for e in pages]))
    await maybe_finish(scan_id, settings, store, redelivered=redelivered)


async def _crawl(item: dict[str, Any], settings: Settings, store: Store) -> None:
    scan_id, url, depth = str(item["scan"]), str(item["url"]), int(item["depth"])
    scanner = _PageScanner(item, settings, store)
    async with Fetcher(settings) as fetcher:
        scanner.fetcher = fetcher
        scanner.client = BulkFetcher(fetcher, html_only=True)
        scanner.robots = _robots(scan_id, fetcher, settings)
        scanner.prober = SiblingProber(scanner.client, polite=True)
        try:
            try:
                await scanner._crawl_page(url, depth)
            except NetworkDown:
                raise  # pagetrail's own network: the job is put back, nothing recorded
            except PagetrailError as exc:  # as in the scanner: one URL's failure is its own
                log.warning("scan: %s failed: %s", url, exc)
            found = [c for at, edges in scanner.found
                     for c in candidates(scanner.site, scanner.options, at, edges)]
            claimed = await asyncio.to_thread(
                claim, store, scan_id, url, found, max_urls=settings.scan_max_links,
                max_pages=scanner.options.max_pages, aliases=scanner.landings)
            links = await asyncio.to_thread(children, store, scan_id, url, "link")
            gate = asyncio.Semaphore(max(1, settings.concurrency))

            async def check(link: str) -> None:
                async with gate:
                    try:
                        await scanner._check_link(link)
                    except NetworkDown as exc:
                        scanner.network_down = scanner.network_down or exc
                    except PagetrailError as exc:
                        log.warning("scan: %s failed: %s", link, exc)

            await asyncio.gather(*(check(link.url) for link in links))
            if scanner.network_down is not None:
                # No verdict on any link of this page: the job is put back (celery_app) and
                # checks them again once the network answers.
                raise scanner.network_down
        finally:
            await scanner.client.aclose()
        requests = fetcher.requests + scanner.client.requests
    _keep_robots(scan_id, scanner.robots)
    skipped = Counter(scanner.skipped)
    skipped["links_beyond_scan_cap"] += claimed.beyond_cap
    notes = {"skipped": {k: v for k, v in skipped.items() if v},
             "problems": [asdict(p) for p in scanner.problems], "requests": requests}
    policy = Policy.from_settings(settings)

    def record() -> bool:
        with store.session() as session:
            marked = finish_page(session, scan_id, url, [link.url for link in links], notes)
            if marked is None:
                return False  # another delivery of this page recorded it
            write_records(session, scan_id, policy, utc_now, scanner.collected.checks,
                          scanner.collected.pages)
            return True

    if not await asyncio.to_thread(store.call, record):
        log.info("page %s of scan %s was recorded by another delivery", url, scan_id)


async def abandon_page(item: dict[str, Any], settings: Settings, store: Store, error: str,
                       send: Send) -> None:
    """A page job that failed for good (its retries or time limit spent): the page is done
    as a page the scan could not read (named in the report's problems), the links it had
    claimed are left unchecked, and the scan finishes if that drained its frontier."""
    scan_id, url = str(item["scan"]), str(item["url"])
    links = await asyncio.to_thread(children, store, scan_id, url, "link")
    notes = {"skipped": {"pages_unreadable": 1, "links_unchecked": len(links)},
             "problems": [asdict(PageProblem(url=url, code="job_failed",
                                             reason=error[:300]))], "requests": 0}

    def record() -> None:
        with store.session() as session:
            finish_page(session, scan_id, url, [link.url for link in links], notes)

    await asyncio.to_thread(store.call, record)
    own = await asyncio.to_thread(entry, store, scan_id, url)
    await advance(item, own.depth if own else int(item["depth"]), settings, store, send,
                  redelivered=True)


# --- the scan: start and finish -----------------------------------------------------------

async def start_scan(item: dict[str, Any], key: str, settings: Settings, store: Store,
                     send: Send) -> None:
    """Open the scan (id = the scan job's key), add its seeds, send their page jobs."""
    seed, site_mode = resolve_target(item["target"])
    await ensure_fetchable(seed, settings)
    options = scan_options(item)
    await asyncio.to_thread(open_scan_with_id, store, key, seed, options.key(seed),
                            {**asdict(options), "site_mode": site_mode, "job": item})
    seeds = [seed]
    if site_mode:
        scanner = Scanner(seed, store=store, settings=settings, options=options,
                          clock=utc_now, scan_id=key)
        async with Fetcher(settings) as fetcher:
            scanner.fetcher = fetcher
            scanner.robots = _robots(key, fetcher, settings)
            seeds += await scanner._sitemap_seeds()
            _keep_robots(key, scanner.robots)
    seeds = list(dict.fromkeys(seeds))[:options.max_pages]
    await asyncio.to_thread(claim, store, key, "", [Candidate(url, True, 0) for url in seeds],
                            max_urls=settings.scan_max_links, max_pages=options.max_pages)
    # The seeds are level 0: sent unless a first delivery of this job sent them.
    await asyncio.to_thread(send_level, store, key, 0, lambda pages: send(
        "page", [page_item(key, item, e.url, e.depth) for e in pages]))
    await maybe_finish(key, settings, store, redelivered=True)


async def maybe_finish(scan_id: str, settings: Settings, store: Store, *,
                       redelivered: bool) -> None:
    """Finish the scan if its frontier is drained and this caller is its coordinator: the one
    that took it from running to finishing, or — when that one died mid-way — a redelivered
    job that finds it still finishing."""
    if await asyncio.to_thread(pending_count, store, scan_id):
        return
    if not await asyncio.to_thread(begin_finish, store, scan_id):
        scan = await asyncio.to_thread(get_scan, store, scan_id)
        if not redelivered or scan is None or scan.status != "finishing":
            return
    captures = await capture_outbound(store, scan_id, settings)
    await asyncio.to_thread(_finish, store, scan_id, settings, captures)


async def capture_outbound(store: Store, scan_id: str, settings: Settings) -> dict[str, int]:
    """Save Page Now captures of the scan's working outbound links without a recent one, as
    an in-process scan asks for (tools.scan.scanner.capture_queue): asked by the coordinator
    once the frontier is drained, within one capture's budget. Counts per status ({}: off,
    or no keys)."""
    scan = await asyncio.to_thread(get_scan, store, scan_id)
    if scan is None:
        return {}
    async with Fetcher(settings) as fetcher:
        queue = capture_queue(settings, fetcher, store, utc_now)
        if queue is None:
            return {}
        try:
            await offer_uncaptured(queue, store, scan_id, site_of(scan.target), settings,
                                   utc_now)
        finally:
            counts = await queue.close()
    return counts


def _finish(store: Store, scan_id: str, settings: Settings, captures: dict[str, int]) -> None:
    from pagetrail.tools.scan.digest import build_digest, to_json
    from pagetrail.tools.workers.keys import job_key

    scan = get_scan(store, scan_id)
    assert scan is not None
    job = dict(scan.options.get("job") or {})
    skipped: Counter[str] = Counter()
    problems: list[PageProblem] = []
    requests = 0
    for _url, notes in page_notes(store, scan_id):
        skipped.update(notes.get("skipped") or {})
        problems.extend(PageProblem(**p) for p in notes.get("problems") or [])
        requests += int(notes.get("requests") or 0)
    started = aware(scan.started_at) or utc_now()
    now = utc_now()
    result = summarize(store, scan_id, target=scan.target, resumed=False, started_at=started,
                       finished_at=now, seconds=(now - started).total_seconds(),
                       requests=requests, policy=Policy.from_settings(settings))
    complete(store, result, settings, skipped, problems[:MAX_PROBLEMS], captures, at=now)
    digest = build_digest(store, result)
    record_jobs(store, [JobRecord("scan", job_key("scan", job), job, "done", to_json(digest))])
    log.info("scan %s of %s finished: %d URLs checked", scan_id, scan.target,
             result.urls_checked)
