"""The dead site's own map: sitemap.xml (and sitemap indexes, robots.txt `Sitemap:` lines)
and the links on its root page, ranked by token overlap with the query (by URL likeness
when the query is a URL: overlap.rank_listing).

A page that moved within its site is usually still listed there under its new URL. When the
root page redirects to another host (the site moved), that host's links count as the site's.
The listing is fetched once per origin per engine instance (one recovery).
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import zlib
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

from pagetrail.tools.engines.base import (
    EngineContext,
    HttpGetter,
    SearchContext,
    host_matches,
    make_hits,
)
from pagetrail.tools.engines.overlap import rank_listing
from pagetrail.tools.errors import EngineUnavailable, PagetrailError, UnsupportedContent
from pagetrail.tools.models import Hit
from pagetrail.tools.net.fetch import unexplained_proxy_refusals
from pagetrail.tools.net.urls import host_of, same_url, site_of

log = logging.getLogger(__name__)

MAX_SITEMAPS = 12  # sitemap files fetched per site (indexes included)
MAX_URLS = 20000  # URLs kept per site
MAX_INFLATED = 50 * 1024 * 1024  # a .xml.gz sitemap may not inflate beyond this
_ASSET_SUFFIXES = (
    ".css", ".js", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".woff",
    ".woff2", ".ttf", ".mp4", ".mp3", ".zip", ".xml", ".rss", ".atom", ".json",
)


# --- pure parsing ---------------------------------------------------------------------------

def robots_sitemaps(robots_txt: str, base_url: str) -> list[str]:
    """URLs named by `Sitemap:` lines of a robots.txt (case-insensitive, relative allowed)."""
    found: list[str] = []
    for line in robots_txt.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "sitemap":
            url = urljoin(base_url, value.split("#", 1)[0].strip())
            if url.startswith(("http://", "https://")) and url not in found:
                found.append(url)
    return found


def inflate_if_gzip(content: bytes, limit: int | None = None) -> bytes:
    """Sitemaps are often served as .xml.gz files (not Content-Encoding): inflate, bounded.

    Raises UnsupportedContent when the gzip stream is corrupt or inflates beyond `limit`."""
    if not content.startswith(b"\x1f\x8b"):
        return content
    limit = MAX_INFLATED if limit is None else limit
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(content, limit)
    except zlib.error as exc:
        raise UnsupportedContent(f"gzip sitemap is corrupt: {exc}") from None
    if inflater.unconsumed_tail:
        raise UnsupportedContent("gzip sitemap inflates beyond the size limit")
    return data


@dataclass
class SitemapEntries:
    pages: list[tuple[str, str]] = field(default_factory=list)  # (url, title if any)
    sitemaps: list[str] = field(default_factory=list)  # child sitemaps of an index


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def parse_sitemap(content: bytes) -> SitemapEntries:
    """Entries of a sitemap (urlset), a sitemap index, or a plain-text sitemap."""
    from lxml import etree

    entries = SitemapEntries()
    body = inflate_if_gzip(content).strip()
    if not body:
        return entries
    if not body.startswith(b"<"):
        # Plain-text sitemap: one URL a line.
        for line in body.decode("utf-8", "replace").splitlines():
            line = line.strip()
            if line.startswith(("http://", "https://")):
                entries.pages.append((line, ""))
        return entries
    # Untrusted XML: no entities, no network, no huge trees.
    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True,
                             huge_tree=False, remove_comments=True)
    try:
        root = etree.fromstring(body, parser)
    except etree.XMLSyntaxError:
        return entries
    if root is None:
        return entries
    for element in root.iter():
        if _local(element.tag) != "loc" or not (element.text or "").strip():
            continue
        url = element.text.strip()
        parent = element.getparent()
        if parent is not None and _local(parent.tag) == "sitemap":
            entries.sitemaps.append(url)
        else:
            # News and image sitemaps carry titles: free link text for ranking.
            title = ""
            if parent is not None:
                for child in parent.iter():
                    if _local(child.tag) == "title" and child.text:
                        title = child.text.strip()
                        break
            entries.pages.append((url, title))
    return entries


def page_links(html: str, base_url: str) -> list[tuple[str, str]]:
    """(absolute URL, anchor text) of every link on a page; fragments dropped."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "lxml")
    links: list[tuple[str, str]] = []
    for anchor in soup.find_all("a", href=True):
        href = str(anchor["href"]).strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:")):
            continue
        url = urljoin(base_url, href).split("#", 1)[0]
        if url.startswith(("http://", "https://")):
            text = " ".join(anchor.get_text(" ", strip=True).split())[:300]
            title = str(anchor.get("title") or "")[:300]
            links.append((url, f"{text} {title}".strip()))
    return links


def site_origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), "/", "", ""))


def is_page_like(url: str) -> bool:
    path = urlsplit(url).path.lower()
    return not path.endswith(_ASSET_SUFFIXES) and not path.endswith("/robots.txt")


# --- the engine -----------------------------------------------------------------------------

@dataclass
class SiteListing:
    """Everything the site says about its own pages: url → link text."""

    origin: str
    sites: set[str] = field(default_factory=set)  # the site and where its root redirects
    pages: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def add(self, url: str, text: str) -> None:
        if len(self.pages) >= MAX_URLS or not is_page_like(url):
            return
        if not any(host_matches(url, site) for site in self.sites):
            return
        known = self.pages.get(url, "")
        if text and text not in known:
            self.pages[url] = f"{known} {text}".strip()[:600]
        else:
            self.pages.setdefault(url, known)


class SiteEngine:
    name = "site"
    rate_limited = False  # fetches through the fetcher's per-host politeness, once per site
    scope = "site"
    uses_context = True

    def __init__(self, fetcher: HttpGetter, *, name: str = "site") -> None:
        self.fetcher = fetcher
        self.name = name
        self._listings: dict[str, SiteListing] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        dead_url = context.dead_url if context else None
        if dead_url:
            origin = site_origin(dead_url)
        elif site:
            origin = site_origin(site if "://" in site else f"https://{site}/")
        else:
            return []  # nothing to list: this engine needs a site
        listing = await self.listing(origin)
        if listing.error and not listing.pages:
            raise EngineUnavailable(f"site: {listing.error}")
        candidates = [
            (url, text) for url, text in listing.pages.items()
            if not (dead_url and same_url(url, dead_url))
        ]
        ranked = rank_listing(query, candidates)
        return make_hits(((url, text, "") for url, text, _ in ranked),
                         engine=self.name, limit=limit)

    def has_listing(self, origin: str) -> bool:
        """Has this engine already read the site at `origin` (listing() costs no request)?"""
        return origin in self._listings

    async def listing(self, origin: str) -> SiteListing:
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:
            if origin not in self._listings:
                self._listings[origin] = await self._build_listing(origin)
            return self._listings[origin]

    async def _get(self, url: str) -> tuple[int, str, bytes] | None:
        """(status, final URL, body) or None when the fetch failed outright."""
        try:
            # A handful of requests per recovery: interactive, bounded by the per-host
            # concurrency; crawling-grade politeness (1 request/s) is for the scanner.
            # A failure is only "no map": the proxy's refusal need not be explained.
            with unexplained_proxy_refusals():
                response = await self.fetcher.get(url)
        except PagetrailError as exc:
            log.debug("site: %s: %s", url, exc)
            return None
        final = getattr(response, "final_url", None) or url
        return response.status, final, response.content

    async def _build_listing(self, origin: str) -> SiteListing:
        listing = SiteListing(origin=origin, sites={site_of(origin)})
        root, robots = await asyncio.gather(
            self._get(origin), self._get(urljoin(origin, "/robots.txt"))
        )
        if root is None and robots is None:
            listing.error = f"{host_of(origin)} could not be reached"
            return listing
        if root is not None and root[0] == 200:
            _status, final_url, body = root
            listing.sites.add(site_of(final_url))
            for url, text in page_links(body.decode("utf-8", "replace"), final_url):
                listing.add(url, text)
        queue: list[str] = []
        if robots is not None and robots[0] == 200:
            queue = robots_sitemaps(robots[2].decode("utf-8", "replace"), origin)
        if not queue:
            queue = [urljoin(origin, "/sitemap.xml")]
        await self._read_sitemaps(listing, queue)
        return listing

    async def _read_sitemaps(self, listing: SiteListing, queue: list[str]) -> None:
        seen: set[str] = set()
        while queue and len(seen) < MAX_SITEMAPS:
            url = queue.pop(0)
            if url in seen:
                continue
            seen.add(url)
            answer = await self._get(url)
            if answer is None or answer[0] != 200:
                continue
            try:
                entries = parse_sitemap(answer[2])
            except (UnsupportedContent, ValueError, zlib.error, gzip.BadGzipFile) as exc:
                log.debug("site: sitemap %s unreadable: %s", url, exc)
                continue
            for page, title in entries.pages:
                listing.add(page, title)
            queue.extend(s for s in entries.sitemaps if s not in seen)


def build(context: EngineContext) -> SiteEngine:
    """The `site` entry point."""
    return SiteEngine(context.fetcher)
