"""The neighbourhood, for pages the web index does not hold: the own map (sitemap, root page
links; CDX listing) of the hosts where the best candidates live when they are not the dead
host — another site (the site moved to a new domain) or another host of the dead site (a
section moved to its own subdomain: www.x.org/dev/peps/ → peps.x.org/…) —, searched for the
evidence's words and for the URLs that look like the dead one (the dead slug under the new
host's layout, however its folders were renamed), and the link graph — links on the fetched
candidate pages of the dead site and of those sites, ranked by overlap of their anchor text
and URL with the evidence."""

from __future__ import annotations

from collections import Counter
from urllib.parse import parse_qsl, urlsplit

from pagetrail.tools import policy
from pagetrail.tools.content.uritokens import carries_site_name, registered_domain
from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.engines.overlap import rank_by_overlap, rank_by_url
from pagetrail.tools.models import Candidate, Hit
from pagetrail.tools.net.urls import host_of, normalize_url, site_of
from pagetrail.tools.ranking.rank import reciprocal_rank_fusion
from pagetrail.tools.recovery.context import Ask, Asks, Context, Findings
from pagetrail.tools.recovery.stages.base import Stage

NAME = "links"


class Links(Stage):
    """The maps of related candidates' sites; the links on the pages read so far (each page
    followed once: `linked_from`)."""

    NAME = NAME

    def __init__(self) -> None:
        self.linked_from: set[str] = set()  # pages whose links were followed
        self.listed_hosts: set[str] = set()  # hosts whose maps were asked
        # how many hosts of each kind ("own", "other": `home_kind`) the site engine was asked
        # for the own map (robots.txt, sitemaps, root) of while the dead host is silent
        # (`map_readers`)
        self.mapped_kinds: Counter[str] = Counter()

    async def plan(self, ctx: Context, found: Findings) -> Asks:
        return _plan(ctx, found, self.listed_hosts, self.mapped_kinds)

    async def settle(self, ctx: Context, found: Findings) -> int:
        """Follow the links of the pages fetched so far on the dead site and the listed
        ones."""
        if not ctx.listing_queries or not ctx.allowed("LINKS"):
            return 0
        sites = {site_of(ctx.url)} | found.listed_sites
        return follow_links(found, ctx.url, self.linked_from, ctx.listing_queries[0], sites)


def _plan(ctx: Context, found: Findings, listed_hosts: set[str],
          mapped_kinds: Counter[str]) -> Asks:
    """Ask the site-local engines for the maps of the hosts where related candidates live:
    the evidence's words now, the URLs like the dead one then (pages only)."""
    asks = Asks(context=SearchContext(after=ctx.search.after))
    if not ctx.listing_queries or not ctx.allowed("LINKS"):
        return asks
    dead_site, dead_host = site_of(ctx.url), host_of(ctx.url)
    sites = {dead_site} | found.listed_sites
    for candidate in found.ranked[:policy.NEIGHBOUR_DEPTH]:
        if len(listed_hosts) >= policy.NEIGHBOUR_SITES:
            break
        other, host = site_of(candidate.url), host_of(candidate.url)
        # Another site, or another host of the dead site (its map is not the dead host's);
        # a site listed already (the dead site's home, read by its stage) is not read again.
        if host == dead_host or host in listed_hosts or (other in sites and other != dead_site):
            continue
        if other != dead_site and len(found.listed_sites) >= policy.NEIGHBOUR_SITES:
            continue
        # A site named after a gone one is where it may live now, however weak the page
        # that named it: its map may hold the dead page under a shape no search matched.
        renamed = ctx.site_gone and carries_site_name(dead_host, host,
                                                      policy.MOVED_HOST_NAME_CHARS)
        if not (renamed or looks_related(candidate)):
            continue
        listed_hosts.add(host)
        if other != dead_site:
            sites.add(other)
            found.listed_sites.add(other)
        names = map_readers(ctx, host, mapped_kinds)
        asks.now += [Ask("LINKS", query, [name], host)
                     for name in names for query in ctx.listing_queries]
        asks.then += [Ask("LINKS", str(ctx.url), [name], host) for name in names]
    return asks


def map_readers(ctx: Context, host: str, mapped_kinds: Counter[str]) -> list[str]:
    """The engines that list `host`, another host than the dead one. `Engines.site_local`
    leaves the site engine out for a silent dead host (it would wait out its timeouts), which
    says nothing of this host: its own map is read too — for the first
    policy.SILENT_HOST_MAPS hosts of each kind (the most related first: `_plan` walks the
    ranking), each costing robots.txt, a sitemap and the root page; the archive's listing of
    the others is one request. The kinds are the dead site's own new homes (a host of its
    registered domain, or one named after it) and other sites (a republisher): a site that
    went silent most often lives on at a home of its own, which a republisher ranked above
    it must not crowd out."""
    if not ctx.host_silent:
        return ctx.engines.site_local
    kind = home_kind(host_of(ctx.url), host)
    if mapped_kinds[kind] >= policy.SILENT_HOST_MAPS:
        return ctx.engines.site_local
    mapped_kinds[kind] += 1
    return ctx.engines.listers


def home_kind(dead_host: str, host: str) -> str:
    """What `host` is to the dead site (pure): "own" when it is one of the site's hosts (its
    registered domain) or named after it (`spiegel.de` → `spiegelhq.de`), else "other"."""
    own = (registered_domain(host) == registered_domain(dead_host)
           or carries_site_name(dead_host, host, policy.MOVED_HOST_NAME_CHARS))
    return "own" if own else "other"


def looks_related(candidate: Candidate) -> bool:
    """Worth reading its site's map: the page resembles the dead one by its URL, title or
    text (a site the dead one moved to), not merely by ranking among weak candidates."""
    scores = candidate.scores
    return (scores.url_similarity >= policy.NEIGHBOUR_URL
            or (scores.title_similarity or 0.0) >= policy.NEIGHBOUR_TITLE
            or (scores.content_cosine or 0.0) >= policy.NEIGHBOUR_CONTENT)


def follow_links(found: Findings, dead_url: str, linked_from: set[str], query: str,
                 sites: set[str]) -> int:
    """Link targets on `sites` (or another host of theirs) from pages fetched so far, best
    first: by overlap with `query` and by how much their URL looks like the dead one (a slug
    of stop words, a renamed folder), the two orders fused. Returns candidates added."""
    # A site's other hosts count as the site: a section moved to its own subdomain
    # (www.x.de/health/… → health.x.de/…) is linked from the pages of the old host.
    domains = {registered_domain(site) for site in sites}
    domains.discard("")
    links: dict[str, str] = {}
    for page, page_links in found.pages.outlinks.items():
        if page in linked_from or _domain(page) not in domains:
            continue
        linked_from.add(page)
        for link in page_links:
            if _domain(link.url) not in domains or carries_address(link.url) or \
                    normalize_url(link.url) in found.candidates or \
                    is_dead_page(link.url, dead_url):
                continue
            # The anchor alone: the words around a link in a list of links are the
            # neighbours' and would make every link of the list look alike.
            if link.anchor and link.anchor not in links.get(link.url, ""):
                links[link.url] = f"{links.get(link.url, '')} {link.anchor}".strip()[:600]
            else:
                links.setdefault(link.url, "")
    # Reciprocal-rank fusion of the two orders: each keeps its own tie-breaks, and a link
    # near the top of both comes first.
    by_words = rank_by_overlap(query, list(links.items()))
    by_url = rank_by_url(dead_url, list(links.items()))
    ranks: dict[str, list[int]] = {}
    for order in (by_words, by_url):
        for rank, (url, _text, _score) in enumerate(order, 1):
            ranks.setdefault(url, []).append(rank)
    worth = worth_following({url: recall for url, _text, recall in by_words},
                            {url: likeness for url, _text, likeness in by_url})
    fused = {url: reciprocal_rank_fusion(found_ranks) for url, found_ranks in ranks.items()
             if url in worth}
    ranked = sorted(fused, key=lambda url: (-fused[url], len(url), url))
    added = 0
    for rank, url in enumerate(ranked[:policy.LINK_CANDIDATES], 1):
        if found.add_hit("LINKS", Hit(url=url, rank=rank, engine="links")) is not None:
            added += 1
    return added


def carries_address(url: str) -> bool:
    """A link whose query holds another address (`/linktrack/?url=https%3A…`,
    `/login?redirect=https://…`): a redirector, a tracker or a login page, whose likeness to
    the dead URL is the address it carries, not its own (pure)."""
    try:
        query = urlsplit(url).query
    except ValueError:
        return True
    return any(value.lstrip().lower().startswith(("http://", "https://", "//"))
               for _name, value in parse_qsl(query, keep_blank_values=True))


def is_dead_page(url: str, dead_url: str) -> bool:
    """The dead page itself, however linked (pure): its address, or — when the dead address
    has no query — its path with one added (`?share=twitter`, `?replytocom=5`, `?amp`: an
    action on the page, not another page). Its look-alikes would fill the link graph's few
    places (policy.LINK_CANDIDATES) with the dead page's own share buttons."""
    key, dead = normalize_url(url), normalize_url(dead_url)
    if key == dead:
        return True
    dead_parts = urlsplit(dead)
    if dead_parts.query:
        return False
    parts = urlsplit(key)
    return (parts.netloc, parts.path) == (dead_parts.netloc, dead_parts.path)


def _domain(url: str) -> str:
    """The registered domain of a URL's host; "" for one that cannot be parsed (a page's
    links are untrusted)."""
    try:
        return registered_domain(host_of(url))
    except ValueError:
        return ""


def worth_following(recall: dict[str, float], likeness: dict[str, float]) -> set[str]:
    """The link targets worth a request (pure): those whose anchor and URL carry
    policy.LINK_MIN_RECALL of the query's terms, or whose URL is policy.LINK_MIN_LIKENESS
    like the dead one. A link that merely shares the dead page's folder or one common word
    (a section, a tag, the next article) is no lead."""
    return {url for url in recall.keys() | likeness.keys()
            if recall.get(url, 0.0) >= policy.LINK_MIN_RECALL
            or likeness.get(url, 0.0) >= policy.LINK_MIN_LIKENESS}
