"""Siblings' live redirects as evidence for the dead URL (pure functions; #27, proposal 5).

When a site moves a folder, its server often redirects the old addresses — but not every
one: a page missing from the redirect map answers 404 while its siblings answer 301. The
siblings' redirects are the site's own statement of the rule. The dead URL's siblings (pages
of the same folder the archive or the site's map already listed: no request to find them)
are checked live, a few of them (`policy.MAX_SIBLING_CHECKS`, the caller's requests); when
they redirect by one rule (`aliases.infer_aliases` on the (sibling, target) moves), the rule
applied to the dead URL is a candidate, verified like every other (fetched and ranked).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from pagetrail.tools import policy
from pagetrail.tools.content.uritokens import FILE_EXTENSION
from pagetrail.tools.learning import KnownMove, infer_aliases


def _folder_and_style(url: str) -> tuple[str, str, tuple[str, bool]] | None:
    """(host, folder, (extension, trailing slash)) of an http(s) URL without query."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        return None
    path = parts.path or "/"
    folder, _, last = path.rstrip("/").rpartition("/")
    if not last:
        return None
    match = FILE_EXTENSION.search(last)
    return parts.hostname.lower(), folder + "/", (match.group(0) if match else "",
                                                  path.endswith("/"))


def directory(url: str) -> str | None:
    """The dead URL's directory, the unit siblings share ('www.x.org/dev/peps/')."""
    split = _folder_and_style(url)
    return None if split is None else split[0] + split[1]


def pick_siblings(dead_url: str, urls: Iterable[str],
                  limit: int = policy.MAX_SIBLING_CHECKS) -> list[str]:
    """Up to `limit` pages of the dead URL's own folder (same host), the ones shaped like it
    (extension, trailing slash) first, in the order given."""
    dead = _folder_and_style(dead_url)
    if dead is None:
        return []
    host, folder, style = dead
    alike: list[str] = []
    other: list[str] = []
    for url in dict.fromkeys(urls):
        split = _folder_and_style(url)
        if split is None or split[:2] != (host, folder) or url.rstrip("/") == dead_url.rstrip("/"):
            continue
        (alike if split[2] == style else other).append(url)
    return (alike + other)[:limit]


def proposals(dead_url: str, redirects: Sequence[tuple[str, str]]) -> list[str]:
    """Where the siblings' redirects say the dead URL went: the URL their common rule gives
    (a rule reproducing every redirect, at least policy.MIN_SIBLING_REDIRECTS of them, and
    rebuilding the dead URL from its own name); else nothing."""
    moves = [KnownMove(old, new, source="sibling redirect") for old, new in redirects
             if old != new]
    if len(moves) < policy.MIN_SIBLING_REDIRECTS:
        return []
    inference = infer_aliases(moves, dead_url)
    return [p.url for p in inference.proposals[:1]
            if p.support >= policy.MIN_SIBLING_REDIRECTS and p.support == p.applicable
            and p.support == len(moves)]
