"""A lean HTTP/1.1 client for bulk link checks, with the fetch layer's guarantees.

`Fetcher` (httpx) costs several milliseconds of CPU per request — most of it in httpcore's
connection-pool bookkeeping — which caps a scan of thousands of links at a few hundred
requests a second. A scan only needs plain GETs, so `BulkFetcher` speaks HTTP/1.1 over
asyncio streams with a keep-alive pool per origin, its answers parsed by httptools (llhttp,
Node's parser: ~7 µs an answer, against ~250 µs for h11), and keeps what the fetch layer
promises (docs/INTERFACES.md, "Fetch layer"):

- the SSRF guard (`AddressGuard`) on the URL and on every redirect hop; connections go to
  the very addresses the guard checked (DNS pinning), never to a fresh lookup. A host's
  checked addresses are kept for the client's life (one scan), so a scan of 10,000 links
  on one host resolves it once;
- redirects followed here, one by one, every hop recorded, loops and too many hops refused;
- bounded work: connect/read/total timeouts, response heads capped, bodies bounded by
  `max_bytes` after decoding (gzip/deflate through the fetch layer's bounded decoder, so a
  decompression bomb stops at the bound);
- the per-host concurrency and rate of `tools.net.politeness`, shared with the `Fetcher`;
- strict framing: an answer llhttp rejects (two Content-Length headers, a chunk size that is
  not plain hex such as `0x10`, `1_0` or `+a`, Content-Length together with
  Transfer-Encoding, a bare-LF or folded head, ...) or a Transfer-Encoding other than plain
  `chunked` is refused as `FetchFailed(kind="protocol")`, and its connection is closed, never
  pooled: a reply whose end is in doubt would garble the next one on the same connection.

What it does not do, it hands to the `Fetcher` it wraps, which then answers for the whole
URL: proxied hosts, URLs with credentials or non-ASCII hosts, and every fault worth a retry
(timeouts, resets, refused connections, cut-off answers, 429/502/503/504). Those are rare
in a scan and the `Fetcher` has the retry discipline (backoff, Retry-After) for them.

With `html_only=True`, a GET whose answer is not HTML skips the body (a check needs only its
status and type): a large PDF costs a few header bytes instead of `max_bytes`.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, urlsplit

import httptools
import httpx

from pagetrail.tools.errors import (
    BodyTooLarge,
    FetchFailed,
    PagetrailError,
    RefusedAddress,
    UnsupportedContent,
)
from pagetrail.tools.models import Hop
from pagetrail.tools.net.fetch import (
    REDIRECT_STATUSES,
    RETRY_STATUSES,
    Fetcher,
    Response,
    _BoundedDecoder,
    build_ssl_context,
    detect_charset,
    next_hop,
    retry_after_seconds,
    sniff_content_type,
)
from pagetrail.tools.net.politeness import HostLimiter, shared_limiter
from pagetrail.tools.net.urls import validate_url

HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_HEAD_BYTES = 64 * 1024  # status line + headers; larger is not a web server's answer
MAX_HEADERS = 200
DRAIN_BYTES = 64 * 1024  # an unwanted body this small is read to keep the connection
CHUNK = 64 * 1024
READ_SLACK = 0.25  # seconds a read may run past read_timeout (see _ReadDeadline)
NO_BODY_STATUSES = frozenset({204, 304})
ENCODINGS = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})
# Characters left as they are in a request target (the rest, e.g. spaces and non-ASCII,
# are percent-encoded the way httpx does); '%' keeps existing escapes intact.
TARGET_SAFE = "!#$%&'()*+,/:;=?@[]~-._"
# A path or query made only of characters quote() keeps (its letters, digits and "_.-~",
# and TARGET_SAFE) is its own quoted form.
_TARGET_AS_IS = re.compile(r"[A-Za-z0-9_.~!#$%&'()*+,/:;=?@\[\]-]*")


class _Delegate(Exception):
    """This URL is the full Fetcher's job (a fault worth a retry, a proxy, ...).

    `retry`: whether the Fetcher may retry in turn. After a network fault it may not: the
    lean attempt was the first of the two the Fetcher would have made.
    """

    def __init__(self, *, retry: bool = True) -> None:
        super().__init__()
        self.retry = retry


class _Stale(Exception):
    """A pooled connection was closed by the server before answering: use a fresh one."""


@dataclass
class _Head:
    version: str
    status: int
    headers: list[tuple[str, str]]

    def get(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


class _Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.used = False  # has answered a request before (a closed one is then "stale")

    @property
    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


# --- response parsing ------------------------------------------------------------------

class _Reply:
    """httptools callbacks for one answer: its head, then its raw body pieces.

    1xx answers before it (100 Continue, ...) are read past: the parser goes on to the next
    message, which starts the head afresh."""

    __slots__ = ("body", "complete", "head", "head_bytes", "headers", "keep_alive", "parser")

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.headers: list[tuple[str, str]] = []
        self.head: _Head | None = None  # set when the (final) head is complete
        self.head_bytes = 0  # bytes fed before the head was complete
        self.keep_alive = False
        self.body: list[bytes] = []  # raw pieces not yet taken by the reader
        self.complete = False

    def on_message_begin(self) -> None:
        self.headers = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.decode("latin-1").lower(), value.decode("latin-1").strip()))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:
            return  # informational: the real answer follows
        # Asked here: after the message llhttp has already reset its flags.
        self.keep_alive = self.parser.should_keep_alive()
        self.head = _Head("HTTP/" + self.parser.get_http_version(), status, self.headers)

    def on_body(self, piece: bytes) -> None:
        self.body.append(piece)

    def on_message_complete(self) -> None:
        if self.head is not None:
            self.complete = True

    def feed(self, data: bytes, url: str) -> None:
        """Parse `data`; an answer that breaks HTTP/1.1 is a named refusal."""
        if self.head is None:
            self.head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            raise _protocol_error(f"malformed answer: {exc or type(exc).__name__}", url) from exc
        if self.head is None and self.head_bytes > MAX_HEAD_BYTES:
            raise _protocol_error(f"answer head larger than {MAX_HEAD_BYTES} bytes", url)

    def take_body(self) -> list[bytes]:
        pieces, self.body = self.body, []
        return pieces


def check_framing(head: _Head, url: str) -> None:
    """What llhttp lets through but a client must not guess at: a transfer coding other than
    plain `chunked` (llhttp would hand us the still-coded body), or too many header lines."""
    if len(head.headers) > MAX_HEADERS:
        raise _protocol_error("too many header lines", url)
    codings = [value for key, value in head.headers if key == "transfer-encoding"]
    if codings and ",".join(codings).strip().lower() != "chunked":
        raise _protocol_error(f"unsupported Transfer-Encoding {', '.join(codings)[:80]!r}", url)


def _protocol_error(message: str, url: str) -> FetchFailed:
    return FetchFailed(f"protocol: {message}", url=url, kind="protocol")


@dataclass(frozen=True)
class _Endpoint:
    """What a request needs from a URL's scheme and netloc (the same for all its URLs)."""

    host: str  # lower-case, no brackets
    port: int
    host_header: str
    needs_full_client: bool  # credentials or a non-ASCII host: the Fetcher's job


@lru_cache(maxsize=4096)
def _endpoint(scheme: str, netloc: str) -> _Endpoint:
    # urlsplit's hostname/port/username re-parse the netloc on every access; a scan asks for
    # them several times per request, on a handful of netlocs.
    parts = urlsplit(f"{scheme}://{netloc}/")
    host = parts.hostname or ""
    shown = f"[{host}]" if ":" in host else host
    default = 443 if scheme == "https" else 80
    if parts.port and parts.port != default:
        shown = f"{shown}:{parts.port}"
    return _Endpoint(host=host.lower(), port=parts.port or default, host_header=shown,
                     needs_full_client=bool(parts.username or parts.password)
                     or not host.isascii())


def _quoted(part: str) -> str:
    """quote(part, safe=TARGET_SAFE), without its work when nothing needs quoting."""
    return part if _TARGET_AS_IS.fullmatch(part) else quote(part, safe=TARGET_SAFE)


def request_target(url: str) -> tuple[str, str]:
    """(Host header, request target) for an absolute http(s) URL."""
    parts = urlsplit(url)
    target = _quoted(parts.path or "/")
    if parts.query:
        target += "?" + _quoted(parts.query)
    return _endpoint(parts.scheme, parts.netloc).host_header, target


def needs_full_client(url: str) -> bool:
    """URLs the lean path leaves to Fetcher: credentials or a non-ASCII host."""
    parts = urlsplit(url)
    return _endpoint(parts.scheme, parts.netloc).needs_full_client


class _ReadDeadline:
    """The timeouts of one exchange on one timer: the total timeout over everything, and
    for each read from the socket (of the head or of the body) the read timeout, up to
    READ_SLACK longer, never past the total: a body that trickles in stays bounded by the
    total timeout.

    What a read timeout nested in the total one does, with fewer timers: the timer moves
    only when a read starts more than READ_SLACK after the one it was set for, so a
    keep-alive request's head and body share one. (Three timers a request were a quarter of
    the lean client's CPU.)"""

    def __init__(self, timer: asyncio.Timeout, read_seconds: float, total_seconds: float
                 ) -> None:
        self.timer = timer
        self.read_seconds = read_seconds
        self.total_end = asyncio.get_running_loop().time() + total_seconds

    def start_connect(self) -> None:
        """Connecting is bounded by the total timeout (and the connect timeout)."""
        self.timer.reschedule(self.total_end)

    def start_read(self) -> None:
        earliest = min(asyncio.get_running_loop().time() + self.read_seconds, self.total_end)
        latest = min(earliest + READ_SLACK, self.total_end)
        when = self.timer.when()
        if when is None or not earliest <= when <= latest:
            self.timer.reschedule(latest)


# --- the client -------------------------------------------------------------------------

class BulkFetcher:
    """Lean GET/HEAD with Fetcher's guarantees; wraps an open `Fetcher` for the rare cases.

    Use inside the Fetcher's context: `async with Fetcher(s) as f: bulk = BulkFetcher(f)`,
    and `await bulk.aclose()` when done.
    """

    def __init__(self, fetcher: Fetcher, *, html_only: bool = False,
                 limiter: HostLimiter | None = None) -> None:
        self.fetcher = fetcher
        self.html_only = html_only  # default for get(): skip the bodies of non-HTML answers
        self.settings = fetcher.settings
        self.guard = fetcher.guard
        self.requests = 0  # requests sent by the lean path (the Fetcher counts its own)
        self.delegated = 0  # URLs handed to the Fetcher
        self.per_host: Counter[str] = Counter()
        self._limiter = limiter
        self._ssl: ssl.SSLContext | None = None
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._addresses: dict[tuple[str, int], list[str] | PagetrailError] = {}
        s = self.settings
        self._agent_lines = (f"User-Agent: {s.user_agent}\r\nAccept-Encoding: gzip, deflate\r\n"
                             "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,"
                             "*/*;q=0.8\r\n")

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    # -- public API (the subset of Fetcher a scan uses) --
    async def get(self, url: str, *, polite: bool = False, max_bytes: int | None = None,
                  html_only: bool | None = None) -> Response:
        return await self.fetch("GET", url, polite=polite, max_bytes=max_bytes,
                                html_only=self.html_only if html_only is None else html_only)

    async def head(self, url: str, *, polite: bool = False) -> Response:
        return await self.fetch("HEAD", url, polite=polite)

    async def fetch(self, method: str, url: str, *, polite: bool = False,
                    max_bytes: int | None = None, html_only: bool = False) -> Response:
        """Like Fetcher.get/head (redirects followed, errors as PagetrailError)."""
        requested = validate_url(url)
        limit = max_bytes if max_bytes is not None else self.settings.max_bytes
        try:
            return await self._follow(method, requested, limit, polite, html_only)
        except _Delegate as handed:
            self.delegated += 1
            if method == "HEAD":
                return await self.fetcher.head(requested, polite=polite, max_bytes=max_bytes,
                                               retry=handed.retry)
            return await self.fetcher.get(requested, polite=polite, max_bytes=max_bytes,
                                          retry=handed.retry)

    # -- redirects (as Fetcher._fetch) --
    async def _follow(self, method: str, requested: str, limit: int, polite: bool,
                      html_only: bool) -> Response:
        started = time.monotonic()
        chain: list[Hop] = []
        visits: Counter[str] = Counter()
        current = requested
        while True:
            if needs_full_client(current):
                raise _Delegate
            status, head, content = await self._send(method, current, limit, polite, html_only)
            if status in RETRY_STATUSES and await self._worth_retrying(head):
                raise _Delegate
            location = head.get("location")
            if not (status in REDIRECT_STATUSES and location):
                return _response(requested, current, status, head, content, chain, started)
            target = next_hop(requested, current, status, location, chain, visits,
                              self.settings.max_redirects)
            if target is None:
                return _response(requested, current, status, head, content, chain, started)
            current = target

    async def _worth_retrying(self, head: _Head) -> bool:
        """A 429/5xx answer: wait as the Fetcher would before its retry, then let it retry.
        A proxy's own error, or a Retry-After longer than the Fetcher accepts, is the answer."""
        if self.settings.retries <= 0 or head.get("x-squid-error") is not None:
            return False
        wait = retry_after_seconds(head.get("retry-after"))
        if wait is not None and wait > self.fetcher.max_retry_after:
            return False
        await asyncio.sleep(wait if wait is not None else self.fetcher.backoff)
        return True

    # -- one exchange --
    async def _send(self, method: str, url: str, limit: int, polite: bool,
                    html_only: bool) -> tuple[int, _Head, bytes]:
        parts = urlsplit(url)
        endpoint = _endpoint(parts.scheme, parts.netloc)
        host, port = endpoint.host, endpoint.port
        if self.guard.uses_proxy(host, port):
            raise _Delegate
        addresses = await self._checked_addresses(host, port, url)
        if self._limiter is None:
            self._limiter = shared_limiter(self.settings)
        async with self._limiter.slot(host, polite=polite):
            for _ in range(2):  # a second go only when a pooled connection had gone stale
                self.requests += 1
                self.per_host[host] += 1
                try:
                    # No timer until the first wait: _ReadDeadline sets it (a pooled
                    # connection's request then needs only one).
                    async with asyncio.timeout(None) as timer:
                        deadline = _ReadDeadline(timer, self.settings.read_timeout,
                                                 self.settings.total_timeout)
                        return await self._exchange(method, url, parts.scheme, host, port,
                                                    addresses, limit, html_only, deadline)
                except _Stale:
                    continue
                except ssl.SSLError as exc:
                    raise FetchFailed(f"tls: {exc}", url=url, kind="tls") from exc
                except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError,
                        asyncio.LimitOverrunError) as exc:
                    raise _Delegate(retry=False) from exc  # the Fetcher makes the second try
            raise _Delegate(retry=False)

    async def _exchange(self, method: str, url: str, scheme: str, host: str, port: int,
                        addresses: list[str], limit: int, html_only: bool,
                        deadline: _ReadDeadline) -> tuple[int, _Head, bytes]:
        origin = (scheme, host, port)
        connection = self._pooled(origin)
        if connection is None:
            deadline.start_connect()
            connection = await self._connect(scheme, host, port, addresses)
        reused = connection.used
        keep = False
        try:
            host_header, target = request_target(url)
            connection.writer.write(f"{method} {target} HTTP/1.1\r\nHost: {host_header}\r\n"
                                    f"{self._agent_lines}\r\n".encode("latin-1", "replace"))
            reply = _Reply()
            head = await self._read_head(connection, reply, url, reused, deadline)
            content, keep = await self._read_body(connection, reply, method, head, url, limit,
                                                  html_only, deadline)
            connection.used = True
            return head.status, head, content
        finally:
            if keep and connection.usable:
                self._release(origin, connection)
            else:
                connection.close()

    async def _read_head(self, connection: _Connection, reply: _Reply, url: str,
                         reused: bool, deadline: _ReadDeadline) -> _Head:
        while reply.head is None:
            try:
                data = await self._read(connection, deadline)
            except ConnectionResetError as exc:
                if reused and not reply.head_bytes:
                    raise _Stale from exc
                raise
            if not data:
                if reused and not reply.head_bytes:
                    raise _Stale
                raise asyncio.IncompleteReadError(b"", None)  # cut off: the Fetcher's job
            reply.feed(data, url)
        check_framing(reply.head, url)
        return reply.head

    async def _read_body(self, connection: _Connection, reply: _Reply, method: str,
                         head: _Head, url: str, limit: int, html_only: bool,
                         deadline: _ReadDeadline) -> tuple[bytes, bool]:
        """(decoded body, whether the connection can be reused)."""
        if method == "HEAD":
            # llhttp cannot be told the request was HEAD (it would wait for the declared
            # body): the head is the whole answer, and anything after it a fault.
            reusable = head.version == "HTTP/1.1" and not reply.body and "close" not in (
                head.get("connection") or "").lower()
            return b"", reusable
        reusable = reply.keep_alive  # HTTP/1.1 without "close", and a framed body
        if head.status in NO_BODY_STATUSES:
            return b"", reusable and reply.complete
        declared = head.get("content-length")  # one, plain decimal: llhttp checked it
        length = int(declared) if declared is not None else None
        framed = length is not None or head.get("transfer-encoding") is not None
        wanted = head.status not in REDIRECT_STATUSES and not (
            html_only and _skippable(head.get("content-type")))
        if not wanted:
            # A redirect's or a non-HTML page's body: not read, unless small enough that
            # reading it is cheaper than a new connection.
            if reusable and length is not None and length <= DRAIN_BYTES:
                await self._read_rest(connection, reply, _BoundedDecoder("", length, url),
                                      url, framed, deadline)
                return b"", True
            return b"", False
        encoding = (head.get("content-encoding") or "identity").strip().lower()
        if encoding not in ENCODINGS:
            raise UnsupportedContent(f"unsupported content-encoding {encoding!r}", url=url)
        if length is not None and length > limit and encoding in ("", "identity"):
            raise BodyTooLarge(f"body of {length} bytes is larger than {limit}", url=url)
        decoder = _BoundedDecoder("" if encoding == "identity" else encoding, limit, url)
        return await self._read_rest(connection, reply, decoder, url, framed,
                                     deadline), reusable

    async def _read_rest(self, connection: _Connection, reply: _Reply,
                         decoder: _BoundedDecoder, url: str, framed: bool,
                         deadline: _ReadDeadline) -> bytes:
        """The body, a piece at a time through the bounded decoder (nothing unbounded is
        buffered). A body without Content-Length or chunking runs to the close."""
        body = bytearray()
        while True:
            for piece in reply.take_body():
                body += decoder.feed(piece)
            if reply.complete:
                return bytes(body)
            data = await self._read(connection, deadline)
            if not data:
                if framed:  # cut short
                    raise asyncio.IncompleteReadError(bytes(body), None)
                return bytes(body)
            reply.feed(data, url)

    @staticmethod
    async def _read(connection: _Connection, deadline: _ReadDeadline) -> bytes:
        deadline.start_read()  # each read within the read timeout (and the total one)
        return await connection.reader.read(CHUNK)

    # -- connections --
    def _pooled(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.usable:
                return connection
            connection.close()
        return None

    def _release(self, origin: tuple[str, str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(origin, [])
        if len(idle) >= max(1, self.settings.concurrency):
            connection.close()
        else:
            idle.append(connection)

    async def _connect(self, scheme: str, host: str, port: int,
                       addresses: list[str]) -> _Connection:
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = build_ssl_context(self.settings.ca_bundle)
            context = self._ssl
        last: OSError | None = None
        # Allowed hosts come back without addresses: connect by name, as the Fetcher does.
        for address in addresses or [host]:
            try:
                async with asyncio.timeout(self.settings.connect_timeout):
                    reader, writer = await asyncio.open_connection(
                        address, port, ssl=context, limit=MAX_HEAD_BYTES,
                        server_hostname=host if context is not None else None)
                return _Connection(reader, writer)
            except ssl.SSLError:
                raise
            except OSError as exc:  # next address, as a resolver would
                last = exc
        assert last is not None
        raise last

    async def _checked_addresses(self, host: str, port: int, url: str) -> list[str]:
        """The guard's verdict for host:port, asked once per client (one scan). No endpoint
        exemption: a scan fetches pages and their links, never pagetrail's own endpoints
        (archives, search), which `Fetcher.get(endpoint=True)` alone may reach."""
        key = (host, port)
        known = self._addresses.get(key)
        if known is None:
            try:
                known = await self.guard.check_host(host, port, url=url)
            except RefusedAddress as exc:
                known = exc
            except FetchFailed as exc:
                if exc.kind != "dns":
                    raise  # a timed-out lookup may succeed next time
                known = exc
            self._addresses[key] = known
        if isinstance(known, PagetrailError):
            if isinstance(known, FetchFailed):
                raise FetchFailed(str(known), url=url, kind=known.kind)
            raise RefusedAddress(str(known), url=url)
        return known


def _skippable(content_type: str | None) -> bool:
    """A declared type that is not HTML: a check does not need the body."""
    mime = (content_type or "").split(";")[0].strip().lower()
    return bool(mime) and mime not in HTML_TYPES


def _response(requested: str, final_url: str, status: int, head: _Head, content: bytes,
              chain: list[Hop], started: float) -> Response:
    header = head.get("content-type")
    mime = sniff_content_type(header, content)
    return Response(url=requested, final_url=final_url, status=status,
                    headers=httpx.Headers(head.headers), content=content, chain=chain,
                    content_type=mime, charset=detect_charset(header, content, mime),
                    elapsed=time.monotonic() - started)

