"""One interface over every search backend: `Engine.search(query) -> list[Hit]`.

Engines only translate a query into requests and a response into ranked hits. Caching,
rate limiting, retries and failure isolation live in `service.SearchService`, so every
backend gets them the same way. Engines signal what went wrong with the errors below:
`RateLimited` and `EngineTransient` are retried, `EngineUnavailable` is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

from pydantic import SecretStr

from pagetrail.tools.errors import ConfigError, EngineUnavailable, PagetrailError, RateLimited
from pagetrail.tools.models import Hit
from pagetrail.tools.net.fetch import retry_after_seconds as parse_retry_after
from pagetrail.tools.net.urls import host_of

if TYPE_CHECKING:
    from pagetrail.store.db import Store
    from pagetrail.tools.settings import Settings

SearchHit = Hit

__all__ = [
    "SCOPES",
    "CaptureLister",
    "Engine",
    "EngineContext",
    "EngineSkipped",
    "EngineTransient",
    "EngineUnavailable",
    "HttpGetter",
    "HttpResponse",
    "RateLimited",
    "Scope",
    "SearchContext",
    "SearchHit",
    "SiteLister",
    "clean_snippet",
    "host_matches",
    "make_hits",
    "parse_retry_after",
    "raise_for_status",
    "redact",
    "scope_of",
]

# What an engine searches, which decides where a recovery asks it:
# - "web": the web (a search API); asked the planned queries and the title within the site;
# - "index": pagetrail's own index of pages it has seen; asked like a web engine, but no web
#   search is counted or reported as unasked for it;
# - "site": the dead site itself (its sitemap, its root page's links), by host;
# - "archive": the archives' captures of a host (CDX), by host.
# "site" and "archive" engines are asked for the dead host and for hosts the site may have
# moved to (the recovery's stages 0 and the neighbourhood), never the planned web queries.
Scope = Literal["web", "index", "site", "archive"]
SCOPES: tuple[Scope, ...] = get_args(Scope)


class EngineTransient(EngineUnavailable):
    """A failure worth retrying: 5xx, timeout, connection reset."""

    code = "engine_transient"


@dataclass(frozen=True)
class SearchContext:
    """What the site and CDX engines need beyond the query: the dead URL and its break date."""

    dead_url: str | None = None
    after: datetime | None = None  # only URLs that appeared after this moment

    def cache_scope(self) -> str:
        after = self.after.astimezone(UTC).strftime("%Y%m%d%H%M%S") if self.after else ""
        return f"dead={self.dead_url or ''};after={after}"


@runtime_checkable
class Engine(Protocol):
    """A search backend. Two optional class attributes tune how the service treats it:

    - `rate_limited` (default True): a third-party API the service paces at
      settings.search_rps; engines that fetch politely and memoise per host set it False.
    - `uses_context` (default False): the answer depends on the SearchContext, which then
      becomes part of the cache key.
    - `scope` (default "web"): what it searches (`Scope`); a recovery asks an engine by its
      scope, never by its name (`scope_of`).
    """

    name: str

    async def search(
        self,
        query: str,
        *,
        site: str | None = None,
        limit: int = 10,
        context: SearchContext | None = None,
    ) -> list[Hit]: ...


def scope_of(engine: object) -> Scope:
    """An engine's declared scope ("web" when it declares none). Raises ConfigError for a
    scope pagetrail does not know, naming the engine (a plugin's mistake, not the user's)."""
    scope = getattr(engine, "scope", "web")
    if scope not in SCOPES:
        name = getattr(engine, "name", type(engine).__name__)
        raise ConfigError(f"engine {name!r} declares an unknown scope {scope!r}; "
                         f"one of {', '.join(SCOPES)}")
    return scope


@runtime_checkable
class SiteLister(Protocol):
    """A "site" engine that also hands out a site's whole map (the pages it lists and the
    sites its root page links to), memoised per origin: what a recovery reads for sibling
    folders, a redirected home and the sites that held other answers."""

    name: str

    def has_listing(self, origin: str) -> bool: ...
    async def listing(self, origin: str) -> Any: ...


@runtime_checkable
class CaptureLister(Protocol):
    """An "archive" engine that remembers the captures of a host it has listed, so a recovery
    can read the archive's pages of the dead host (its siblings) without a request."""

    name: str

    def listed(self, host: str) -> list[str]: ...


class HttpResponse(Protocol):
    """The part of `pagetrail.tools.net.fetch.Response` the engines use."""

    status: int
    headers: Mapping[str, str]
    content: bytes

    def text(self) -> str: ...
    def json(self) -> Any: ...


class HttpGetter(Protocol):
    """The part of `pagetrail.tools.net.fetch.Fetcher` the engines use."""

    async def get(self, url: str, *, headers: Mapping[str, str] | None = None,
                  **options: Any) -> HttpResponse: ...


class EngineSkipped(Exception):
    """A configured engine that cannot run here; the message says why (and how to fix it)."""


@dataclass
class EngineContext:
    """What a factory may use: the product's settings (fetching, archives, proxy), the
    shared fetcher (SSRF guard, politeness) and the store, or None."""

    settings: Settings
    fetcher: HttpGetter
    store: Store | None
    secrets: list[str] = field(default_factory=list)

    def secret(self, value: SecretStr | str | None) -> str:
        """The plain value of a secret, remembered so that messages never carry it."""
        getter = getattr(value, "get_secret_value", None)
        plain = (getter() if getter else str(value or "")).strip()
        if plain:
            self.secrets.append(plain)
        return plain


# --- pure helpers ---------------------------------------------------------------------------

_TAG = re.compile(r"<[^>]{0,200}>")
_SPACE = re.compile(r"\s+")
MAX_TITLE = 300
MAX_SNIPPET = 1000


def clean_snippet(text: object, limit: int = MAX_SNIPPET) -> str:
    """Untrusted result text as one clipped line: tags (e.g. <strong>) and entities removed."""
    if not isinstance(text, str):
        return ""
    import html

    plain = html.unescape(_TAG.sub("", text))
    return _SPACE.sub(" ", plain).strip()[:limit]


def host_matches(url: str, site: str) -> bool:
    """Is `url` on `site` (the host itself or a subdomain of it; www. ignored)?"""
    site = site.lower().strip().strip(".")
    site = site.split("://", 1)[-1].split("/", 1)[0]
    if site.startswith("www."):
        site = site[4:]
    host = host_of(url)
    return host == site or host.endswith("." + site)


def make_hits(
    rows: Iterable[tuple[object, object, object]],
    *,
    engine: str,
    limit: int,
    site: str | None = None,
) -> list[Hit]:
    """(url, title, snippet) rows → ranked, de-duplicated hits (http(s) URLs only)."""
    hits: list[Hit] = []
    seen: set[str] = set()
    for url, title, snippet in rows:
        if len(hits) >= limit:
            break
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            continue
        if site and not host_matches(url, site):
            continue
        if url in seen:
            continue
        seen.add(url)
        hits.append(Hit(url=url, title=clean_snippet(title, MAX_TITLE),
                        snippet=clean_snippet(snippet), rank=len(hits) + 1, engine=engine))
    return hits


def result_rows(engine: str, items: object, fields: tuple[str, str, str], *,
                what: str = "", missing_is_empty: bool = False,
                ) -> list[tuple[object, object, object]]:
    """(url, title, snippet) rows of a JSON list of result objects, read at the keys
    `fields`; EngineUnavailable if it is not a list (absent is [] when `missing_is_empty`:
    some APIs leave the list out when nothing matched). Non-objects are skipped."""
    if items is None and missing_is_empty:
        return []
    if not isinstance(items, list):
        raise EngineUnavailable(f"{engine}: unexpected answer" + (f" ({what})" if what else ""))
    url, title, snippet = fields
    return [
        (item.get(url), item.get(title), item.get(snippet))
        for item in items
        if isinstance(item, dict)
    ]


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret value replaced (error messages must never carry API keys)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def raise_for_status(engine: str, response: HttpResponse) -> None:
    """Turn an HTTP error status into the engine error the service knows how to handle."""
    status = response.status
    if status < 400:
        return
    if status == 429:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        raise RateLimited(f"{engine}: rate limited (HTTP 429)", retry_after=retry_after)
    if status in (500, 502, 503, 504) or status >= 520:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if status == 503 and retry_after is not None:
            # 503 + Retry-After is an overload signal: treat it like a rate limit.
            raise RateLimited(f"{engine}: unavailable (HTTP 503)", retry_after=retry_after)
        raise EngineTransient(f"{engine}: server error (HTTP {status})")
    if status in (401, 403):
        raise EngineUnavailable(f"{engine}: access denied (HTTP {status}); check the API key")
    raise EngineUnavailable(f"{engine}: HTTP {status}")


def translate_fetch_error(engine: str, exc: PagetrailError,
                          secrets: Iterable[str | None] = ()) -> EngineUnavailable:
    """A fetch-layer error as an engine error; timeouts and resets are transient."""
    message = redact(f"{engine}: {exc.code}: {exc}", list(secrets))
    if isinstance(exc, RateLimited):
        return RateLimited(message, retry_after=exc.retry_after)
    kind = getattr(exc, "kind", "")
    if kind in ("timeout", "other", "refused", "proxy"):
        return EngineTransient(message)
    return EngineUnavailable(message)


def response_json(engine: str, response: HttpResponse) -> Any:
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError) as exc:
        raise EngineUnavailable(f"{engine}: the answer is not JSON") from exc


async def fetch_checked(
    fetcher: HttpGetter,
    engine: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str | None] = (),
    **options: Any,
) -> HttpResponse:
    """GET through the fetcher; fetch errors and HTTP error statuses become engine errors.

    Redirects are followed by the fetcher, which sends `headers` (API keys) only while the
    chain stays on the requested origin (docs/INTERFACES.md, "Fetch layer").

    The fetcher's own retries are turned off: the service retries once, in one place,
    honouring Retry-After (two layers of retries would multiply the load on a busy API).
    """
    secrets = list(secrets)
    try:
        response = await fetcher.get(url, headers=headers, retry=False, endpoint=True, **options)
    except EngineUnavailable:
        raise
    except PagetrailError as exc:
        raise translate_fetch_error(engine, exc, secrets) from None
    raise_for_status(engine, response)
    return response


async def fetch_json(fetcher: HttpGetter, engine: str, url: str, *,
                     headers: Mapping[str, str] | None = None, **options: Any) -> Any:
    """`fetch_checked` (same options: `secrets`, …) asking for JSON, then the decoded body;
    EngineUnavailable if it is not JSON."""
    headers = {"Accept": "application/json", **(headers or {})}
    return response_json(engine, await fetch_checked(fetcher, engine, url, headers=headers,
                                                     **options))
