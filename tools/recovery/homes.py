"""The dead path on the hosts where the candidates show its folder now (`siblings.new_homes`):
what the moved-host stage adds once the dead site's own lists are in, and the siblings stage
after each web round. Shared by both, so it lives below the stages."""

from __future__ import annotations

from pagetrail.tools import policy
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import host_of
from pagetrail.tools.recovery.context import Context, Findings
from pagetrail.tools.recovery.siblings import new_homes


def add_new_homes(ctx: Context, found: Findings) -> int:
    """Add the new homes of the dead path the candidates so far show as candidates (also
    when the dead host is gone, the commonest case of a site that moved); each is one read,
    at most policy.MAX_NEW_HOMES a recovery, each once. Returns how many were added."""
    if not ctx.allowed("SITE"):
        return 0
    dead_host = host_of(ctx.url)
    tried = sum(1 for url in found.transplanted if host_of(url) != dead_host)
    urls = new_homes(str(ctx.url), [e.url for e in found.candidates.values()],
                     name_chars=policy.MOVED_HOST_NAME_CHARS)
    added = 0
    for url in urls:
        if url in found.transplanted or tried >= policy.MAX_NEW_HOMES:
            continue
        found.transplanted.add(url)
        tried += 1
        if found.add_hit("SITE", Hit(url=url, rank=tried, engine="siblings")) is not None:
            added += 1
    return added
