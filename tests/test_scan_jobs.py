"""A site scan fanned out as page jobs (tools.workers.scan_jobs), driven in this process: the page
jobs a job sends are collected and run one after the other, some of them twice (a
redelivery), against a real local site and the real store (SQLite and PostgreSQL).
Worker processes, Redis and kill -9 are in test_workers.py."""

from __future__ import annotations

import random
from typing import Any

from sqlalchemy import func, select
from test_scanner import T0, Clock, Site, fast_settings, page

from pagetrail.store import Store
from pagetrail.store.frontier import counts
from pagetrail.store.jobs import load_jobs
from pagetrail.store.models import LinkCheck, LinkEdge
from pagetrail.store.scans import get_scan, states_by_url
from pagetrail.tools.scan.scanner import ScanOptions, scan
from pagetrail.tools.workers.jobs import job_key
from pagetrail.tools.workers.scan_jobs import page_job, start_scan


def build_site(site: Site) -> None:
    """Depth, robots.txt, a sitemap-only page, dead links, a redirect onto a crawled page,
    links shared by several pages, and a link to another site."""
    site.routes.update({
        "/robots.txt": (200, {"Content-Type": "text/plain"},
                        b"User-agent: *\nDisallow: /private/\n"),
        "/sitemap.xml": (200, {"Content-Type": "application/xml"}, (
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{site.url('/orphan.html')}</loc></url></urlset>").encode()),
        "/": page("Home", ("/a.html", "A"), ("/b.html", "B"), ("/gone.html", "Gone"),
                  ("/private/x.html", "Secret"), ("/old.html", "Old")),
        "/a.html": page("A", ("/deep.html", "Deep"), ("/b.html", "B"), ("/gone.html", "G")),
        "/b.html": page("B", ("/a.html", "A"), ("/missing/1.html", "M1"),
                        ("http://other.invalid/x", "Elsewhere")),
        "/old.html": (301, {"Location": "/b.html"}, b""),
        "/deep.html": page("Deep", ("/deeper.html", "Deeper"), ("/missing/2.html", "M2")),
        "/orphan.html": page("Orphan", ("/a.html", "A"), ("/missing/3.html", "M3")),
    })


async def run_fanned_out(store: Store, settings: Any, item: dict[str, Any], *,
                         redeliver: float = 0.0, seed: int = 7) -> None:
    """Run the scan job and every page job it leads to, the last sent first (depth first:
    the order least like the in-process scanner's breadth-first queue, as when one worker
    is much faster than another); `redeliver`: the share of page jobs delivered a second
    time, right after the first."""
    sent: list[dict[str, Any]] = []

    def send(kind: str, items: list[dict[str, Any]]) -> None:
        assert kind == "page"
        sent.extend(items)

    chance = random.Random(seed)
    await start_scan(item, job_key("scan", item), settings, store, send)
    while sent:
        job = sent.pop()
        await page_job(job, settings, store, send)
        if chance.random() < redeliver:
            await page_job(job, settings, store, send)


def view(store: Store, scan_id: str) -> dict[str, Any]:
    """What two runs of one scan must agree on: the report's counts, each checked URL's
    verdict and state, and each URL's link state."""
    scan_row = get_scan(store, scan_id)
    assert scan_row is not None and scan_row.status == "done"
    summary = scan_row.summary
    with store.session() as s:
        checks = s.execute(select(LinkCheck.url, LinkCheck.verdict)
                           .where(LinkCheck.scan_id == scan_id)).all()
        edges = s.scalar(select(func.count()).select_from(LinkEdge))
    urls = [url for url, _ in checks]
    assert len(urls) == len(set(urls))  # each URL checked once by the scan
    return {"counts": {k: summary[k] for k in ("pages_crawled", "links_found",
                                                "urls_checked", "verdicts", "states")},
            "skipped": summary["skipped"], "checks": sorted(checks), "edges": edges,
            "states": sorted((u, r.state) for u, r in states_by_url(store, urls).items())}


async def test_a_fanned_out_scan_equals_the_in_process_one(store, tmp_path) -> None:
    with Site() as site:
        build_site(site)
        # other.invalid never resolves: the scanner asks the network probe whether the
        # network is down (tools/net/netcheck.py); here it answers (a 404 is an answer).
        settings = fast_settings(network_probe_url=site.url("/network-probe"))
        in_process = Store(f"sqlite:///{tmp_path / 'in-process.db'}")
        try:
            reference = await scan(site.url("/"), store=in_process, settings=settings,
                                   options=ScanOptions(depth=2), clock=Clock(T0))
            expected = view(in_process, reference.scan_id)
        finally:
            in_process.dispose()
        linked = set(site.routes) | {"/gone.html", "/deeper.html", "/private/x.html",
                                     "/missing/1.html", "/missing/2.html", "/missing/3.html"}
        hits_in_process = {path: site.hits[path] for path in linked}
        site.hits.clear()
        item = {"target": site.url("/"), "request": "r1", "depth": 2, "max_pages": 500,
                "same_site_only": False}
        await run_fanned_out(store, settings, item, redeliver=0.5)
        key = job_key("scan", item)
        record = load_jobs(store, "scan", [key])[key]
        assert record.status == "done" and record.input == item
        assert view(store, key) == expected
        assert record.result["urls_checked"] == expected["counts"]["urls_checked"]
        assert site.hits["/private/x.html"] == 0  # robots.txt
        assert site.hits["/deeper.html"] == 1  # beyond the depth: checked, not crawled
        assert site.hits["/orphan.html"] == 1  # the sitemap seeded it
        # Every page and link fetched as often as in-process: redelivered pages were not
        # fetched again, robots.txt was read once (soft-404 probes, per page job, differ).
        assert {path: site.hits[path] for path in linked} == hits_in_process
    assert counts(store, key)["page"] == expected["counts"]["pages_crawled"] + 1  # + redirect
    assert expected["counts"]["verdicts"]["dead"] >= 3


async def test_the_caps_hold_when_fanned_out(store) -> None:
    """max_pages, depth and the per-scan URL cap, as the in-process scanner applies them."""
    with Site() as site:
        site.routes["/"] = page("Home", *((f"/p{i}.html", f"P{i}") for i in range(8)))
        for i in range(8):
            site.routes[f"/p{i}.html"] = page(f"P{i}", *((f"/p{i}/{j}.html", "x")
                                                         for j in range(5)))
        item = {"target": site.url("/"), "request": "caps", "depth": 1, "max_pages": 4,
                "same_site_only": False}
        await run_fanned_out(store, fast_settings(scan_max_links=20), item)
        key = job_key("scan", item)
        summary = load_jobs(store, "scan", [key])[key].result
        assert summary["pages_crawled"] == 4  # the root and three pages
        assert summary["urls_checked"] == 20  # the per-scan cap
        scan_row = get_scan(store, key)
        assert scan_row is not None
        assert scan_row.summary["skipped"]["links_beyond_scan_cap"] > 0
        assert not any(site.hits[f"/p{i}/{j}.html"] > 1 for i in range(8) for j in range(5))


async def test_a_redelivered_page_job_is_a_no_op(store) -> None:
    """The page's row is done: nothing is fetched, no row is added, and the scan's record is
    left as it is; its pending children are sent again (it may have died before sending)."""
    with Site() as site:
        build_site(site)
        settings = fast_settings(network_probe_url=site.url("/network-probe"))
        item = {"target": site.url("/"), "request": "r2", "depth": 2, "max_pages": 500,
                "same_site_only": False}
        pages: list[dict[str, Any]] = []
        await run_fanned_out(store, settings, item)
        key = job_key("scan", item)
        before = view(store, key)
        record = load_jobs(store, "scan", [key])[key]
        def page_hits() -> int:  # the rerun start reads the sitemap again, nothing else
            return sum(n for path, n in site.hits.items()
                       if path not in ("/sitemap.xml", "/robots.txt"))

        hits = page_hits()
        again = {"scan": key, "url": site.url("/a.html"), "depth": 1,
                 "target": site.url("/"), "max_depth": 2, "max_pages": 500,
                 "same_site_only": False}
        await page_job(again, settings, store, lambda kind, items: pages.extend(items))
        await start_scan(item, key, settings, store, lambda kind, items: pages.extend(items))
        assert page_hits() == hits
        assert pages == []  # every child is done: nothing to send
        assert view(store, key) == before
        assert load_jobs(store, "scan", [key])[key] == record


async def test_a_page_job_that_failed_for_good_is_named_and_the_scan_still_finishes(
        store) -> None:
    """What the Celery task's on_failure does with a page job whose retries are spent."""
    from pagetrail.tools.workers.scan_jobs import abandon_page

    settings = fast_settings()
    with Site() as site:
        build_site(site)
        item = {"target": site.url("/a.html"), "request": "r3", "depth": 1, "max_pages": 5,
                "same_site_only": False}
        sent: list[dict[str, Any]] = []
        key = job_key("scan", item)
        await start_scan(item, key, settings, store, lambda kind, items: sent.extend(items))
        assert [job["url"] for job in sent] == [site.url("/a.html")]
        assert load_jobs(store, "scan", [key]) == {}  # pending: not finished
        await abandon_page(sent[0], settings, store, "SoftTimeLimitExceeded: page",
                           lambda kind, items: sent.extend(items))
        record = load_jobs(store, "scan", [key])[key]
        assert record.status == "done" and record.result["pages_crawled"] == 0
        scan_row = get_scan(store, key)
        assert scan_row is not None and scan_row.status == "done"
        assert scan_row.summary["problems"] == [{"url": site.url("/a.html"),
                                                 "code": "job_failed",
                                                 "reason": "SoftTimeLimitExceeded: page"}]
        assert site.hits["/a.html"] == 0
