"""The dead page's siblings: its slug under the folders its live siblings use now
(`tools.recovery.siblings`): the folders of the same-site candidates (pages found for this
link), else of the pages the site lists (sitemap, root page; already read by the site
engine), else of the links on fetched pages; at most policy.MAX_TRANSPLANTS URLs a recovery.

And, for a URL-only link or one nothing was found for yet, the siblings' live redirects
(`tools.recovery.sibling_redirects`): a few pages of the dead URL's folder that the archive
or the site's map already listed are checked live; when they redirect by one rule, the rule
applied to the dead URL is a candidate. The redirects are kept as the site's moves, so the
folder is checked once and later links of the site learn the rule (`direct`)."""

from __future__ import annotations

from urllib.parse import urljoin

from pagetrail.tools import policy
from pagetrail.tools.engines.site import site_origin
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import host_of
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.context import Asks, Context, Findings
from pagetrail.tools.recovery.homes import Guesses, add_new_homes
from pagetrail.tools.recovery.learn import record_move
from pagetrail.tools.recovery.sibling_redirects import directory, pick_siblings, proposals
from pagetrail.tools.recovery.siblings import transplants
from pagetrail.tools.recovery.stages.base import Stage

NAME = "siblings"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MOVE_SOURCE = "live redirect"  # a sibling's own redirect, as the store names it


class Siblings(Stage):
    """The siblings' redirects (once a recovery), the new homes, the slug under the
    siblings' folders (`guesses`: the recovery's guessed addresses, shared with the
    moved-host stage)."""

    NAME = NAME

    def __init__(self, guesses: Guesses) -> None:
        self.guesses = guesses
        self.redirects_read = False  # the dead URL's siblings checked for redirects

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        added = 0
        if not self.redirects_read and _redirects_worth_reading(ctx, found):
            self.redirects_read = True
            added += await _sibling_redirects(ctx, found)
        added += add_new_homes(ctx, found, self.guesses)
        guesses = self.guesses
        if len(guesses) >= policy.MAX_TRANSPLANTS or not ctx.allowed("SITE") or ctx.site_gone:
            return Asks(added=added)
        urls = transplants(ctx.url, [evidence.url for evidence in found.candidates.values()])
        if not urls and ctx.engines.lister is not None and not ctx.host_silent:
            listing = await ctx.engines.lister.listing(site_origin(ctx.url))
            urls = transplants(ctx.url, list(listing.pages))
        if not urls:
            urls = transplants(ctx.url, [link.url for links in found.pages.outlinks.values()
                                         for link in links])
        for url in urls:
            if url in guesses or len(guesses) >= policy.MAX_TRANSPLANTS:
                continue
            guesses.add(url)
            if found.add_hit("SITE", Hit(url=url, rank=len(guesses),
                                         engine="siblings")) is not None:
                added += 1
        return Asks(added=added)


def _url_only(ctx: Context) -> bool:
    reference = ctx.reference
    return not (reference.anchor or reference.context_terms or reference.linking_terms)


async def _listed_pages(ctx: Context) -> list[str]:
    """Pages of the dead host the recovery already has listings of (no request)."""
    urls: list[str] = []
    for engine in ctx.engines.capture_listers:
        urls += engine.listed(host_of(ctx.url))
    lister = ctx.engines.lister
    origin = site_origin(ctx.url)
    if lister is not None and lister.has_listing(origin):
        urls += list((await lister.listing(origin)).pages)  # memoised: no request
    return urls


async def _check(ctx: Context, url: str) -> tuple[int, str]:
    """(status, where it redirects or "") of one sibling; one request (status 0: failed)."""
    try:
        response = await ctx.fetcher.get(url, follow_redirects=False)
    except PagetrailError:
        return 0, ""
    location = response.headers.get("location") or ""
    if response.status not in REDIRECT_STATUSES or not location:
        return response.status, ""
    return response.status, urljoin(url, location)


async def _redirects(ctx: Context, siblings: list[str]) -> list[tuple[str, str]]:
    """The siblings' redirects, checked one after the other: a sibling still served at its
    own address (200) says the folder did not move, and ends the checks (most folders: one
    request); a missing one (404, a failure) says nothing, the next is checked."""
    redirects: list[tuple[str, str]] = []
    for url in siblings:
        status, target = await _check(ctx, url)
        if target:
            redirects.append((url, target))
        elif 200 <= status < 300:
            break
    return redirects


def _redirects_worth_reading(ctx: Context, found: Findings) -> bool:
    """Only for URL-only links or when nothing was found yet, on a host that answers."""
    return ctx.allowed("INFER") and not ctx.site_gone and not ctx.host_silent \
        and (_url_only(ctx) or not found.candidates)


async def _sibling_redirects(ctx: Context, found: Findings) -> int:
    """Candidates from the rule the dead URL's siblings redirect by."""
    folder = directory(ctx.url)
    if folder is None:
        return 0
    redirects: list[tuple[str, str]] = []
    if ctx.store is not None:  # the folder's siblings checked before: their redirects kept
        known = await memory.stored(found.fail, "reading known moves", [],
                                    memory.moves_for_site, ctx.store, ctx.url)
        redirects = [(m.old_url, m.new_url) for m in known
                     if m.source == MOVE_SOURCE and directory(m.old_url) == folder]
    if not redirects:
        redirects = await _redirects(ctx, pick_siblings(ctx.url, await _listed_pages(ctx)))
        if ctx.store is not None:
            for old, new in redirects:
                # A learned move, like the pipeline's: the database away past its wait
                # stops the run (resumable) rather than losing it (memory.stored).
                await memory.stored(found.fail, "recording a sibling's redirect", None,
                                    record_move, ctx.store, old, new, MOVE_SOURCE,
                                    required=True)
    added = 0
    for rank, url in enumerate(proposals(ctx.url, redirects), 1):
        if found.add_hit("INFER", Hit(url=url, rank=rank, engine="sibling redirects")) is not None:
            added += 1
    return added
