"""The moved host: when the dead host is gone, the host's variants (`urls.host_variants`:
www. twin, new subdomains, other top-level domains) that answer with a page of their own are
where the site may live now; every listing engine is asked for them (the new host answers
even when the old one is silent)."""

from __future__ import annotations

import asyncio

from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.net.urls import host_of, host_variants, site_of
from pagetrail.tools.recovery.context import Ask, Asks, Context, Findings

NAME = "moved host"
MAX_SITE_MOVES = 3  # answering variant hosts whose maps are read


async def plan(ctx: Context, found: Findings) -> Asks:
    # The variants are listed by host (no dead URL in their context: it is not theirs).
    asks = Asks(context=SearchContext(after=ctx.search.after))
    if not ctx.site_gone or not ctx.allowed("LINKS"):
        return asks
    listers = ctx.engines.listers
    queries = ctx.listing_queries
    for host in await moved_site_hosts(ctx, found):
        found.listed_sites.add(site_of(f"https://{host}/"))
        asks.now += [Ask("LINKS", query, [name], host) for name in listers for query in queries]
        asks.then += [Ask("LINKS", str(ctx.url), [name], host) for name in listers]
    return asks


async def settle(ctx: Context, found: Findings) -> int:
    return 0


async def moved_site_hosts(ctx: Context, found: Findings) -> list[str]:
    """The dead host's variants that answer with a page of their own. One root request each;
    a variant that redirects counts under its final host."""
    async def probe(host: str) -> str | None:
        try:
            response = await ctx.fetcher.get(f"https://{host}/")
        except PagetrailError:
            return None
        if response.status != 200 or response.squid_error or not response.is_html:
            return None
        final = host_of(response.final_url or "") or host
        return None if site_of(f"https://{final}/") == site_of(ctx.url) and \
            final == host_of(ctx.url) else final

    found_hosts = await asyncio.gather(*(probe(h) for h in host_variants(host_of(ctx.url))))
    hosts = list(dict.fromkeys(h for h in found_hosts if h))
    found.search_evidence["site_moved_to"] = hosts[:MAX_SITE_MOVES]
    return hosts[:MAX_SITE_MOVES]
