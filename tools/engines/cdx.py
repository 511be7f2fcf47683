"""The archive's CDX listing of the dead URL's host: URLs first captured after the break.

A page that moved within its site shows up in the archive under its new URL after the old
one died. Listing the host's captures since the break date (200, HTML) and ranking them by
query-term overlap with the URL (or by likeness to a URL given as the query:
overlap.rank_listing) finds such moves without any web search engine.

Two dialects of the same API: the Internet Archive's
(`https://web.archive.org/cdx/search/cdx?url=host/*&output=json` → a header row, then rows)
and pywb's (`{collection}/cdx?url=host/*&output=json` → one JSON object a line).

At scale (the Internet Archive): the server filters (`filter=statuscode:200`) and collapses
(`collapse=urlkey`), and a large host's listing is read in pages — `showResumeKey=true` ends
each page with the key of the next one (JSON: an empty row, then `[key]`; text: a blank line,
then the key), asked for with `resumeKey=` — up to MAX_PAGES pages instead of one capped
answer. Another CDX server (pywb over a zipnum index) pages by number instead: when its one
answer is capped (MAX_ROWS rows), it is asked `showNumPages=true` (pywb: `{"pages": N, …}`; the
Internet Archive: a bare number) and its listing read `page=0…N-1`, up to MAX_PAGES; one that
answers no count keeps its one answer. The archive's refusal ("Blocked Site Error", 403) is named `archive_excluded` with
its words, not taken for a bad API key; its throttling is a rate limit (RateLimited).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pagetrail.tools.archive.answers import classify, refusal_message
from pagetrail.tools.archive.memento import ArchiveEndpoint
from pagetrail.tools.engines.base import (
    EngineContext,
    EngineSkipped,
    EngineUnavailable,
    HttpGetter,
    SearchContext,
    make_hits,
    raise_for_status,
    translate_fetch_error,
)
from pagetrail.tools.engines.overlap import rank_listing
from pagetrail.tools.engines.site import is_page_like
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import endpoint_url, host_of, normalize_url, same_url

IA_CDX = "https://web.archive.org/cdx/search/cdx"
MAX_ROWS = 5000  # rows per page
MAX_PAGES = 4  # pages of one host's listing (resumeKey or page=), at most MAX_ROWS * MAX_PAGES rows
# The Internet Archive's default (text) field order.
TEXT_FIELDS = ("urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length")


@dataclass(frozen=True)
class CdxEndpoint:
    url: str
    dialect: str  # "ia" | "pywb"


@dataclass(frozen=True)
class Capture:
    url: str
    timestamp: str  # YYYYMMDDhhmmss
    status: str
    mime: str


def cdx_endpoint(archive_prefix: str) -> CdxEndpoint:
    """The CDX API behind a Memento endpoint prefix from settings.archives."""
    prefix = archive_prefix.rstrip("/")
    if host_of(prefix) == "web.archive.org":
        return CdxEndpoint(IA_CDX, "ia")
    return CdxEndpoint(f"{prefix}/cdx", "pywb")


def cdx_timestamp(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y%m%d%H%M%S")


def cdx_query_url(endpoint: CdxEndpoint, host: str, after: datetime | None,
                  max_rows: int = MAX_ROWS, resume_key: str | None = None,
                  page: int | None = None) -> str:
    params: dict[str, str | int] = {"url": f"{host}/*", "output": "json", "limit": max_rows}
    if after is not None:
        params["from"] = cdx_timestamp(after)
    if page is not None:
        params["page"] = page
    if endpoint.dialect == "ia":
        # Server-side trimming where the API supports it: one row per URL, 200s only, and
        # the listing in pages (the key of the next page at the end of each).
        params.update({"fl": "original,timestamp,statuscode,mimetype",
                       "filter": "statuscode:200", "collapse": "urlkey",
                       "showResumeKey": "true"})
        if resume_key:
            params["resumeKey"] = resume_key
    return endpoint_url(endpoint.url, params=params)


def cdx_num_pages_url(endpoint: CdxEndpoint, host: str, after: datetime | None) -> str:
    """The question "in how many pages is the host's listing?" (`showNumPages=true`)."""
    params: dict[str, str] = {"url": f"{host}/*", "output": "json", "showNumPages": "true"}
    if after is not None:
        params["from"] = cdx_timestamp(after)
    return endpoint_url(endpoint.url, params=params)


def parse_num_pages(body: str) -> int | None:
    """The page count of a `showNumPages` answer: a bare number (the Internet Archive's
    server), or pywb's JSON object `{"pages": N, "pageSize": …, "blocks": …}`. None when the
    server answered something else (an index without pages answers its rows instead)."""
    text = body.strip()
    if text.isdigit():
        return int(text)
    try:
        answer = json.loads(text)
    except ValueError:
        return None
    pages = answer.get("pages") if isinstance(answer, dict) else None
    return pages if isinstance(pages, int) and not isinstance(pages, bool) and pages >= 0 \
        else None


def _capture(record: dict[str, Any]) -> Capture | None:
    url = record.get("url") or record.get("original")
    timestamp = str(record.get("timestamp") or "")
    if not isinstance(url, str) or not timestamp:
        return None
    status = str(record.get("status") or record.get("statuscode") or "")
    mime = str(record.get("mime") or record.get("mimetype") or "")
    return Capture(url=url, timestamp=timestamp, status=status, mime=mime)


def parse_cdx_json(body: str) -> list[Capture]:
    """Captures from either dialect: a JSON table with a header row, or JSON lines (or the
    Internet Archive's space-separated text). A resume key at the end is left out."""
    return parse_cdx_page(body)[0]


def parse_cdx_page(body: str) -> tuple[list[Capture], str | None]:
    """(captures, the key of the next page or None) of one CDX answer."""
    text = body.strip()
    if not text:
        return [], None
    records: list[dict[str, Any]] = []
    resume: str | None = None
    try:
        table = json.loads(text)
    except json.JSONDecodeError:
        table = None
    if isinstance(table, list):
        if table and isinstance(table[0], list):
            rows = [row for row in table if isinstance(row, list)]
            # showResumeKey: an empty row, then [key], end the table.
            if len(rows) >= 3 and rows[-2] == [] and len(rows[-1]) == 1:
                resume = str(rows[-1][0])
                rows = rows[:-2]
            header = [str(name) for name in rows[0]]
            records = [dict(zip(header, row, strict=False)) for row in rows[1:] if row]
        else:
            records = [row for row in table if isinstance(row, dict)]
    elif isinstance(table, dict):
        records = [table]
    else:
        records, resume = _text_records(text)
    captures = [_capture(record) for record in records]
    return [c for c in captures if c is not None], resume


def _text_records(text: str) -> tuple[list[dict[str, Any]], str | None]:
    """JSON lines (pywb), or the IA's text lines (`urlkey timestamp original …`) with the
    resume key after a blank line."""
    records: list[dict[str, Any]] = []
    resume: str | None = None
    blocks = text.split("\n\n")
    if len(blocks) > 1 and len(blocks[-1].split()) == 1:
        resume = blocks[-1].strip()
        text = "\n\n".join(blocks[:-1])
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            fields = line.split()
            if len(fields) == len(TEXT_FIELDS) and fields[1].isdigit():
                records.append(dict(zip(TEXT_FIELDS, fields, strict=True)))
            continue
        if isinstance(record, dict):
            records.append(record)
    return records, resume


def _is_html(mime: str) -> bool:
    mime = mime.lower()
    # Revisit records and unknown types may still be pages; only obvious non-pages go.
    return "html" in mime or mime in ("", "-", "unk", "warc/revisit")


def new_urls(captures: Iterable[Capture], *, dead_url: str | None,
             after: datetime | None) -> list[Capture]:
    """Successful page captures after `after`, one per URL (earliest), dead URL excluded."""
    since = cdx_timestamp(after) if after else ""
    first: dict[str, Capture] = {}
    for capture in captures:
        if capture.status not in ("200", "-", "") or not _is_html(capture.mime):
            continue
        if capture.timestamp[:14] < since:
            continue
        if not capture.url.startswith(("http://", "https://")) or not is_page_like(capture.url):
            continue
        if dead_url and same_url(capture.url, dead_url):
            continue
        key = normalize_url(capture.url)
        known = first.get(key)
        if known is None or capture.timestamp < known.timestamp:
            first[key] = capture
    return list(first.values())


class CdxEngine:
    name = "cdx"
    rate_limited = False  # one listing per host per recovery, memoised below
    scope = "archive"
    uses_context = True

    def __init__(self, fetcher: HttpGetter, endpoints: Sequence[CdxEndpoint], *,
                 name: str = "cdx", max_rows: int = MAX_ROWS,
                 max_pages: int = MAX_PAGES) -> None:
        if not endpoints:
            raise EngineUnavailable("cdx: no archive configured")
        self.fetcher = fetcher
        self.endpoints = list(endpoints)
        self.name = name
        self.max_rows = max_rows
        self.max_pages = max(1, max_pages)
        self.pages = 0  # listing pages read (all hosts, all archives)
        self._listings: dict[tuple[str, str], list[Capture]] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    @classmethod
    def from_archives(cls, fetcher: HttpGetter, archives: Iterable[str]) -> CdxEngine:
        """The CDX APIs of the wayback-style archives (TimeMap-only endpoints — archive.today,
        an aggregator — have none)."""
        return cls(fetcher, [cdx_endpoint(prefix) for prefix in archives
                             if ArchiveEndpoint.of(prefix).kind == "wayback"])

    async def search(self, query: str, *, site: str | None = None, limit: int = 10,
                     context: SearchContext | None = None) -> list[Hit]:
        dead_url = context.dead_url if context else None
        after = context.after if context else None
        host = host_of(dead_url) if dead_url else (site or "").split("://")[-1].split("/")[0]
        if not host:
            return []  # the CDX listing needs a host
        captures = await self.listing(host, after)
        fresh = new_urls(captures, dead_url=dead_url, after=after)
        by_url = {c.url: c for c in fresh}
        ranked = rank_listing(query, [(c.url, "") for c in fresh])
        rows = ((url, "", f"first archived {by_url[url].timestamp[:8]}")
                for url, _text, _score in ranked)
        return make_hits(rows, engine=self.name, limit=limit)

    async def listing(self, host: str, after: datetime | None) -> list[Capture]:
        key = (host.lower(), cdx_timestamp(after) if after else "")
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._listings:
                self._listings[key] = await self._fetch_all(host, after)
            return self._listings[key]

    def listed(self, host: str) -> list[str]:
        """The URLs of the host's listings read so far (any break date), no request: what a
        recovery already knows the archive holds of the host (its pages' siblings)."""
        wanted = host.lower()
        return list(dict.fromkeys(capture.url for (listed, _after), captures
                                  in self._listings.items() if listed == wanted
                                  for capture in captures))

    async def _fetch_one(self, endpoint: CdxEndpoint, host: str,
                         after: datetime | None) -> list[Capture]:
        """One archive's listing of the host, page after page: the Internet Archive by
        resumeKey, another CDX server by numbered pages when it answers with some."""
        if endpoint.dialect != "ia":
            return await self._fetch_numbered(endpoint, host, after)
        captures: list[Capture] = []
        resume: str | None = None
        for _ in range(self.max_pages):
            url = cdx_query_url(endpoint, host, after, self.max_rows, resume)
            page, resume = parse_cdx_page(await self._get(url))
            self.pages += 1
            captures.extend(page)
            if not resume:
                break
        return captures

    async def _fetch_numbered(self, endpoint: CdxEndpoint, host: str,
                              after: datetime | None) -> list[Capture]:
        """One answer, as always; when it is full (`max_rows`: capped), pywb's paging over a
        zipnum index — `showNumPages=true` says how many pages, then `page=0…` up to
        MAX_PAGES (each capped at `max_rows` too). A server without pages (its answer is no
        count, or an error other than a refusal) keeps the one answer."""
        first = parse_cdx_page(await self._get(
            cdx_query_url(endpoint, host, after, self.max_rows)))[0]
        self.pages += 1
        if len(first) < self.max_rows:
            return first  # the whole listing: nothing more to ask
        try:
            pages = parse_num_pages(await self._get(cdx_num_pages_url(endpoint, host, after)))
        except EngineUnavailable as exc:
            if "archive_excluded" in str(exc):
                raise
            pages = None
        if pages is None or pages <= 1:
            return first
        captures: list[Capture] = []
        for number in range(min(pages, self.max_pages)):
            url = cdx_query_url(endpoint, host, after, self.max_rows, page=number)
            captures.extend(parse_cdx_page(await self._get(url))[0])
            self.pages += 1
        return captures

    async def _get(self, url: str) -> str:
        """The archive's answer, its refusals named (`archive_excluded`, its words)."""
        try:
            response = await self.fetcher.get(url, retry=False, endpoint=True)
        except EngineUnavailable:
            raise
        except PagetrailError as exc:
            raise translate_fetch_error(self.name, exc) from None
        answer = classify(response.status, response.headers, response.content)
        if answer.refused:
            raise EngineUnavailable(f"{self.name}: archive_excluded: "
                                    + refusal_message("the archive", answer))
        raise_for_status(self.name, response)
        return response.text()

    async def _fetch_all(self, host: str, after: datetime | None) -> list[Capture]:
        """Every archive's listing; fails only when every archive failed."""
        answers = await asyncio.gather(
            *(self._fetch_one(endpoint, host, after) for endpoint in self.endpoints),
            return_exceptions=True,
        )
        captures: list[Capture] = []
        errors: list[BaseException] = []
        for answer in answers:
            if isinstance(answer, BaseException):
                errors.append(answer)
            else:
                captures.extend(answer)
        if errors and len(errors) == len(answers):
            first = errors[0]
            if isinstance(first, Exception):
                raise first
            raise EngineUnavailable(f"cdx: {first}")
        return captures


def build(context: EngineContext) -> CdxEngine:
    """The `cdx` entry point: the archives of PAGETRAIL_ARCHIVES."""
    if not context.settings.archives:
        raise EngineSkipped("no archive configured (PAGETRAIL_ARCHIVES)")
    return CdxEngine.from_archives(context.fetcher, context.settings.archives)
