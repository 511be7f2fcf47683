"""The moved host: when the dead host is gone, the host's variants (`urls.host_variants`:
www. twin, new subdomains, other top-level domains) that answer with a page of their own are
where the site may live now; every listing engine is asked for them (the new host answers
even when the old one is silent)."""

from __future__ import annotations

import asyncio

from pagetrail.tools import policy
from pagetrail.tools.content.uritokens import carries_site_name
from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.net.fetch import unexplained_proxy_refusals
from pagetrail.tools.net.urls import host_of, host_variants, site_of
from pagetrail.tools.recovery.context import Ask, Asks, Context, Findings
from pagetrail.tools.recovery.homes import Guesses, add_new_homes
from pagetrail.tools.recovery.stages.base import Stage

NAME = "moved host"


class MovedHost(Stage):
    """The gone host's first variant that answers, listed; the dead path on new homes
    (`guesses`: the recovery's guessed addresses, shared with the siblings stage)."""

    NAME = NAME

    def __init__(self, guesses: Guesses) -> None:
        self.guesses = guesses

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        # The variants are listed by host (no dead URL in their context: it is not theirs).
        asks = Asks(context=SearchContext(after=ctx.search.after))
        if not ctx.site_gone or not ctx.allowed("LINKS"):
            return asks
        listers = ctx.engines.listers
        queries = ctx.listing_queries
        for host in await moved_site_hosts(ctx, found):
            found.listed_sites.add(site_of(f"https://{host}/"))
            asks.now += [Ask("LINKS", query, [name], host)
                         for name in listers for query in queries]
            asks.then += [Ask("LINKS", str(ctx.url), [name], host) for name in listers]
        return asks

    async def settle(self, ctx: Context, found: Findings) -> int:
        """The dead path on the hosts the site's own lists and the probes showed its folder
        on (`homes.add_new_homes`): read with this step's ranking, before a look-alike of
        another page of the new host can end the search."""
        return add_new_homes(ctx, found, self.guesses)


def named_hosts(ctx: Context, found: Findings) -> list[str]:
    """Hosts the evidence gathered so far names (candidates' and archived redirects'
    addresses), in the order they came."""
    urls = [e.url for e in found.candidates.values()]
    urls += [r.target_url for r in ctx.direct.redirects]
    return list(dict.fromkeys(h for h in (host_of(u) for u in urls) if h))


def probe_order(dead_host: str, named: list[str],
                cap: int = policy.MOVED_HOST_PROBES) -> list[str]:
    """The variants of `dead_host` to probe, at most `cap`, most likely first (pure): the
    hosts the evidence names that are variants of it or carry its name
    (`spiegel.de` → `spiegelhq.de`), then `urls.host_variants` in its own order."""
    variants = host_variants(dead_host)
    first = [h for h in named if h != dead_host
             and (h in variants
                  or carries_site_name(dead_host, h, policy.MOVED_HOST_NAME_CHARS))]
    return list(dict.fromkeys(first + variants))[:cap]


async def moved_site_hosts(ctx: Context, found: Findings) -> list[str]:
    """The first of the dead host's variants (`probe_order`) that answers with a page of its
    own. One root request each, policy.MOVED_HOST_WAVE variants at a time, stopping after
    the first wave in which one answers; a variant that redirects counts under its final host. A variant that does not
    exist costs one request (the proxy's refusal is not asked to explain itself)."""
    dead_host = host_of(ctx.url)

    async def probe(host: str) -> str | None:
        try:
            with unexplained_proxy_refusals():
                response = await ctx.fetcher.get(f"https://{host}/")
        except PagetrailError:
            return None
        if response.status != 200 or response.squid_error or not response.is_html:
            return None
        final = host_of(response.final_url or "") or host
        return None if site_of(f"https://{final}/") == site_of(ctx.url) and \
            final == dead_host else final

    # Without a web engine nothing else will name the new host: every variant is probed.
    cap = policy.MOVED_HOST_PROBES if ctx.engines.web else policy.MOVED_HOST_PROBES_NO_WEB
    order = probe_order(dead_host, named_hosts(ctx, found), cap)
    hosts: list[str] = []
    for start in range(0, len(order), policy.MOVED_HOST_WAVE):
        wave = order[start:start + policy.MOVED_HOST_WAVE]
        answered = [h for h in await asyncio.gather(*(probe(h) for h in wave)) if h]
        if answered:
            hosts.append(answered[0])  # the likeliest of the wave
            break
    found.notes.figures["site_moved_to"] = hosts
    return hosts
