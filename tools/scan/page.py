"""Scan one page: check every link on it, recover the dead ones (up to a limit).

A unit job (DESIGN.md, Scale): a function of (url, settings) that writes only through the
store (recoveries are cached there). Links are checked concurrently but boundedly; one
interactive check per link (the scanner's repeated-failure confirmation is not this job).
The linking page is passed to each recovery as the source, with the link's anchor and
context, which are the strongest evidence when no archived copy exists.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from pagetrail.tools.content.document import parse_document
from pagetrail.tools.errors import FetchFailed, PagetrailError, UnsupportedContent
from pagetrail.tools.linkcheck.check import check_link
from pagetrail.tools.models import Link, Recovery
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.offload import off_loop
from pagetrail.tools.recovery.context import ProgressFn
from pagetrail.tools.recovery.route import recover_link
from pagetrail.tools.settings import Settings, get_settings

if TYPE_CHECKING:
    from pagetrail.store.db import Store

CHECK_CONCURRENCY = 4


class LinkStatus(BaseModel):
    """One link of a scanned page: its check and, if recovered, the recovery."""

    url: str
    anchor: str = ""
    verdict: str  # CheckResult.verdict, or "error" when the check itself failed
    status: int | None = None
    reason: str = ""


class PageScan(BaseModel):
    """Every link of one page checked, the first dead ones recovered."""

    url: str
    final_url: str
    title: str = ""
    links_found: int  # distinct http(s) links on the page, other than the page itself
    links_checked: int
    truncated: bool = False  # more links than max_links: the rest were not checked
    links_skipped: int = 0  # links on the page not checked (beyond max_links)
    max_links: int = 0  # the cap applied
    dead: int = 0
    links: list[LinkStatus] = Field(default_factory=list)
    recoveries: list[Recovery] = Field(default_factory=list)
    not_recovered: list[str] = Field(default_factory=list)  # dead links beyond the limit


def outgoing_links(links: list[Link], page_url: str) -> list[Link]:
    """Distinct http(s) links other than the page itself (fragments are the same page)."""
    own = normalize_url(page_url)
    seen: set[str] = set()
    kept: list[Link] = []
    for link in links:
        if not link.url.startswith(("http://", "https://")):
            continue
        key = normalize_url(link.url.split("#", 1)[0])
        if key == own or key in seen:
            continue
        seen.add(key)
        kept.append(link)
    return kept


async def _report(progress: ProgressFn | None, stage: str, done: int, total: int | None,
                  message: str) -> None:
    if progress is None:
        return
    result = progress(stage, done, total, message)
    if inspect.isawaitable(result):
        await result


async def _page_links(url: str, fetcher: Fetcher) -> tuple[str, str, list[Link]]:
    response = await fetcher.get(url)
    if response.status != 200:
        raise FetchFailed(f"the page answered {response.status}", url=url)
    if not response.is_html:
        raise UnsupportedContent(f"not an HTML page ({response.content_type})", url=url)
    document = await off_loop(parse_document, response.content, response.final_url,
                              content_type=response.headers.get("content-type"))
    return response.final_url, document.title, document.links


async def scan_page(url: str, *, settings: Settings | None = None, store: Store | None = None,
                    limit: int = 3, max_links: int = 100, max_candidates: int = 3,
                    concurrency: int = CHECK_CONCURRENCY, progress: ProgressFn | None = None,
                    ) -> PageScan:
    """Check the links of the page at `url`; recover the first `limit` dead ones."""
    settings = settings or get_settings()
    async with Fetcher(settings) as fetcher:
        await _report(progress, "page", 0, None, url)
        final_url, title, links = await _page_links(url, fetcher)
        candidates = outgoing_links(links, final_url)
        to_check = candidates[:max_links]
        statuses: list[LinkStatus | None] = [None] * len(to_check)
        gate = asyncio.Semaphore(max(1, concurrency))
        done = 0

        async def check_one(index: int, link: Link) -> None:
            nonlocal done
            async with gate:
                try:
                    result = await check_link(link.url, fetcher, settings=settings)
                    status = LinkStatus(url=link.url, anchor=link.anchor,
                                        verdict=result.verdict, status=result.status,
                                        reason=result.reason)
                except PagetrailError as exc:
                    status = LinkStatus(url=link.url, anchor=link.anchor, verdict="error",
                                        reason=f"{exc.code}: {exc}")
            statuses[index] = status
            done += 1
            await _report(progress, "checking", done, len(to_check), link.url)

        await asyncio.gather(*(check_one(i, link) for i, link in enumerate(to_check)))
        checked = [s for s in statuses if s is not None]
        dead_links = [(link, s) for link, s in zip(to_check, checked, strict=True)
                      if s.verdict in ("dead", "soft404", "unreachable")]
        recoveries: list[Recovery] = []
        for i, (link, _status) in enumerate(dead_links[:limit], 1):
            await _report(progress, "recovering", i, min(limit, len(dead_links)), link.url)
            try:
                recovery = await recover_link(
                    link.url, source_url=final_url, anchor=link.anchor, context=link.context,
                    max_candidates=max_candidates, settings=settings, store=store,
                    fetcher=fetcher)
            except PagetrailError:
                continue  # refused or unusable: the check already says why
            recoveries.append(recovery)
    return PageScan(
        url=url, final_url=final_url, title=title, links_found=len(candidates),
        links_checked=len(checked), truncated=len(candidates) > len(to_check),
        links_skipped=len(candidates) - len(to_check), max_links=max_links,
        dead=len(dead_links), links=checked, recoveries=recoveries,
        not_recovered=[link.url for link, _s in dead_links[limit:]],
    )
