"""The dead page's slug under the folders its live siblings use now
(`tools.recovery.siblings`): the folders of the same-site candidates (pages found for this
link), else of the pages the site lists (sitemap, root page; already read by the site
engine), else of the links on fetched pages; at most MAX_TRANSPLANTS URLs a recovery."""

from __future__ import annotations

from pagetrail.tools.engines.site import site_origin
from pagetrail.tools.models import Hit
from pagetrail.tools.recovery.context import Asks, Context, Findings
from pagetrail.tools.recovery.siblings import transplants

NAME = "siblings"
MAX_TRANSPLANTS = 4  # the dead slug tried under this many sibling folders, per recovery


async def plan(ctx: Context, found: Findings) -> Asks:
    if len(found.transplanted) >= MAX_TRANSPLANTS or not ctx.allowed("SITE") or ctx.site_gone:
        return Asks()
    urls = transplants(ctx.url, [evidence.url for evidence in found.candidates.values()])
    if not urls and ctx.engines.lister is not None and not ctx.host_silent:
        listing = await ctx.engines.lister.listing(site_origin(ctx.url))
        urls = transplants(ctx.url, list(listing.pages))
    if not urls:
        urls = transplants(ctx.url, [link.url for links in found.outlinks.values()
                                     for link in links])
    added = 0
    for url in urls:
        if url in found.transplanted or len(found.transplanted) >= MAX_TRANSPLANTS:
            continue
        found.transplanted.add(url)
        if found.add_hit("SITE", Hit(url=url, rank=len(found.transplanted),
                                     engine="siblings")) is not None:
            added += 1
    return Asks(added=added)


async def settle(ctx: Context, found: Findings) -> int:
    return 0
