"""social.jsonl served in the shape of the Hacker News (Algolia) search API.

`GET /api/v1/search?query=URL&restrictSearchableAttributes=url` finds posts of that URL
(compared normalised, as a person would); without the restriction the query is matched
against titles, tags and URLs word by word. `search_by_date` answers the same, newest first.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from urllib.parse import parse_qs, urlsplit

from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.testbed.httpio import Reply, json_response
from pagetrail.tools.testbed.world import SocialPost

HN_API_HOST = "hn.algolia.com"
_WORD = re.compile(r"\w+", re.UNICODE)


def _object_id(post: SocialPost) -> str:
    return str(int(hashlib.sha256(post.url.encode()).hexdigest()[:7], 16))


def _created_at_i(created: str | None) -> int:
    if not created:
        return 0
    try:
        return int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def to_hit(post: SocialPost) -> dict[str, object]:
    object_id = _object_id(post)
    return {
        "title": post.title,
        "url": post.url,
        "points": post.points,
        "created_at": post.created,
        "created_at_i": _created_at_i(post.created),
        "_tags": ["story", f"story_{object_id}", *post.tags],
        "objectID": object_id,
        "num_comments": 0,
        "author": "testbed",
    }


class SocialIndex:
    def __init__(self, posts: list[SocialPost]) -> None:
        self._posts = posts
        self._by_url: dict[str, list[SocialPost]] = {}
        for post in posts:
            self._by_url.setdefault(normalize_url(post.url), []).append(post)

    def find(self, query: str, *, url_only: bool) -> list[SocialPost]:
        query = query.strip()
        if not query:
            return list(self._posts)
        if url_only:
            if "://" not in query:
                query = "http://" + query
            return list(self._by_url.get(normalize_url(query), []))
        words = {w.lower() for w in _WORD.findall(query)}
        found = []
        for post in self._posts:
            haystack = {w.lower() for w in _WORD.findall(" ".join([post.title, post.url,
                                                                    *post.tags]))}
            if words <= haystack:
                found.append(post)
        return sorted(found, key=lambda p: -p.points)

    def answer(self, path: str, query_string: str) -> Reply:
        if path.rstrip("/") not in ("/api/v1/search", "/api/v1/search_by_date"):
            return json_response(b'{"message":"Not Found","status":404}', 404)
        params = parse_qs(query_string)
        query = params.get("query", [""])[0]
        restrict = params.get("restrictSearchableAttributes", [""])[0]
        posts = self.find(query, url_only=restrict == "url")
        if path.rstrip("/").endswith("search_by_date"):
            posts.sort(key=lambda p: _created_at_i(p.created), reverse=True)
        per_page = _int(params.get("hitsPerPage", ["20"])[0], 20, 1, 1000)
        page = _int(params.get("page", ["0"])[0], 0, 0, 1000)
        hits = [to_hit(p) for p in posts[page * per_page:(page + 1) * per_page]]
        payload = {
            "hits": hits, "nbHits": len(posts), "page": page, "hitsPerPage": per_page,
            "nbPages": (len(posts) + per_page - 1) // per_page, "query": query,
            "params": query_string, "processingTimeMS": 0,
        }
        return json_response(json.dumps(payload, ensure_ascii=False).encode())

    def answer_url(self, url: str) -> Reply:
        parts = urlsplit(url)
        return self.answer(parts.path, parts.query)


def _int(text: str, default: int, low: int, high: int) -> int:
    try:
        return max(low, min(high, int(text)))
    except ValueError:
        return default
