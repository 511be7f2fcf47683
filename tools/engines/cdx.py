"""The archive's CDX listing of the dead URL's host: URLs first captured after the break.

A page that moved within its site shows up in the archive under its new URL after the old
one died. Listing the host's captures since the break date (200, HTML) and ranking them by
query-term overlap with the URL (or by likeness to a URL given as the query:
overlap.rank_listing) finds such moves without any web search engine.

Two dialects of the same API: the Internet Archive's
(`https://web.archive.org/cdx/search/cdx?url=host/*&output=json` → a header row, then rows)
and pywb's (`{collection}/cdx?url=host/*&output=json` → one JSON object a line).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pagetrail.tools.engines.base import (
    EngineContext,
    EngineSkipped,
    EngineUnavailable,
    HttpGetter,
    SearchContext,
    fetch_checked,
    make_hits,
)
from pagetrail.tools.engines.overlap import rank_listing
from pagetrail.tools.engines.site import is_page_like
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import endpoint_url, host_of, normalize_url, same_url

IA_CDX = "https://web.archive.org/cdx/search/cdx"
MAX_ROWS = 5000


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
                  max_rows: int = MAX_ROWS) -> str:
    params: dict[str, str | int] = {"url": f"{host}/*", "output": "json", "limit": max_rows}
    if after is not None:
        params["from"] = cdx_timestamp(after)
    if endpoint.dialect == "ia":
        # Server-side trimming where the API supports it: one row per URL, 200s only.
        params.update({"fl": "original,timestamp,statuscode,mimetype",
                       "filter": "statuscode:200", "collapse": "urlkey"})
    return endpoint_url(endpoint.url, params=params)


def _capture(record: dict[str, Any]) -> Capture | None:
    url = record.get("url") or record.get("original")
    timestamp = str(record.get("timestamp") or "")
    if not isinstance(url, str) or not timestamp:
        return None
    status = str(record.get("status") or record.get("statuscode") or "")
    mime = str(record.get("mime") or record.get("mimetype") or "")
    return Capture(url=url, timestamp=timestamp, status=status, mime=mime)


def parse_cdx_json(body: str) -> list[Capture]:
    """Captures from either dialect: a JSON table with a header row, or JSON lines."""
    text = body.strip()
    if not text:
        return []
    records: list[dict[str, Any]] = []
    try:
        table = json.loads(text)
    except json.JSONDecodeError:
        table = None
    if isinstance(table, list):
        if table and isinstance(table[0], list):
            header = [str(name) for name in table[0]]
            records = [dict(zip(header, row, strict=False)) for row in table[1:]
                       if isinstance(row, list)]
        else:
            records = [row for row in table if isinstance(row, dict)]
    elif isinstance(table, dict):
        records = [table]
    else:
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                records.append(record)
    captures = [_capture(record) for record in records]
    return [c for c in captures if c is not None]


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
                 name: str = "cdx", max_rows: int = MAX_ROWS) -> None:
        if not endpoints:
            raise EngineUnavailable("cdx: no archive configured")
        self.fetcher = fetcher
        self.endpoints = list(endpoints)
        self.name = name
        self.max_rows = max_rows
        self._listings: dict[tuple[str, str], list[Capture]] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    @classmethod
    def from_archives(cls, fetcher: HttpGetter, archives: Iterable[str]) -> CdxEngine:
        return cls(fetcher, [cdx_endpoint(prefix) for prefix in archives])

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

    async def _fetch_one(self, endpoint: CdxEndpoint, host: str,
                         after: datetime | None) -> list[Capture]:
        url = cdx_query_url(endpoint, host, after, self.max_rows)
        response = await fetch_checked(self.fetcher, self.name, url)
        return parse_cdx_json(response.text())

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
