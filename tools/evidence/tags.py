"""Tags of a URL: words people (or the page's author) attached to it (Klein & Nelson).

Sources sit behind one small interface (`TagSource`): meta keywords of the memento, and
the Hacker News search API (keyless) — more (bookmarking sites, Wikipedia citations) can be
plugged in. A tag missing from the current page is a *ghost tag*: kept, and marked, because
it still describes what the page was about (Klein & Nelson found ghost tags useful).
A source that fails is skipped; tags are evidence, never a reason to fail a recovery.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pagetrail.tools.content.document import clip
from pagetrail.tools.content.text import tokenize
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.models import Document, Memento, Tag
from pagetrail.tools.net.urls import endpoint_url, same_url, validate_url
from pagetrail.tools.settings import Settings, get_settings

if TYPE_CHECKING:
    from pagetrail.tools.net.fetch import Fetcher

log = logging.getLogger(__name__)

MAX_TAGS = 40
MAX_TAG_CHARS = 100
HN_MAX_BYTES = 1024 * 1024
# Hacker News bookkeeping tags: they say what kind of item, not what it is about.
_HN_SYSTEM_TAGS = frozenset({"story", "comment", "poll", "pollopt", "job", "show_hn", "ask_hn",
                             "launch_hn", "front_page"})
_HN_SYSTEM_PREFIXES = ("author_", "story_", "comment_", "poll_")


@dataclass(frozen=True)
class TagRequest:
    url: str
    fetcher: Fetcher
    settings: Settings
    memento: Memento | None = None


class TagSource(Protocol):
    name: str

    async def tags(self, request: TagRequest) -> list[str]: ...


class MetaKeywordsSource:
    """The memento's own keywords (<meta name=keywords>, article:tag)."""

    name = "meta"

    async def tags(self, request: TagRequest) -> list[str]:
        document = request.memento.document if request.memento else None
        return list(document.keywords) if document else []


class HackerNewsSource:
    """Hacker News stories posted with this URL: their titles and tags (Algolia API)."""

    name = "hn"

    async def tags(self, request: TagRequest) -> list[str]:
        url = endpoint_url(request.settings.hn_api_url, "search", params={
            "query": request.url, "restrictSearchableAttributes": "url"})
        response = await request.fetcher.get(url, max_bytes=HN_MAX_BYTES, endpoint=True)
        if response.status != 200:
            log.info("HN search answered %s", response.status)
            return []
        try:
            data = response.json()
        except ValueError:
            return []
        return hn_tags(data, request.url)


def hn_tags(data: Any, url: str) -> list[str]:
    """Titles and topical tags of the hits whose URL is `url` (the search is fuzzy)."""
    hits = data.get("hits") if isinstance(data, dict) else None
    if not isinstance(hits, list):
        return []
    found: list[str] = []
    for hit in hits[:100]:
        if not isinstance(hit, dict) or not isinstance(hit.get("url"), str):
            continue
        if not same_url(hit["url"], url):
            continue
        for tag in hit.get("_tags") or []:
            if isinstance(tag, str) and tag.lower() not in _HN_SYSTEM_TAGS and \
                    not tag.lower().startswith(_HN_SYSTEM_PREFIXES):
                found.append(tag)
        title = hit.get("title") or hit.get("story_title")
        if isinstance(title, str):
            found.append(title)
    return found


DEFAULT_SOURCES: tuple[TagSource, ...] = (MetaKeywordsSource(), HackerNewsSource())


def _normal(tag: str) -> str:
    return " ".join(tokenize(tag))


def is_ghost(tag: str, current: Document) -> bool:
    """True when `tag` is not on the current page (keywords, title or text)."""
    words = _normal(tag)
    if not words:
        return False
    if any(_normal(k) == words for k in current.keywords):
        return False
    haystack = " " + " ".join(tokenize(" ".join([current.title, current.raw_title,
                                                 current.description, current.text]))) + " "
    return f" {words} " not in haystack


def merge_tags(found: list[tuple[str, str]], current: Document | None) -> list[Tag]:
    """(tag, source) pairs → Tags: cleaned, deduplicated (first source wins), ghosts marked."""
    tags: list[Tag] = []
    seen: set[str] = set()
    for raw, source in found:
        text = clip(re.sub(r"[\x00-\x1f]", " ", raw), MAX_TAG_CHARS)
        key = _normal(text)
        if not key or key in seen:
            continue
        seen.add(key)
        ghost = is_ghost(text, current) if current is not None else False
        tags.append(Tag(tag=text, source=source, ghost=ghost))
        if len(tags) >= MAX_TAGS:
            break
    return tags


async def get_tags(url: str, fetcher: Fetcher, *, memento: Memento | None = None,
                   current: Document | None = None, settings: Settings | None = None,
                   sources: tuple[TagSource, ...] = DEFAULT_SOURCES) -> list[Tag]:
    """Tags of `url` from every source; those absent from `current` are ghost tags."""
    url = validate_url(url)
    request = TagRequest(url=url, fetcher=fetcher, settings=settings or get_settings(),
                         memento=memento)
    found: list[tuple[str, str]] = []
    for source in sources:
        try:
            found.extend((tag, source.name) for tag in await source.tags(request))
        except PagetrailError as exc:
            log.info("tag source %s failed: %s", source.name, exc)
    return merge_tags(found, current)
