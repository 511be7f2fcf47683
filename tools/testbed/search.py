"""A web search engine over the world's live pages, answering like SearXNG's JSON API.

Index: every live status-200 HTML page (title, visible text, words of the URL) in SQLite
FTS5, ranked with bm25(). Queries behave like a web engine: pages holding every term come
first (bm25 order), then pages holding some of them; `"quoted phrases"` and `site:host`
(host or any subdomain) work; any other FTS5 syntax in the user's text is quoted away.

Version-2 worlds (FORMAT.md) make it behave like a real engine: pages marked
`"indexed": false` are left out of the index; within each of those two tiers results are
ordered by relevance × (1 + popularity_weight × ln(1 + popularity)); pages hold
`results_per_page` results and there are at most `max_pages` of them; one token bucket for
all clients answers 429 with Retry-After when queries come too fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import lxml.html
import platformdirs
from lxml import etree

from pagetrail.tools.testbed.httpio import Reply, Request, json_response
from pagetrail.tools.testbed.world import SearchSpec, World

INDEX_VERSION = 1  # bump when extraction or the table layout changes (invalidates caches)
PAGE_SIZE = 10
MAX_RESULTS = 200
MAX_QUERY_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)
_QUERY_PART = re.compile(r'(-?)(site:\S+|"[^"]*"|\S+)', re.IGNORECASE)
_CHARSET = re.compile(r"charset=[\"']?([\w.:-]+)", re.IGNORECASE)
_INVISIBLE = ("script", "style", "noscript", "template", "svg", "head")


@dataclass(frozen=True)
class PageText:
    url: str
    host: str
    title: str
    body: str


@dataclass(frozen=True)
class ParsedQuery:
    phrases: tuple[str, ...]  # each a phrase or single term, as typed (unquoted)
    sites: tuple[str, ...]

    def fts(self, conjunction: str) -> str:
        return f" {conjunction} ".join(_fts_phrase(p) for p in self.phrases)


def extract_page(url: str, html: bytes, charset: str | None = None) -> PageText:
    """Title and visible text of an HTML page (pure); `charset` from Content-Type if known."""
    host = (urlsplit(url).hostname or "").lower()
    try:
        parser = lxml.html.HTMLParser(encoding=charset) if charset else None
        root = lxml.html.document_fromstring(html, parser=parser)
    except (etree.ParserError, ValueError, LookupError):
        return PageText(url, host, "", "")
    title_node = root.find(".//title")
    title = " ".join((title_node.text_content() if title_node is not None else "").split())
    for node in list(root.iter(*_INVISIBLE)):
        if node.getparent() is not None:
            node.drop_tree()
    body = " ".join(root.text_content().split())
    return PageText(url, host, title, body)


def url_words(url: str) -> str:
    parts = urlsplit(url)
    return " ".join(_WORD.findall(unquote(f"{parts.hostname or ''} {parts.path} {parts.query}")))


def parse_query(text: str) -> ParsedQuery:
    """Split user text into phrases and site: filters; exclusions (-term) are dropped."""
    phrases: list[str] = []
    sites: list[str] = []
    for negated, part in _QUERY_PART.findall(text):
        if part.lower().startswith("site:"):
            site = part[5:].strip().lower().strip("/")
            if "://" in site:
                site = urlsplit(site).hostname or ""
            if site and not negated:
                sites.append(site.split("/")[0])
            continue
        if negated:
            continue
        words = _WORD.findall(part.strip('"'))
        if words:
            phrases.append(" ".join(words))
    return ParsedQuery(tuple(phrases[:MAX_QUERY_TERMS]), tuple(sites))


def _fts_phrase(phrase: str) -> str:
    # Quoting makes every word a literal token: no FTS5 operator can leak through.
    return '"' + phrase.replace('"', '""') + '"'


class TokenBucket:
    """`per_second` tokens a second, at most `burst` at once; one query takes one token."""

    def __init__(self, per_second: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_second = per_second
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def take(self) -> float:
        """0 when a token was taken; else the seconds until one will be there (none taken)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst),
                               self._tokens + (now - self._last) * self.per_second)
            self._last = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return 0.0
            return (1.0 - self._tokens) / self.per_second


def retry_after_header(wait: float) -> str:
    """Whole seconds (RFC 9110 delay-seconds), rounded up: never tell a client to come back early."""
    return str(max(1, math.ceil(wait)))


class SearchIndex:
    """FTS5 index; build() is CPU work (run it in a thread), search() is thread-safe."""

    def __init__(self, spec: SearchSpec | None = None,
                 popularity: dict[str, int] | None = None) -> None:
        self.spec = spec or SearchSpec()
        self.popularity = popularity or {}
        rate = self.spec.rate_limit
        self.bucket = TokenBucket(rate.per_second, rate.burst) if rate else None
        self.page_size = self.spec.results_per_page or PAGE_SIZE
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.create_function("on_site", 2, on_site, deterministic=True)
        self._lock = threading.Lock()
        self._db.execute(
            "CREATE VIRTUAL TABLE pages USING fts5(url UNINDEXED, host UNINDEXED, title, body,"
            " urlwords, tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        self.size = 0

    @classmethod
    def build(cls, world: World, *, cache: bool = True) -> SearchIndex:
        """Index the world's pages; with `cache`, reuse (or save) a copy keyed by content."""
        cached = index_cache_dir() / f"{world_fingerprint(world)}.sqlite" if cache else None
        popularity = {r.url: r.popularity for r in world.resources.values() if r.popularity}
        index = cls(world.search, popularity)
        if cached is not None and cached.is_file():
            with contextlib.suppress(sqlite3.Error):
                source = sqlite3.connect(cached)
                try:
                    source.backup(index._db)
                finally:
                    source.close()
                index.size = index._db.execute("SELECT count(*) FROM pages").fetchone()[0]
                return index
            index = cls(world.search, popularity)  # an unreadable cache file: build afresh
        index.add_pages(_world_pages(world))
        if cached is not None:
            index._save(cached)
        return index

    def _save(self, target: Path) -> None:
        """Write a copy atomically (concurrent builders each write, the last rename wins)."""
        with contextlib.suppress(OSError, sqlite3.Error):
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}")
            copy = sqlite3.connect(partial)
            try:
                with self._lock:
                    self._db.backup(copy)
            finally:
                copy.close()
            os.replace(partial, target)

    def add_pages(self, pages) -> None:  # pages: Iterable[PageText]
        rows = ((p.url, p.host, p.title, p.body, url_words(p.url)) for p in pages)
        with self._lock:
            cursor = self._db.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?)", rows)
            self.size += cursor.rowcount
            self._db.commit()

    def search(self, text: str, pageno: int = 1) -> dict[str, object]:
        query = parse_query(text)
        urls = self._matching(query)
        start = (max(pageno, 1) - 1) * self.page_size
        page = urls[start:start + self.page_size]
        if self.spec.max_pages is not None and pageno > self.spec.max_pages:
            page = []
        results = [self._result(rowid, query) for rowid in page]
        return {"query": text, "number_of_results": len(urls), "results": results,
                "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
                "unresponsive_engines": []}

    def _matching(self, query: ParsedQuery) -> list[int]:
        site_sql, site_args = _site_filter(query.sites)
        with self._lock:
            if not query.phrases:
                if not query.sites:
                    return []
                rows = self._db.execute(
                    f"SELECT rowid FROM pages WHERE {site_sql} ORDER BY url LIMIT ?",
                    [*site_args, MAX_RESULTS]).fetchall()
                return [r[0] for r in rows]
            found: list[int] = []
            seen: set[int] = set()
            conjunctions = ["AND", "OR"] if len(query.phrases) > 1 else ["AND"]
            for conjunction in conjunctions:
                rows = self._db.execute(
                    "SELECT rowid, url, bm25(pages, 0, 0, 4.0, 1.0, 2.0) AS score FROM pages"
                    " WHERE pages MATCH ? AND " + site_sql + " ORDER BY score LIMIT ?",
                    [query.fts(conjunction), *site_args, MAX_RESULTS]).fetchall()
                tier = [(rowid, url, score) for rowid, url, score in rows if rowid not in seen]
                for rowid, _url, _score in self._by_popularity(tier):
                    seen.add(rowid)
                    found.append(rowid)
            return found[:MAX_RESULTS]

    def _by_popularity(self, rows: list[tuple[int, str, float]]) -> list[tuple[int, str, float]]:
        """FORMAT.md v2: relevance × (1 + weight × ln(1 + popularity)), larger first.
        SQLite's bm25() is smaller-is-better (negative), so relevance is its negation."""
        weight = self.spec.popularity_weight
        if not weight or not self.popularity:
            return rows

        def boosted(row: tuple[int, str, float]) -> float:
            return -row[2] * (1 + weight * math.log1p(self.popularity.get(row[1], 0)))

        return sorted(rows, key=boosted, reverse=True)

    def _result(self, rowid: int, query: ParsedQuery) -> dict[str, str]:
        with self._lock:
            if query.phrases:
                row = self._db.execute(
                    "SELECT url, title, snippet(pages, 3, '', '', '…', 32) FROM pages"
                    " WHERE pages MATCH ? AND rowid = ?", [query.fts("OR"), rowid]).fetchone()
            else:
                row = None
            if row is None:
                row = self._db.execute("SELECT url, title, substr(body, 1, 200) FROM pages"
                                       " WHERE rowid = ?", [rowid]).fetchone()
        url, title, content = row
        return {"url": url, "title": title or url, "content": content,
                "engine": "testbed", "engines": ["testbed"], "category": "general"}

    def answer(self, request: Request) -> Reply:
        parts = urlsplit(request.target)
        if parts.path.rstrip("/") not in ("/search", ""):
            return json_response(b'{"error": "not found"}', 404)
        params = parse_qs(parts.query)
        if request.method == "POST":
            params.update(parse_qs(request.body.decode("utf-8", "replace")))
        text = params.get("q", [""])[0]
        try:
            pageno = max(1, int(params.get("pageno", ["1"])[0]))
        except ValueError:
            pageno = 1
        if params.get("format", ["json"])[0] != "json":
            return json_response(b'{"error": "only format=json is served"}', 403)
        if self.bucket is not None:
            wait = self.bucket.take()
            if wait > 0:
                return Reply(429, [("Retry-After", retry_after_header(wait))])
        payload = self.search(text, pageno)
        return json_response(json.dumps(payload, ensure_ascii=False).encode())


def index_cache_dir() -> Path:
    explicit = os.environ.get("PAGETRAIL_TESTBED_INDEX_CACHE")
    if explicit:
        return Path(explicit)
    return Path(platformdirs.user_cache_dir("pagetrail")) / "testbed-index"


def world_fingerprint(world: World) -> str:
    """Identifies the indexed content: live.jsonl names every blob by its content hash."""
    # The format decides whether `indexed: false` is honoured, so it is part of the key.
    digest = hashlib.sha256(f"index-v{INDEX_VERSION}\nformat-{world.format}\n".encode())
    digest.update((world.path / "live.jsonl").read_bytes())
    return digest.hexdigest()[:32]


def _site_filter(sites: tuple[str, ...]) -> tuple[str, list[str]]:
    if not sites:
        return "1", []
    clauses = " OR ".join("on_site(host, ?)" for _ in sites)
    return f"({clauses})", list(sites)


def on_site(host: str, site: str) -> bool:
    """site:example.com covers example.com and its subdomains (pure)."""
    return host == site or host.endswith("." + site)


def _world_pages(world: World):
    for resource in world.resources.values():
        content_type = next((v for k, v in resource.headers.items()
                             if k.lower() == "content-type"), "")
        if resource.status != 200 or resource.blob is None or "html" not in content_type.lower():
            continue
        if not resource.indexed:  # version 2: the engine has not indexed it
            continue
        charset = _CHARSET.search(content_type)
        yield extract_page(resource.url, world.read_blob(resource.blob),
                           charset.group(1) if charset else None)
