"""The dead page's slug under the folders its live siblings use now (pure functions).

A site that reorganises often moves every page into a new folder and keeps its slug
(/universe-simulation.html → /read/universe-simulation.html, /org/project →
/org/2022/05/project). The folders the site's live pages sit in (seen in its sitemap, its
root page and search hits) are where a dead page's slug may live now: a few requests, no
search engine. Ranking verifies the page like any other candidate.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from urllib.parse import urlsplit

from pagetrail.tools import policy
from pagetrail.tools.content.uritokens import FILE_EXTENSION, carries_site_name, slug_words
from pagetrail.tools.net.urls import site_of

# Their bounds (folders, slug letters, new homes): tools/policy.py, "guessing addresses".
# Slugs that name a kind of page, not one page.
GENERIC_SLUGS = frozenset({"index", "default", "home", "main", "page", "article", "view",
                           "show", "item", "post", "story", "news"})


def _split(url: str) -> tuple[str, str, str] | None:
    """(origin, folder, last segment) of an http(s) URL without query; None otherwise."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        return None
    path = parts.path or "/"
    trimmed = path.rstrip("/")
    folder, _, last = trimmed.rpartition("/")
    return f"{parts.scheme}://{parts.netloc}", folder + "/", last


_NAME_PARTS = re.compile(r"[-_]")


def _has_number(name: str) -> bool:
    return any(part.isdigit() for part in _NAME_PARTS.split(name))


def _without_numbers(name: str) -> str:
    """The name's words without its number parts ('slug-1202189233' → 'slug')."""
    separator = "_" if "_" in name and "-" not in name else "-"
    return separator.join(p for p in _NAME_PARTS.split(name) if p and not p.isdigit())


def _separator(name: str) -> str:
    """The one word separator a name uses ('-' or '_'); "" for none or both."""
    used = {mark for mark in "-_" if mark in name}
    return used.pop() if len(used) == 1 else ""


def transplants(dead_url: str, siblings: Iterable[str], limit: int = policy.SIBLING_FOLDERS) -> list[str]:
    """URLs made of the dead page's slug under the folders of its live same-site siblings,
    styled like the siblings there (extension, trailing slash, word separator — 'a-b' → 'a_b'
    where the siblings' names all use '_' —, and no number parts where no sibling's name has
    any: 'slug-1202189233' → 'slug'); most populated folder first. The dead page's own folder
    counts only when that restyling changes its name. Empty when the slug names nothing by
    itself."""
    dead = _split(dead_url)
    if dead is None:
        return []
    origin, dead_folder, slug = dead
    words = slug_words(dead_url, GENERIC_SLUGS)
    if not slug or sum(len(w) for w in words) < policy.MIN_SLUG_LETTERS:
        return []
    bare = FILE_EXTENSION.sub("", slug)
    site = site_of(dead_url)
    folders: Counter[str] = Counter()
    style: dict[str, tuple[str, str]] = {}  # folder -> (extension, trailing slash)
    numbered: dict[str, bool] = {}  # folder -> a sibling's name there has a number part
    separators: dict[str, Counter[str]] = {}  # folder -> the separators its names use
    for url in siblings:
        split = _split(url)
        if split is None or site_of(url) != site or not split[2]:
            continue
        _origin, folder, last = split
        if last == slug:
            continue
        folders[folder] += 1
        name = FILE_EXTENSION.sub("", last)
        numbered[folder] = numbered.get(folder, False) or _has_number(name)
        separators.setdefault(folder, Counter())[_separator(name)] += 1
        if folder not in style:
            match = FILE_EXTENSION.search(last)
            style[folder] = (match.group(0) if match else "",
                             "/" if urlsplit(url).path.endswith("/") else "")
    out: list[str] = []
    for folder, count in folders.most_common():
        name = bare
        if not numbered[folder] and count >= policy.MIN_STYLE_SIBLINGS and _has_number(bare):
            name = _without_numbers(bare) or bare
        name = _restyled_separator(name, separators[folder])
        if folder == dead_folder and name == bare:
            continue
        extension, slash = style[folder]
        out.append(f"{origin}{folder}{name}{extension}{slash}")
        if len(out) >= limit:
            break
    return out


def _restyled_separator(name: str, used: Counter[str]) -> str:
    """`name` with the word separator of its folder's siblings, when at least
    policy.MIN_STYLE_SIBLINGS of them separate words and all by the other one."""
    own = _separator(name)
    if not own:
        return name
    separated = {mark: n for mark, n in used.items() if mark}
    if len(separated) != 1:
        return name
    (theirs, n), = separated.items()
    if theirs == own or n < policy.MIN_STYLE_SIBLINGS:
        return name
    return name.replace(own, theirs)


def new_homes(dead_url: str, pages: Iterable[str], *, name_chars: int,
              limit: int = policy.MAX_NEW_HOMES) -> list[str]:
    """The dead URL's path and query on the other hosts that hold pages of its folder (pure):
    a site that moved to a new domain keeps its paths (`www.paper.co.uk/news/uk/123/story`
    → `www.paper-online.co.uk/news/uk/123/story`), and a search hit or a link in that folder
    on the new host shows where it went. A host counts when it is the dead host's www. twin,
    carries the site's name (`carries_site_name`: `magazin.paper.de`, `paper-online.co.uk`),
    or the folder is the site's own (policy.MIN_OWN_FOLDER_NAMES named segments or more); the host
    with most pages of the folder first. A page's address with a user name or password is
    untrusted and never copied. Empty when the dead URL is at the root."""
    try:
        dead = urlsplit(dead_url)
    except ValueError:
        return []
    dead_host = (dead.hostname or "").lower()
    folder, _, last = dead.path.rstrip("/").rpartition("/")
    if not dead_host or not folder or not last:
        return []
    folder += "/"
    names = [s for s in folder.split("/") if s and not s.isdigit()]
    own_folder = len(names) >= policy.MIN_OWN_FOLDER_NAMES
    site = site_of(dead_url)
    hosts: Counter[tuple[str, str]] = Counter()
    for url in pages:
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host or host == dead_host or \
                "@" in parts.netloc or \
                not parts.path.startswith(folder) or "/" in parts.path[len(folder):].rstrip("/"):
            continue
        if own_folder or site_of(url) == site or \
                carries_site_name(dead_host, host, name_chars):
            hosts[(parts.scheme, parts.netloc)] += 1
    query = f"?{dead.query}" if dead.query else ""
    return [f"{scheme}://{netloc}{dead.path}{query}"
            for (scheme, netloc), _count in hosts.most_common(limit)]
