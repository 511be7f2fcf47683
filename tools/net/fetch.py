"""The fetch layer: every HTTP request pagetrail makes goes through `Fetcher`.

What it guarantees (docs/INTERFACES.md, "Fetch layer"):
- the SSRF guard (tools.net.netguard) on the URL and on every redirect hop, redirects followed
  here, one by one, so each hop is recorded (`Response.chain`);
- the caller's `headers` (API keys) are sent only while the chain stays on the requested
  origin (scheme, host, port): a cross-origin redirect hop goes without them;
- bounded work: connect/read/total timeouts, at most `max_bytes` of (decompressed) body read
  from a stream, gzip/deflate decoded here with an output bound (a decompression bomb stops
  at the bound instead of inflating in memory), at most `max_redirects` hops;
- per-host concurrency, and a per-host rate when `polite=True` (tools.net.politeness);
- retries with backoff (tenacity) for transient faults only, honouring Retry-After;
- HTTP error statuses are returned, not raised; network failures raise FetchFailed(kind=...).

This module is the fetch layer's surface: the client and its redirects live here; content
type and charset sniffing (tools.net._sniff), bounded decompression (tools.net._decode),
failure kinds and Retry-After (tools.net._faults) and the proxy CONNECT probe
(tools.net._connect) are private modules behind it, their public names re-exported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
import os
import random
import re
import ssl
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit, urlunsplit

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    retry_if_result,
)

from pagetrail.tools.errors import (
    BodyTooLarge,
    ConfigError,
    FetchFailed,
    InvalidURL,
    RedirectLoop,
    TooManyRedirects,
    UnsupportedContent,
)
from pagetrail.tools.models import Hop
from pagetrail.tools.net._connect import connect_probe
from pagetrail.tools.net._decode import BOMB_RATIO, CHUNK, _BoundedDecoder
from pagetrail.tools.net._faults import failure_kind, retry_after_seconds
from pagetrail.tools.net._memo import current_memo, remembering_answers
from pagetrail.tools.net._sniff import (
    TEXT_TYPES,
    detect_charset,
    is_text_type,
    sniff_content_type,
)
from pagetrail.tools.net.netguard import (
    AddressGuard,
    GuardedNetworkBackend,
    Origin,
    bypasses_proxy,
    origin_of,
)
from pagetrail.tools.net.politeness import HostLimiter, shared_limiter
from pagetrail.tools.net.urls import userinfo_authorization, validate_url
from pagetrail.tools.settings import Settings

__all__ = [
    "BOMB_RATIO",
    "CHUNK",
    "REDIRECT_STATUSES",
    "RETRY_STATUSES",
    "TEXT_TYPES",
    "Fetcher",
    "Response",
    "build_ssl_context",
    "detect_charset",
    "endpoint_authorizations",
    "failure_kind",
    "is_text_type",
    "next_hop",
    "remembering_answers",
    "retry_after_seconds",
    "sniff_content_type",
    "unexplained_proxy_refusals",
    "without_fragment",
]

log = logging.getLogger(__name__)


@functools.cache
def _warn_unpinned() -> None:
    """Once a process: every Fetcher would say it again."""
    log.warning("this httpx has no network-backend hook: connect-time address pinning is "
                "off (URLs and redirect hops are still checked)")

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass
class Response:
    url: str
    final_url: str
    status: int
    headers: httpx.Headers
    content: bytes
    chain: list[Hop] = field(default_factory=list)
    content_type: str = ""
    charset: str | None = None
    elapsed: float = 0.0

    def text(self) -> str:
        return self.content.decode(self.charset or "utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.text())

    @property
    def is_html(self) -> bool:
        return self.content_type in ("text/html", "application/xhtml+xml")

    @property
    def squid_error(self) -> str | None:
        """The X-Squid-Error header of a proxy's own error answer (e.g. "ERR_DNS_FAIL 0")."""
        return self.headers.get("x-squid-error")


# --- a refused CONNECT, unexplained ---------------------------------------------------------

# Whether a CONNECT the proxy refuses is asked again by hand to read its X-Squid-Error
# (`Fetcher._proxy_answer`: one more request). A caller that only needs "does this host
# answer?" (the moved-host probes: most variants do not exist) turns it off for its own task.
_EXPLAIN_PROXY_REFUSAL: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "pagetrail_explain_proxy_refusal", default=True)


@contextlib.contextmanager
def unexplained_proxy_refusals() -> Iterator[None]:
    """Within this block (and the tasks it starts), a refused CONNECT is a plain failure:
    one request, not two."""
    token = _EXPLAIN_PROXY_REFUSAL.set(False)
    try:
        yield
    finally:
        _EXPLAIN_PROXY_REFUSAL.reset(token)


# --- retries ---------------------------------------------------------------------------------

class _Transient(Exception):
    """A network fault worth one more try (wraps the original)."""

    def __init__(self, error: FetchFailed, max_attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.max_attempts = max_attempts


@dataclass
class _Raw:
    """One HTTP exchange, body read (or skipped for redirects)."""

    url: str
    status: int
    headers: httpx.Headers
    content: bytes


# --- the fetcher ------------------------------------------------------------------------------

class _RoutingTransport(httpx.AsyncBaseTransport):
    """Sends through the proxy unless the host is in no_proxy (the guard uses the same rule)."""

    def __init__(self, direct: httpx.AsyncBaseTransport, proxied: httpx.AsyncBaseTransport | None,
                 no_proxy: list[str]) -> None:
        self.direct = direct
        self.proxied = proxied
        self.no_proxy = no_proxy

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if self.proxied is None or bypasses_proxy(url.host, url.port, self.no_proxy):
            return await self.direct.handle_async_request(request)
        return await self.proxied.handle_async_request(request)

    async def aclose(self) -> None:
        await self.direct.aclose()
        if self.proxied is not None:
            await self.proxied.aclose()


def build_ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    """System/certifi roots plus the configured bundle (a corporate or test CA).

    One context per bundle (and its file's size and mtime, so an edited bundle is read
    again), shared by every client of the process: loading the roots costs ~20 ms of CPU,
    which a Fetcher per job (a worker's chunk of checks) paid each time. The only change
    made to it afterwards is httpcore's ALPN list on connect, the same for every client
    (HTTP/1.1: no client here speaks HTTP/2)."""
    stamp = None
    if ca_bundle:
        try:
            info = os.stat(ca_bundle)
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError as exc:
            raise ConfigError(f"cannot load CA bundle {ca_bundle}: {exc}") from exc
    return _ssl_context(ca_bundle, stamp)


@functools.lru_cache(maxsize=8)
def _ssl_context(ca_bundle: str | None, stamp: tuple[int, int] | None) -> ssl.SSLContext:
    import certifi

    context = ssl.create_default_context(cafile=certifi.where())
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load CA bundle {ca_bundle}: {exc}") from exc
    return context


def endpoint_authorizations(settings: Settings) -> dict[Origin, str]:
    """Basic credentials of the configured endpoints (`https://user:pass@archive/…`) by
    origin: URLs built for an endpoint and handed out carry none (ArchiveEndpoint), so the
    fetcher adds them to pagetrail's own requests there."""
    found: dict[Origin, str] = {}
    for url in [*settings.archives, settings.searxng_url, settings.hn_api_url]:
        origin = origin_of(url.strip()) if url and url.strip() else None
        auth = userinfo_authorization(url.strip()) if url else None
        if origin is not None and auth:
            found.setdefault(origin, auth)
    return found


class Fetcher:
    """One per task/request: an async httpx client with the guarantees above."""

    def __init__(self, settings: Settings | None = None, *, limiter: HostLimiter | None = None,
                 max_retry_after: float = 30.0, backoff: float = 0.5,
                 max_backoff: float = 8.0) -> None:
        self.settings = settings or Settings()
        self.guard = AddressGuard(self.settings)
        self._endpoint_auth = endpoint_authorizations(self.settings)
        self.max_retry_after = max_retry_after
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.requests = 0
        self.per_host: Counter[str] = Counter()
        self._limiter = limiter
        self._client: httpx.AsyncClient | None = None

    # -- lifecycle --
    def _build_client(self) -> httpx.AsyncClient:
        s = self.settings
        context = build_ssl_context(s.ca_bundle)
        limits = httpx.Limits(max_connections=max(1, s.concurrency),
                              max_keepalive_connections=max(1, s.concurrency))
        direct = httpx.AsyncHTTPTransport(verify=context, limits=limits, trust_env=False)
        # Private attribute: httpx has no public hook for the network backend. Without it
        # only connect-time pinning is lost (check_url still vets every URL and hop), so
        # go on, but say so: tests/test_netguard.py's rebinding test fails on such an httpx.
        pool = getattr(direct, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = GuardedNetworkBackend(pool._network_backend, self.guard)
        else:
            _warn_unpinned()
        proxied = None
        if s.proxy:
            proxied = httpx.AsyncHTTPTransport(proxy=s.proxy, verify=context, limits=limits,
                                               trust_env=False)
        timeout = httpx.Timeout(connect=s.connect_timeout, read=s.read_timeout,
                                write=s.read_timeout, pool=s.total_timeout)
        return httpx.AsyncClient(
            transport=_RoutingTransport(direct, proxied, list(s.no_proxy)),
            timeout=timeout, follow_redirects=False, trust_env=False,
            event_hooks={"response": [_set_location_aside]},
            headers={"User-Agent": s.user_agent, "Accept-Encoding": "gzip, deflate",
                     "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
        )

    async def __aenter__(self) -> Fetcher:
        self._client = self._build_client()
        if self._limiter is None:
            self._limiter = shared_limiter(self.settings)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- public API --
    async def get(self, url: str, *, headers: dict[str, str] | None = None,
                  follow_redirects: bool = True, max_bytes: int | None = None,
                  polite: bool = False, retry: bool = True, endpoint: bool = False) -> Response:
        """`endpoint=True`: a request of pagetrail's own to a configured endpoint (archive,
        search engine, HN API) — its origin is exempt from the address guard. Never for a
        URL that came from a user, a page or a search result."""
        return await self._fetch("GET", url, headers=headers, follow_redirects=follow_redirects,
                                 max_bytes=max_bytes, polite=polite, retry=retry,
                                 endpoint=endpoint)

    async def head(self, url: str, *, headers: dict[str, str] | None = None,
                   follow_redirects: bool = True, max_bytes: int | None = None,
                   polite: bool = False, retry: bool = True, endpoint: bool = False) -> Response:
        return await self._fetch("HEAD", url, headers=headers, follow_redirects=follow_redirects,
                                 max_bytes=max_bytes, polite=polite, retry=retry,
                                 endpoint=endpoint)

    async def post_form(self, url: str, form: dict[str, str], *,
                        headers: dict[str, str] | None = None,
                        max_bytes: int | None = None) -> Response:
        """POST an urlencoded form to a configured endpoint (pagetrail's own requests only:
        Save Page Now). Sent once — a POST is not repeated behind the caller's back — and a
        redirect is returned, not followed."""
        if self._client is None:
            raise RuntimeError("Fetcher must be used as `async with Fetcher(...) as f`")
        requested = validate_url(url)
        await self.guard.check_url(requested, endpoints=True)
        limit = max_bytes if max_bytes is not None else self.settings.max_bytes
        started = time.monotonic()
        body = urlencode(form).encode()
        sent = {**(headers or {}), "Content-Type": "application/x-www-form-urlencoded"}
        try:
            raw = await self._attempt("POST", requested, sent, limit, False, body)
        except _Transient as exc:
            raise exc.error from exc
        return self._response(requested, raw, [], started)

    # -- redirects --
    async def _fetch(self, method: str, url: str, *, headers: dict[str, str] | None,
                     follow_redirects: bool, max_bytes: int | None, polite: bool,
                     retry: bool, endpoint: bool = False) -> Response:
        if self._client is None:
            raise RuntimeError("Fetcher must be used as `async with Fetcher(...) as f`")
        requested = validate_url(url)
        limit = max_bytes if max_bytes is not None else self.settings.max_bytes
        started = time.monotonic()
        chain: list[Hop] = []
        visits: Counter[str] = Counter()
        current = requested
        # Endpoint origins (archives, search, HN API, proxy) are exempt from the guard only
        # for pagetrail's own requests to them (`endpoint=True`), in a chain that starts at
        # one: a user's URL, a search result or a page's redirect never reaches them.
        endpoints = endpoint and self.guard.is_endpoint(requested)
        origin = origin_of(requested)
        auth = self._endpoint_auth.get(origin) if endpoints and origin else None
        if auth and "@" not in requested.split("/", 3)[2] and \
                not any(k.lower() == "authorization" for k in headers or {}):
            headers = {**(headers or {}), "Authorization": auth}  # stays on this origin
        while True:
            await self.guard.check_url(current, endpoints=endpoints)
            if headers and origin_of(current) != origin:
                headers = None  # caller's headers (API keys) stay with the origin they were for
            raw = await self._hop(method, current, headers, limit, polite, retry, endpoints)
            location = raw.headers.get("location")
            if not (follow_redirects and raw.status in REDIRECT_STATUSES and location):
                return self._response(requested, raw, chain, started)
            target = next_hop(requested, current, raw.status, location, chain, visits,
                              self.settings.max_redirects)
            if target is None:
                return self._response(requested, raw, chain, started)
            current = target

    def _response(self, requested: str, raw: _Raw, chain: list[Hop], started: float) -> Response:
        header = raw.headers.get("content-type")
        mime = sniff_content_type(header, raw.content)
        return Response(url=requested, final_url=raw.url, status=raw.status, headers=raw.headers,
                        content=raw.content, chain=chain, content_type=mime,
                        charset=detect_charset(header, raw.content, mime),
                        elapsed=time.monotonic() - started)

    async def _hop(self, method: str, url: str, headers: dict[str, str] | None, limit: int,
                   polite: bool, retry: bool, endpoints: bool) -> _Raw:
        """One hop of a chain, answered from the task's memory when it has it
        (`remembering_answers`): a plain GET of a page (no caller headers, not one of
        pagetrail's own endpoints, whose answers the store keeps)."""
        memo = current_memo()
        if memo is None or method != "GET" or headers or endpoints:
            return await self._send(method, url, headers, limit, polite, retry)
        return await memo.answer((url, limit),
                                 lambda: self._send(method, url, headers, limit, polite, retry))

    # -- retries --
    async def _send(self, method: str, url: str, headers: dict[str, str] | None, limit: int,
                    polite: bool, retry: bool) -> _Raw:
        attempts = 1 + (max(0, self.settings.retries) if retry else 0)

        def should_stop(state: RetryCallState) -> bool:
            if state.attempt_number >= attempts:
                return True
            outcome = state.outcome
            if outcome is not None and outcome.failed:
                error = outcome.exception()
                if isinstance(error, _Transient):
                    return state.attempt_number >= error.max_attempts
            return False

        retrying = AsyncRetrying(
            stop=should_stop,
            wait=self._wait,
            retry=retry_if_exception_type(_Transient) | retry_if_result(self._retryable),
            retry_error_callback=_last_outcome,
        )
        return await retrying(self._attempt, method, url, headers, limit, polite)

    def _retryable(self, raw: _Raw) -> bool:
        if raw.status not in RETRY_STATUSES:
            return False
        if "x-squid-error" in raw.headers:
            return False  # the proxy's definitive answer (DNS failure, refused, ...)
        if "memento-datetime" in raw.headers:
            return False  # an archived 429/503 page (RFC 7089 memento): content, not throttling
        wait = retry_after_seconds(raw.headers.get("retry-after"))
        return wait is None or wait <= self.max_retry_after  # longer: give the answer back

    def _wait(self, state: RetryCallState) -> float:
        outcome = state.outcome
        if outcome is not None and not outcome.failed:
            raw = outcome.result()
            wait = retry_after_seconds(raw.headers.get("retry-after"))
            if wait is not None:
                return min(wait, self.max_retry_after)
        step = self.backoff * (2 ** (state.attempt_number - 1))
        return min(self.max_backoff, step) * (0.5 + random.random() / 2)

    async def _attempt(self, method: str, url: str, headers: dict[str, str] | None, limit: int,
                       polite: bool, body: bytes | None = None) -> _Raw:
        assert self._client is not None and self._limiter is not None
        host = (urlsplit(url).hostname or "").lower()
        async with self._limiter.slot(host, polite=polite):
            self.requests += 1
            self.per_host[host] += 1
            try:
                async with asyncio.timeout(self.settings.total_timeout):
                    return await self._exchange(method, url, headers, limit, body)
            except (httpx.TransportError, TimeoutError) as exc:
                kind = failure_kind(exc)
                if kind == "proxy" and isinstance(exc, httpx.ProxyError) \
                        and _EXPLAIN_PROXY_REFUSAL.get():
                    answer = await self._proxy_answer(url, exc)
                    if answer is not None:
                        return answer
                error = FetchFailed(f"{kind}: {str(exc) or type(exc).__name__}", url=url, kind=kind)
                raise self._classify_fault(exc, kind, error) from exc

    def _classify_fault(self, exc: BaseException, kind: str,
                        error: FetchFailed) -> BaseException:
        if kind in ("dns", "tls"):
            return error  # definitive: retrying will not change it
        if isinstance(exc, httpx.ConnectTimeout):
            return _Transient(error, max_attempts=99)
        if kind in ("timeout", "refused") or isinstance(exc, httpx.RemoteProtocolError):
            return _Transient(error, max_attempts=2)  # one more try at most
        if isinstance(exc, httpx.ConnectError | httpx.ReadError | httpx.WriteError):
            return _Transient(error, max_attempts=2)
        return error

    async def _exchange(self, method: str, url: str, headers: dict[str, str] | None,
                        limit: int, body: bytes | None = None) -> _Raw:
        assert self._client is not None
        request = self._client.build_request(method, url, headers=headers, content=body)
        response = await self._client.send(request, stream=True)
        headers = response.headers
        if _LOCATION_ASIDE in response.extensions:
            headers = headers.copy()
            headers["location"] = response.extensions[_LOCATION_ASIDE]
        try:
            if response.status_code in REDIRECT_STATUSES or method == "HEAD":
                return _Raw(url, response.status_code, headers, b"")
            declared = response.headers.get("content-length", "")
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if declared.isdigit() and int(declared) > limit and encoding in ("", "identity"):
                raise BodyTooLarge(f"body of {declared} bytes is larger than {limit}", url=url)
            content = await self._read_body(response, encoding, limit, url)
            return _Raw(url, response.status_code, headers, content)
        finally:
            await response.aclose()

    async def _read_body(self, response: httpx.Response, encoding: str, limit: int,
                         url: str) -> bytes:
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise UnsupportedContent(f"unsupported content-encoding {encoding!r}", url=url)
        decoder = _BoundedDecoder("" if encoding == "identity" else encoding, limit, url)
        body = bytearray()
        async for chunk in response.aiter_raw(CHUNK):
            body += decoder.feed(chunk)
        return bytes(body)

    async def _proxy_answer(self, url: str, exc: httpx.ProxyError) -> _Raw | None:
        """The proxy refused a CONNECT (https target): ask it again by hand to read its
        headers (httpx keeps only the status), so Squid's X-Squid-Error reaches check_link."""
        proxy = self.settings.proxy or ""
        parts = urlsplit(url)
        match = re.match(r"\s*(\d{3})", str(exc))
        if not proxy.startswith("http://") or not parts.hostname:
            return None
        target = f"{parts.hostname}:{parts.port or 443}"
        if ":" in parts.hostname:
            target = f"[{parts.hostname}]:{parts.port or 443}"
        self.requests += 1  # the probe is one more request to the proxy
        self.per_host[parts.hostname.lower()] += 1
        try:
            answer = await connect_probe(proxy, target, self.settings.user_agent,
                                          self.settings.connect_timeout)
        except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError):  # the proxy closed early or sent garbage
            answer = None
        if answer is None:
            if not match:
                return None
            return _Raw(url, int(match.group(1)), httpx.Headers(), b"")
        status, headers = answer
        return _Raw(url, status, headers, b"")


_LOCATION_ASIDE = "pagetrail.location"


async def _set_location_aside(response: httpx.Response) -> None:
    """Hide Location from httpx: it builds a redirect request even when not following, and
    fails on a malformed Location. Redirects are ours to follow (and to judge)."""
    location = response.headers.get("location")
    if location is not None:
        response.extensions[_LOCATION_ASIDE] = location
        del response.headers["location"]


def _last_outcome(state: RetryCallState) -> Any:
    """After the last try: return the last response, or raise the last real error."""
    outcome = state.outcome
    assert outcome is not None
    if outcome.failed:
        error = outcome.exception()
        if isinstance(error, _Transient):
            raise error.error from error.error.__cause__
        raise error  # type: ignore[misc]
    return outcome.result()


def without_fragment(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def next_hop(requested: str, current: str, status: int, location: str, chain: list[Hop],
             visits: Counter[str], max_redirects: int) -> str | None:
    """Where a redirect of `current` leads, recorded in `chain` (both HTTP clients follow
    redirects with this). None when the Location cannot be followed (javascript:, ftp:,
    garbage: the 3xx is the answer). Raises RedirectLoop on a second revisit (one is allowed:
    a cookie-setting bounce) and TooManyRedirects past `max_redirects`."""
    try:
        target = validate_url(without_fragment(urljoin(current, location.strip())))
    except (InvalidURL, ValueError):  # ValueError: urljoin of a malformed IPv6 host
        return None
    chain.append(Hop(url=current, status=status, location=target))
    visits[current] += 1
    if visits[target] >= 2 or (visits[target] == 1 and target == current):
        raise RedirectLoop(f"redirect loop at {target}", url=requested)
    if len(chain) > max_redirects:
        raise TooManyRedirects(f"more than {max_redirects} redirects", url=requested)
    return target


