"""The scanner against real local sites: crawl limits, robots.txt, the link graph, soft 404s,
confirmation over simulated weeks, flaky sites, and a scan killed mid-way and resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from loopback import GetHeadHandler, Loopback
from sqlalchemy import func, select

from pagetrail.store.linkgraph import backlinks
from pagetrail.store.models import LinkCheck
from pagetrail.store.scans import Scan, states_by_url
from pagetrail.tools.errors import InvalidURL
from pagetrail.tools.scan.scanner import ScanOptions, resolve_target, scan
from pagetrail.tools.settings import Settings

Answer = tuple[int, dict[str, str], bytes]
Route = Callable[[str], Answer]


def page(title: str, *links: tuple[str, str], text: str = "") -> Answer:
    body = "".join(f'<p>See <a href="{href}">{anchor}</a> for more.</p>' for href, anchor in links)
    html = (f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{text or 'Some words about ' + title}</p>{body}</body></html>")
    return 200, {"Content-Type": "text/html; charset=utf-8"}, html.encode()


def not_found() -> Answer:
    return 404, {"Content-Type": "text/html"}, b"<html><title>Not Found</title>nope</html>"


class Site(Loopback):
    """A tiny web site on 127.0.0.1: `routes` maps a path to an answer; unknown paths 404.

    `fallback(path)` answers paths without a route (for soft-404 sites)."""

    def __init__(self, routes: dict[str, Route | Answer] | None = None,
                 fallback: Route | None = None) -> None:
        self.routes: dict[str, Route | Answer] = dict(routes or {})
        self.fallback = fallback
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        site = self

        class Handler(GetHeadHandler):
            def answer(self, with_body: bool) -> None:
                path = self.path
                with site.lock:
                    site.hits[path] += 1
                route = site.routes.get(path)
                if route is None:
                    status, headers, body = (site.fallback(path) if site.fallback
                                             else not_found())
                else:
                    status, headers, body = route(path) if callable(route) else route
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if with_body:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        super().__init__(Handler)

    def __enter__(self) -> Site:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, path: str) -> str:
        return self.base + path


def fast_settings(**overrides: object) -> Settings:
    values: dict[str, object] = dict(
        allow_hosts=["127.0.0.1"], per_host_rps=0, per_host_concurrency=4, concurrency=4,
        retries=0, connect_timeout=2.0, read_timeout=2.0, total_timeout=4.0)
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


class Clock:
    """An injected clock: weeks pass in a test by assignment."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as s:
        yield s


# --- crawl limits, robots.txt, link graph --------------------------------------------------

async def test_crawl_respects_depth_max_pages_and_robots(store, site: Site) -> None:
    site.routes.update({
        "/robots.txt": (200, {"Content-Type": "text/plain"},
                        b"User-agent: *\nDisallow: /private/\n"),
        "/": page("Home", ("/a.html", "Page A"), ("/b.html", "Page B"), ("/c.html", "Page C"),
                  ("/private/secret.html", "Secret")),
        "/a.html": page("A", ("/deep.html", "Deep page")),
        "/b.html": page("B"),
        "/c.html": page("C"),
        "/deep.html": page("Deep", ("/deeper.html", "Deeper")),
    })
    options = ScanOptions(depth=1, max_pages=3)
    result = await scan(site.url("/"), store=store, settings=fast_settings(), options=options,
                        clock=Clock(T0))
    assert result.pages_crawled == 3  # the root and two of its pages: max_pages
    assert site.hits["/private/secret.html"] == 0  # robots.txt honoured
    assert site.hits["/deeper.html"] == 0  # beyond depth: never reached
    with store.session() as s:
        verdicts = dict(s.execute(select(LinkCheck.url, LinkCheck.verdict)
                                  .where(LinkCheck.scan_id == result.scan_id)).all())
    assert verdicts[site.url("/private/secret.html")] == "blocked"
    # Pages beyond max_pages are still checked as links (one GET each), not crawled.
    assert verdicts[site.url("/c.html")] == "ok"
    assert site.hits["/sitemap.xml"] == 1  # a site root is seeded from its sitemap
    edges = backlinks(store, site.url("/b.html"))
    assert [(e.page_url, e.anchor) for e in edges] == [(site.url("/"), "Page B")]
    assert "for more" in edges[0].context


async def test_sitemap_seeds_and_same_site_only(store, site: Site) -> None:
    site.routes.update({
        "/sitemap.xml": (200, {"Content-Type": "application/xml"}, (
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{site.url('/orphan.html')}</loc></url></urlset>").encode()),
        "/": page("Home", ("/a.html", "A")),
        "/a.html": page("A"),
        "/orphan.html": page("Orphan", ("http://other.invalid/x", "Elsewhere")),
    })
    result = await scan(site.url("/"), store=store, settings=fast_settings(),
                        options=ScanOptions(depth=0, same_site_only=True), clock=Clock(T0))
    assert site.hits["/orphan.html"] == 1  # reached only through the sitemap
    assert result.pages_crawled == 2  # root + orphan (depth 0: /a.html checked, not crawled)
    with store.session() as s:
        urls = set(s.scalars(select(LinkCheck.url).where(LinkCheck.scan_id == result.scan_id)))
    assert "http://other.invalid/x" not in urls  # off-site link skipped
    assert site.url("/a.html") in urls


async def test_corrupt_or_oversized_gz_sitemap_is_skipped_and_the_scan_completes(
        store, site: Site, caplog: pytest.LogCaptureFixture) -> None:
    import gzip

    import pagetrail.tools.engines.site as site_engine

    good = ('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{site.url('/orphan.html')}</loc></url></urlset>").encode()
    site.routes.update({
        "/robots.txt": (200, {"Content-Type": "text/plain"}, (
            b"User-agent: *\nSitemap: /bad.xml.gz\nSitemap: /big.xml.gz\n"
            b"Sitemap: /good.xml\n")),
        "/bad.xml.gz": (200, {"Content-Type": "application/gzip"},
                        b"\x1f\x8b" + b"this is not a deflate stream" * 4),
        "/big.xml.gz": (200, {"Content-Type": "application/gzip"},
                        gzip.compress(b"<urlset>" + b" " * 4096 + b"</urlset>")),
        "/good.xml": (200, {"Content-Type": "application/xml"}, good),
        "/": page("Home", ("/a.html", "A")),
        "/a.html": page("A"),
        "/orphan.html": page("Orphan"),
    })
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(site_engine, "MAX_INFLATED", 1024)
        result = await scan(site.url("/"), store=store, settings=fast_settings(),
                            options=ScanOptions(depth=0), clock=Clock(T0))
    assert site.hits["/bad.xml.gz"] == 1 and site.hits["/big.xml.gz"] == 1
    assert site.hits["/"] == 1 and site.hits["/orphan.html"] == 1  # root + the good sitemap
    assert result.pages_crawled == 2
    skipped = [r.getMessage() for r in caplog.records if "sitemap" in r.getMessage()]
    assert any("/bad.xml.gz" in m and "corrupt" in m for m in skipped)
    assert any("/big.xml.gz" in m and "size limit" in m for m in skipped)


def test_inflate_if_gzip_raises_a_named_error() -> None:
    import gzip

    from pagetrail.tools.engines.site import inflate_if_gzip
    from pagetrail.tools.errors import UnsupportedContent

    assert inflate_if_gzip(gzip.compress(b"<urlset/>")) == b"<urlset/>"
    with pytest.raises(UnsupportedContent):
        inflate_if_gzip(b"\x1f\x8bgarbage-garbage-garbage")
    with pytest.raises(UnsupportedContent):
        inflate_if_gzip(gzip.compress(b"x" * 5000), limit=100)


def test_resolve_target_and_bad_input() -> None:
    assert resolve_target("example.org") == ("https://example.org/", True)
    assert resolve_target("https://example.org/a/b.html") == ("https://example.org/a/b.html",
                                                               False)
    with pytest.raises(InvalidURL):
        resolve_target("ftp://example.org/")


async def test_dead_and_soft404_links_share_one_probe_per_shape(store, site: Site) -> None:
    soft = page("Oops", text="Sorry, the page you asked for could not be found.")
    site.routes.update({
        "/": page("Home", ("/gone.html", "Gone page"), *[(f"/items/{i}", f"Item {i}")
                                                          for i in range(6)]),
        "/gone.html": not_found(),
    })
    # /items/* is a soft-404 area: items 0-2 exist, anything else gets the same error page.
    for i in range(3):
        site.routes[f"/items/{i}"] = page(f"Item {i}", text=f"Item number {i} has details " * 5)
    site.fallback = lambda path: soft if path.startswith("/items/") else not_found()
    result = await scan(site.url("/"), store=store, settings=fast_settings(),
                        options=ScanOptions(depth=0), clock=Clock(T0))
    with store.session() as s:
        verdicts = dict(s.execute(select(LinkCheck.url, LinkCheck.verdict)
                                  .where(LinkCheck.scan_id == result.scan_id)).all())
    assert verdicts[site.url("/gone.html")] == "dead"
    assert [verdicts[site.url(f"/items/{i}")] for i in range(6)] == ["ok"] * 3 + ["soft404"] * 3
    probes = [p for p in site.hits if p.startswith("/items/") and p[7:] not in "012345"]
    assert len(probes) == 1  # one sibling probe for the whole /items/ shape
    assert result.states.get("suspect") == 4  # first failure: suspect, not confirmed


# --- confirmation over simulated weeks -------------------------------------------------------

async def test_confirmation_over_simulated_weeks(store, site: Site) -> None:
    site.routes["/"] = page("Home", ("/flaky-then-dead.html", "Report"), ("/b.html", "B"))
    site.routes["/b.html"] = page("B")
    dead = site.url("/flaky-then-dead.html")
    clock = Clock(T0)
    settings = fast_settings(confirm_failures=3, confirm_days=3)
    options = ScanOptions(depth=1)
    seen = []
    for day in (0, 1, 4, 8):  # day 1 is too close to day 0 to count
        clock.now = T0 + timedelta(days=day)
        result = await scan(site.url("/"), store=store, settings=settings, options=options,
                            clock=clock)
        seen.append(states_by_url(store, [dead])[dead].state)
        changes = {c.url: c.after for c in result.changes}
    assert seen == ["suspect", "suspect", "suspect", "confirmed"]
    assert changes == {dead: "confirmed"}
    # The page comes back: fixed, then plain ok.
    site.routes["/flaky-then-dead.html"] = page("Report")
    clock.now = T0 + timedelta(days=15)
    result = await scan(site.url("/"), store=store, settings=settings, options=options,
                        clock=clock)
    assert {c.url: c.after for c in result.changes} == {dead: "fixed"}
    with store.session() as s:
        scans = s.scalar(select(func.count()).select_from(Scan).where(Scan.status == "done"))
    assert scans == 5  # each run a new scan: finished scans are never resumed


async def test_slow_or_flaky_site_never_confirms_a_death(store, site: Site) -> None:
    calls = Counter()

    def flaky(path: str) -> Answer:
        calls[path] += 1
        if calls[path] % 2:
            return 503, {"Content-Type": "text/html", "Retry-After": "0"}, b"busy"
        return page("Flaky")

    def slow(path: str) -> Answer:
        time.sleep(0.6)  # longer than the read timeout below
        return page("Slow")

    site.routes.update({"/": page("Home", ("/flaky.html", "F"), ("/slow.html", "S")),
                        "/flaky.html": flaky, "/slow.html": slow})
    settings = fast_settings(read_timeout=0.3, total_timeout=1.0, confirm_failures=2,
                             confirm_days=1)
    clock = Clock(T0)
    urls = [site.url("/flaky.html"), site.url("/slow.html")]
    verdicts: set[str] = set()
    for week in range(5):
        clock.now = T0 + timedelta(days=7 * week)
        result = await scan(site.url("/"), store=store, settings=settings,
                            options=ScanOptions(depth=0), clock=clock)
        with store.session() as s:
            verdicts |= set(s.scalars(select(LinkCheck.verdict).where(
                LinkCheck.scan_id == result.scan_id, LinkCheck.url.in_(urls))))
        states = {u: row.state for u, row in states_by_url(store, urls).items()}
        assert "confirmed" not in states.values()
        assert result.states.get("confirmed", 0) == 0
    assert "transient" in verdicts  # the failures happened, and were judged transient


# --- killed mid-way, resumed ----------------------------------------------------------------

def _cli_env(db_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PAGETRAIL_DATABASE_URL=db_url, PAGETRAIL_ALLOW_HOSTS="127.0.0.1",
               PAGETRAIL_PER_HOST_RPS="0", PAGETRAIL_PER_HOST_CONCURRENCY="2",
               PAGETRAIL_CONCURRENCY="2", PAGETRAIL_RETRIES="0")
    return env


def _checks(store, scan_id: str | None = None) -> list[tuple[int, str]]:
    with store.session() as s:
        query = select(LinkCheck.id, LinkCheck.url)
        if scan_id:
            query = query.where(LinkCheck.scan_id == scan_id)
        return list(s.execute(query.order_by(LinkCheck.id)).all())


async def test_killed_scan_resumes_without_losing_or_redoing_checks(store, db_url,
                                                                     site: Site) -> None:
    n = 40

    def slow_page(path: str) -> Answer:
        time.sleep(0.05)
        return page(path)

    site.routes["/"] = page("Home", *[(f"/l/{i}.html", f"Link {i}") for i in range(n)])
    for i in range(n):
        site.routes[f"/l/{i}.html"] = slow_page
    command = [sys.executable, "-m", "pagetrail.cli", "scan", site.url("/"), "--depth", "0",
               "--json", "--quiet"]
    proc = subprocess.Popen(command, env=_cli_env(db_url), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(_checks(store)) < 12 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _checks(store)
    assert 12 <= len(before) < n + 1  # killed mid-way
    hits_before = Counter(site.hits)
    with store.session() as s:
        scan_row = s.scalars(select(Scan)).one()
    assert scan_row.status == "running"

    result = await scan(site.url("/"), store=store, settings=fast_settings(concurrency=2),
                        options=ScanOptions(depth=0), clock=Clock(T0))
    assert result.resumed and result.scan_id == scan_row.id
    after = _checks(store, result.scan_id)
    assert set(before) <= set(after)  # nothing recorded was lost
    urls = [url for _, url in after]
    assert len(urls) == len(set(urls)) == n + 1  # every URL once, none twice
    done_before = {url for _, url in before}
    redone = [url for url in done_before
              if site.hits[url.removeprefix(site.base)] > hits_before[url.removeprefix(site.base)]]
    assert redone == []  # finished work was not fetched again
    assert result.urls_checked == n + 1 and result.verdicts == {"ok": n + 1}


def test_links_only_extraction_matches_the_full_parse() -> None:
    from pagetrail.tools.content.document import extract_links, parse_document

    html = (b'<html><head><base href="https://ex.org/docs/"><title>T</title></head><body>'
            b'<nav><a href="/home">Home</a></nav><p>Read the <a href="guide.html#s2">guide'
            b'</a> before you start.</p><a href="mailto:x@ex.org">mail</a>'
            b'<script>var a = "<a href=/js>";</script></body></html>')
    links = extract_links(html, "https://ex.org/docs/index.html")
    assert [(link.url, link.anchor) for link in links] == [
        ("https://ex.org/home", "Home"), ("https://ex.org/docs/guide.html", "guide")]
    assert "before you start" in links[1].context
    assert links == parse_document(html, "https://ex.org/docs/index.html").links
    assert extract_links(b"", "https://ex.org/") == []


def test_links_only_extraction_matches_the_full_parse_on_real_pages() -> None:
    # extract_links walks and resolves its own, faster way: it must find what
    # parse_document finds, link for link, on real pages (and on a second page of the same
    # site, where root-relative links come from its memory of the first).
    import gzip
    import json
    from pathlib import Path

    from pagetrail.tools.content.document import extract_links, parse_document

    pages = Path(__file__).parent / "fixtures" / "pages"
    index = [json.loads(line) for line in (pages / "index.jsonl").read_text().splitlines()]
    compared = 0
    for row in index:
        html = gzip.decompress((pages / f"{row['id']}.html.gz").read_bytes())
        for url in (row["url"], row["url"].rstrip("/") + "/other/page.html?x=1"):
            expected = parse_document(html, url).links
            assert extract_links(html, url) == expected, (row["id"], url)
            compared += len(expected)
    assert compared > 100


# --- the command line: `pagetrail scan` starts with only what it needs ----------------------

def test_scan_command_imports_only_its_own_command_module() -> None:
    probe = ("import sys\nfrom pagetrail.cli.main import main\n"
             "try:\n    main(['scan', '--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('pagetrail.cli.')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert "usage: pagetrail scan" in out and "--same-site-only" in out
    loaded = out.strip().splitlines()[-1]
    assert "pagetrail.cli.scan_cmd" in loaded
    assert "pagetrail.cli.recover_cmd" not in loaded and "pagetrail.cli.eval_cmd" not in loaded


def test_command_table_names_what_each_module_registers() -> None:
    import argparse
    import importlib

    from pagetrail.cli.main import COMMAND_MODULES, COMMANDS

    for module in COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(sub)
        assert sorted(sub.choices) == sorted(n for n, m in COMMANDS.items() if m == module)


@pytest.mark.parametrize(("argv", "command"), [
    (["scan", "x"], "scan"), (["-v", "scan", "x"], "scan"), (["-vv", "check", "u"], "check"),
    (["--verbose", "eval-aliases"], "eval-aliases"),
    (["-h", "scan"], None),  # the full help lists every command
    (["--help"], None), ([], None), (["nonsense"], None),
])
def test_requested_command(argv: list[str], command: str | None) -> None:
    from pagetrail.cli.main import requested_command

    assert requested_command(argv) == command
