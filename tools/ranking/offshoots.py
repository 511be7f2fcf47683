"""Pages that grew out of the dead address (pure).

On the dead page's own site, a live page whose address is the dead address plus words
(`/2019/11/story/` → `/2019/11/story-second-look/`, `/story.html` → `/story-2024-update.html`,
`/story/` → `/story/comments/`) is another page of that site — an edition, a follow-up, an
update, a page under it — not the page itself moved: a site that moves a page keeps its slug,
shortens it or moves it elsewhere; it does not lengthen it. Its address looks more like the
dead one than the real answer's does, so without a penalty it wins on looks alone. Not an
offshoot: a small number alone appended (`story-2`: a CMS's answer to a slug taken twice,
often the page re-published; a year, `story-2024`, is an edition), another host's page (a
republisher keeps the slug and adds its id).

A site that shortened the slug (`/story-of-the-long-title` → `/story-of-the`) grows its
offshoots out of the short address: when that page is among the candidates, the short address
plus words (`/story-of-the-new-edition`) is an offshoot too (`cut_short`, `grown_out`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from pagetrail.tools import policy
from pagetrail.tools.content.uritokens import FILE_EXTENSION
from pagetrail.tools.net.urls import site_of

# What makes the added part another page's name: a word (two letters or more) or a number
# of three digits or more (a year, an id); `-2`, `-7` are a CMS's duplicate-slug suffixes.
_NAMING = re.compile(r"[^\W\d_]{2,}|(?<!\d)\d{3,}")


def _stem(path: str) -> str:
    # A file extension a site may add or change when it moves pages (.html → .php).
    return FILE_EXTENSION.sub("", unquote(path).lower().rstrip("/"))


def _page_address(stem: str) -> bool:
    """A root or a one-word folder (`/news`, `/faq`) is no page address to grow out of; a
    page's name followed by a short number is (`/story-slug/21`: a page of the story, an id)."""
    segments = stem.strip("/").split("/")
    if not segments[-1] or stem.count("/") < 1:
        return False
    if len(segments[-1]) >= policy.OFFSHOOT_NAME_CHARS:
        return True
    return segments[-1].isdigit() and len(segments) >= 2 and \
        len(segments[-2]) >= policy.OFFSHOOT_NAME_CHARS


def is_offshoot(dead_url: str, candidate_url: str) -> bool:
    """True when `candidate_url`, on the dead URL's site, is the dead address (extension and
    trailing slash aside) followed by a separator and at least one word or long number."""
    try:
        dead, candidate = urlsplit(dead_url), urlsplit(candidate_url)
    except ValueError:
        return False
    if not dead.hostname or not candidate.hostname:
        return False
    if site_of(dead_url) != site_of(candidate_url):
        return False
    dead_stem, stem = _stem(dead.path), _stem(candidate.path)
    if not _page_address(dead_stem):
        return False
    if not stem.startswith(dead_stem) or len(stem) == len(dead_stem):
        return False
    if stem[len(dead_stem)].isalnum():  # the dead slug's last word continues: another slug
        return False
    return _NAMING.search(stem[len(dead_stem):]) is not None


def cut_short(dead_url: str, urls: Iterable[str]) -> list[str]:
    """The `urls` that are the dead address cut short at a separator, on its site, and still
    a page address (`/story-of-the-long-title` → `/story-of-the`): the slug a site shortened."""
    try:
        dead_stem = _stem(urlsplit(dead_url).path)
    except ValueError:
        return []
    dead_site = site_of(dead_url)
    found = []
    for url in urls:
        try:
            stem = _stem(urlsplit(url).path)
        except ValueError:
            continue
        if site_of(url) == dead_site and len(stem) < len(dead_stem) \
                and dead_stem.startswith(stem) and not dead_stem[len(stem)].isalnum() \
                and _page_address(stem):
            found.append(url)
    return found


def grown_out(dead_url: str, candidate_url: str, short: Iterable[str] = ()) -> bool:
    """An offshoot of the dead address, or of one of its `short` forms (`cut_short`) other
    than the candidate itself."""
    return is_offshoot(dead_url, candidate_url) or any(
        url != candidate_url and is_offshoot(url, candidate_url) for url in short)
