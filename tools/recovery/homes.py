"""The addresses a recovery guesses for the dead page — its slug under its siblings' folders
(`siblings.transplants`), its path on the hosts where the candidates show its folder now
(`siblings.new_homes`) — within one budget (policy.MAX_TRANSPLANTS, of which at most
policy.MAX_NEW_HOMES new homes). The siblings stage and the moved-host stage both guess: the
chain gives them one `Guesses` a recovery, so it lives below the stages."""

from __future__ import annotations

from dataclasses import dataclass, field

from pagetrail.tools import policy
from pagetrail.tools.models import Hit
from pagetrail.tools.net.urls import host_of
from pagetrail.tools.recovery.context import Context, Findings
from pagetrail.tools.recovery.siblings import new_homes


@dataclass
class Guesses:
    """The addresses guessed so far in one recovery (each tried once)."""

    urls: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.urls)

    def __contains__(self, url: object) -> bool:
        return url in self.urls

    def add(self, url: str) -> None:
        self.urls.add(url)


def add_new_homes(ctx: Context, found: Findings, guesses: Guesses) -> int:
    """Add the new homes of the dead path the candidates so far show as candidates (also
    when the dead host is gone, the commonest case of a site that moved); each is one read,
    at most policy.MAX_NEW_HOMES a recovery, each once. Returns how many were added."""
    if not ctx.allowed("SITE"):
        return 0
    dead_host = host_of(ctx.url)
    tried = sum(1 for url in guesses.urls if host_of(url) != dead_host)
    urls = new_homes(str(ctx.url), [e.url for e in found.candidates.values()],
                     name_chars=policy.MOVED_HOST_NAME_CHARS)
    added = 0
    for url in urls:
        if url in guesses or tried >= policy.MAX_NEW_HOMES:
            continue
        guesses.add(url)
        tried += 1
        if found.add_hit("SITE", Hit(url=url, rank=tried, engine="siblings")) is not None:
            added += 1
    return added
