"""The dead site itself — moves within a site are the most common case: its own map and its
captures (the "site" and "archive" engines) searched for the title (or anchor, or URL words)
and the URL's words, the local index and the web for the title within the site, and the
URLs that look like the dead one (pages only). A root that now redirects to another host
makes that host the site's home (`settle`)."""

from __future__ import annotations

from pagetrail.tools.engines.site import site_origin
from pagetrail.tools.net.urls import site_of
from pagetrail.tools.recovery.context import Ask, Asks, Context, Findings
from pagetrail.tools.recovery.stages.base import Stage

NAME = "dead site"


class DeadSite(Stage):
    """The dead site's own map, captures and title search; its root's new home."""

    NAME = NAME

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        return _plan(ctx)

    async def settle(self, ctx: Context, found: Findings) -> int:
        return await _settle(ctx, found)


def _plan(ctx: Context) -> Asks:
    asks = Asks()
    url_query = " ".join(ctx.evidence.url_terms)
    for name in ctx.engines.site_local:
        method = ctx.engines.method(name)
        if not ctx.allowed(method):
            continue
        if ctx.site_query:
            asks.now.append(Ask(method, ctx.site_query, [name]))
        # The old URL's own words too: a renamed page often keeps its slug (free: the
        # listing is fetched once a recovery).
        if url_query and url_query != ctx.site_query:
            asks.now.append(Ask(method, url_query, [name]))
        # And the URLs that look like the dead one, stop words included (overlap.rank_by_url):
        # a slug of common words, or the hub page (/tag/never/) that links an unlisted page.
        asks.then.append(Ask(method, str(ctx.url), [name]))
    searchers = ctx.engines.web + ctx.engines.index
    if ctx.allowed("SITE") and ctx.evidence.title and searchers:
        # the title within the old site
        asks.now.append(Ask("SITE", ctx.evidence.title, searchers, ctx.url.site))
    return asks


async def _settle(ctx: Context, found: Findings) -> int:
    """The dead site's root redirects to another host (read by the site engine above): that
    host is the site's home now, so links on its pages count as the site's own
    (`links`). Not for a gone or parked site, whose root says nothing of the site."""
    lister = ctx.engines.lister
    origin = site_origin(ctx.url)
    if ctx.site_gone or ctx.host_silent or lister is None or not lister.has_listing(origin):
        return 0
    listing = await lister.listing(origin)  # memoised: no request
    found.listed_sites |= listing.sites - {site_of(ctx.url)}
    return 0
