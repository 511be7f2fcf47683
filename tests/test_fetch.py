"""Fetch layer against real HTTP servers on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
import tracemalloc
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from loopback import GetHeadHandler, Loopback

from pagetrail.tools.errors import (
    BodyTooLarge,
    ConfigError,
    DecompressionBomb,
    FetchFailed,
    InvalidURL,
    RedirectLoop,
    TooManyRedirects,
)
from pagetrail.tools.net.fetch import (
    Fetcher,
    build_ssl_context,
    detect_charset,
    retry_after_seconds,
    sniff_content_type,
)
from pagetrail.tools.net.politeness import LocalHostLimiter
from pagetrail.tools.settings import Settings

Body = bytes | Iterable[bytes]
Route = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], Body]]


def html(body: str, status: int = 200, **headers: str) -> Route:
    data = body.encode("utf-8")
    return lambda _req: (status, {"Content-Type": "text/html; charset=utf-8", **headers}, data)


def redirect(location: str, status: int = 301) -> Route:
    return lambda _req: (status, {"Location": location}, b"")


class LocalServer(Loopback):
    """A threaded HTTP/1.1 server with a route table; counts requests per path."""

    def __init__(self, routes: dict[str, Route], fallback: Route | None = None) -> None:
        self.routes = routes
        self.fallback = fallback or html("<title>Not Found</title>nothing here", 404)
        self.hits: Counter[str] = Counter()
        self.methods: list[tuple[str, str]] = []
        self.headers_seen: list[dict[str, str]] = []
        server = self

        class Handler(GetHeadHandler):
            def answer(self, with_body: bool) -> None:
                path = self.path if self.path.startswith("/") else urlsplit(self.path).path
                server.hits[path] += 1
                server.methods.append((self.command, path))
                server.headers_seen.append(dict(self.headers))
                route = server.routes.get(path) or server.routes.get(
                    urlsplit(path).path) or server.fallback
                status, headers, body = route(self)
                self.send_response(status)
                chunks: Iterable[bytes]
                if isinstance(body, bytes):
                    headers.setdefault("Content-Length", str(len(body)))
                    chunks = [body]
                else:
                    chunks = body
                    headers.setdefault("Connection", "close")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if not with_body:
                    return
                try:
                    for chunk in chunks:
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                if "Content-Length" not in headers:
                    self.close_connection = True

        super().__init__(Handler)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def serve(routes: dict[str, Route], fallback: Route | None = None) -> Iterator[LocalServer]:
    with LocalServer(routes, fallback) as server:
        yield server


def loopback_settings(**extra: object) -> Settings:
    """Settings that let the fetcher reach 127.0.0.1 (tests only), with short timeouts."""
    values: dict[str, object] = {"allow_hosts": ["127.0.0.1"], "connect_timeout": 2.0,
                                 "read_timeout": 3.0, "total_timeout": 6.0, "retries": 2}
    values.update(extra)
    return Settings(**values)  # type: ignore[arg-type]


def quick_fetcher(settings: Settings | None = None, **kwargs: float) -> Fetcher:
    return Fetcher(settings or loopback_settings(), backoff=0.05, max_backoff=0.2,
                   max_retry_after=kwargs.get("max_retry_after", 3.0))


# --- basic fetching, redirects ----------------------------------------------------------------

async def test_get_returns_body_headers_and_counts_requests() -> None:
    with serve({"/page": html("<html><title>Hi</title>héllo</html>")}) as srv:
        async with quick_fetcher() as f:
            r = await f.get(srv.base + "/page")
            missing = await f.get(srv.base + "/nope")
    assert r.status == 200 and r.is_html and r.charset == "utf-8"
    assert "héllo" in r.text()
    assert r.final_url == srv.base + "/page" and r.chain == []
    assert missing.status == 404  # statuses are returned, not raised
    assert f.requests == 2 and f.per_host["127.0.0.1"] == 2
    assert srv.headers_seen[0]["User-Agent"].startswith("pagetrail/")


async def test_redirect_chain_is_recorded_hop_by_hop() -> None:
    routes = {"/a": redirect("/b", 301), "/b": redirect("/c", 302), "/c": html("end")}
    with serve(routes) as srv:
        async with quick_fetcher() as f:
            r = await f.get(srv.base + "/a")
            unfollowed = await f.get(srv.base + "/a", follow_redirects=False)
    assert r.status == 200 and r.final_url == srv.base + "/c"
    assert [(h.status, h.url, h.location) for h in r.chain] == [
        (301, srv.base + "/a", srv.base + "/b"), (302, srv.base + "/b", srv.base + "/c")]
    assert unfollowed.status == 301 and unfollowed.chain == []
    assert f.requests == 4  # three hops + one unfollowed


async def test_redirect_loop_and_too_many_redirects() -> None:
    routes: dict[str, Route] = {"/x": redirect("/y"), "/y": redirect("/x")}
    routes.update({f"/r{i}": redirect(f"/r{i + 1}") for i in range(20)})
    with serve(routes) as srv:
        async with quick_fetcher(loopback_settings(max_redirects=5)) as f:
            with pytest.raises(RedirectLoop):
                await asyncio.wait_for(f.get(srv.base + "/x"), 10)
            with pytest.raises(TooManyRedirects) as info:
                await f.get(srv.base + "/r0")
    assert not isinstance(info.value, RedirectLoop)
    assert srv.hits["/r6"] == 0  # stopped after max_redirects hops


async def test_caller_headers_stay_on_the_requested_origin() -> None:
    """API keys (Brave's X-Subscription-Token, ...) must not follow a cross-origin redirect."""
    secret = {"X-Subscription-Token": "BRAVE-SECRET-123"}
    with serve({"/landing": html("elsewhere")}) as other:
        routes = {"/same": redirect("/landing"), "/landing": html("home"),
                  "/cross": redirect(other.base + "/landing", 302),
                  "/round-trip": redirect(other.base + "/back", 302)}
        with serve(routes) as api:
            other.routes["/back"] = redirect(api.base + "/landing")  # and home again
            async with quick_fetcher() as f:
                same = await f.get(api.base + "/same", headers=secret)
                cross = await f.get(api.base + "/cross", headers=secret)
                back = await f.get(api.base + "/round-trip", headers=secret)
    assert same.text() == "home" and cross.text() == "elsewhere" and back.text() == "home"
    token = [h.get("X-Subscription-Token") for h in api.headers_seen]
    # /same, /landing (same origin: kept); /cross; /round-trip; /landing after the detour
    assert token == ["BRAVE-SECRET-123"] * 4 + [None]
    assert all("X-Subscription-Token" not in h for h in other.headers_seen)
    assert all(h["User-Agent"].startswith("pagetrail/") for h in other.headers_seen)


@pytest.mark.parametrize("location", ["javascript:alert(1)", "http://[::1", "ftp://x.example/"])
async def test_unfollowable_redirect_is_the_answer(location: str) -> None:
    with serve({"/js": redirect(location, 302)}) as srv:
        async with quick_fetcher() as f:
            r = await f.get(srv.base + "/js")
    assert r.status == 302 and r.final_url == srv.base + "/js" and r.chain == []


@pytest.mark.parametrize("bad", ["not a url", "javascript:alert(1)", "file:///etc/passwd",
                                 "http://", "ftp://example.com/x", "http://exa mple.com/",
                                 # C0/C1 controls anywhere (\x0b/\x0c reached the host)
                                 "http://x\x0b.com/", "http://x\x0c.com/", "http://x\x1f.com/",
                                 "http://x\x85.example/", "http://example.com/a\x7fb",
                                 "http://example.com/?q=\x9f", "http://example.com/#\x01"])
async def test_malformed_or_unsupported_urls_are_invalid(bad: str) -> None:
    async with quick_fetcher() as f:
        with pytest.raises(InvalidURL):
            await f.get(bad)
    assert f.requests == 0


# --- limits -------------------------------------------------------------------------------------

def _endless(total: int, chunk: int = 64 * 1024) -> Iterator[bytes]:
    block = b"a" * chunk
    for _ in range(total // chunk):
        yield block


async def test_fifty_megabyte_body_stops_at_the_limit_with_low_memory() -> None:
    # No Content-Length: the limit must be enforced while streaming.
    big: Route = lambda _r: (200, {"Content-Type": "text/plain"}, _endless(50 * 2**20))  # noqa: E731
    with serve({"/big": big}) as srv:
        async with quick_fetcher(loopback_settings(max_bytes=2 * 2**20)) as f:
            peak = await peak_memory_while_refused(f.get(srv.base + "/big"), BodyTooLarge)
    assert peak < 12 * 2**20, f"peak memory {peak / 2**20:.1f} MB"


async def test_declared_content_length_over_limit_is_refused_before_reading() -> None:
    data = b"x" * (3 * 2**20)
    with serve({"/big": lambda _r: (200, {"Content-Type": "text/plain"}, data)}) as srv:
        async with quick_fetcher(loopback_settings(max_bytes=2**20)) as f:
            with pytest.raises(BodyTooLarge, match="larger than"):
                await f.get(srv.base + "/big")
            small = await f.get(srv.base + "/big", max_bytes=4 * 2**20)
    assert len(small.content) == len(data)


async def peak_memory_while_refused(fetch: Awaitable[object],
                                    error: type[Exception]) -> int:
    """The peak of traced memory (bytes) while `fetch` runs and raises `error`."""
    tracemalloc.start()
    try:
        with pytest.raises(error):
            await fetch
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _gzip_bomb(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * 2**20
    out = [compressor.compress(block) for _ in range(size // 2**20)]
    out.append(compressor.flush())
    return b"".join(out)


async def test_gzip_bomb_is_stopped_at_the_decompressed_limit() -> None:
    bomb = _gzip_bomb(200 * 2**20)
    assert len(bomb) < 400_000
    headers = {"Content-Type": "text/html", "Content-Encoding": "gzip"}
    page = gzip.compress(b"<html><title>ok</title>" + b"word " * 2000 + b"</html>")
    with serve({"/bomb": lambda _r: (200, dict(headers), bomb),
                "/fine": lambda _r: (200, dict(headers), page)}) as srv:
        async with quick_fetcher(loopback_settings(max_bytes=5 * 2**20)) as f:
            peak = await peak_memory_while_refused(f.get(srv.base + "/bomb"), DecompressionBomb)
            fine = await f.get(srv.base + "/fine")
    assert peak < 25 * 2**20
    assert fine.text().startswith("<html><title>ok</title>word")


async def test_binary_and_invalid_utf8_content_are_sane() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10
    bad_utf8 = b"<html><title>caf\xe9</title>\xff\xfe broken \xc3\x28</html>"
    routes = {
        "/img": lambda _r: (200, {"Content-Type": "image/png"}, png),
        "/bad": lambda _r: (200, {"Content-Type": "text/html; charset=utf-8"}, bad_utf8),
        "/latin": lambda _r: (200, {"Content-Type": "text/html"},
                              b'<meta charset="iso-8859-1"><p>caf\xe9</p>'),
        "/bogus": lambda _r: (200, {"Content-Type": "text/html; charset=no-such-codec"},
                              "<p>naïve</p>".encode()),
    }
    with serve(routes) as srv:
        async with quick_fetcher() as f:
            img = await f.get(srv.base + "/img")
            bad = await f.get(srv.base + "/bad")
            latin = await f.get(srv.base + "/latin")
            bogus = await f.get(srv.base + "/bogus")
    assert img.content == png and img.charset is None and not img.is_html
    assert "\ufffd" in bad.text() and "broken" in bad.text()
    assert latin.charset == "iso8859-1" and "café" in latin.text()
    assert bogus.charset == "utf-8" and "naïve" in bogus.text()


def test_charset_and_type_detection_pure() -> None:
    assert sniff_content_type(None, b"  <!DOCTYPE html><p>") == "text/html"
    assert sniff_content_type("Text/HTML; charset=UTF-8", b"") == "text/html"
    assert sniff_content_type("", b"\x00\x01") == "application/octet-stream"
    assert detect_charset(None, b'<meta http-equiv="Content-Type" content="text/html; '
                          b'charset=windows-1252">', "text/html") == "cp1252"
    assert detect_charset(None, b"\xef\xbb\xbfhello", "text/plain") == "utf-8"
    cyrillic = ("Привет, как дела? Это простой русский текст для проверки. " * 20)
    assert detect_charset(None, cyrillic.encode("cp1251"), "text/plain") in (
        "cp1251", "koi8-r", "mac-cyrillic", "cp866", "iso8859-5")


def test_retry_after_parsing() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0 - 10) == 10.0


# --- retries --------------------------------------------------------------------------------

def _flaky(first: tuple[int, dict[str, str]], times: int = 1) -> Route:
    calls = {"n": 0}

    def route(_req: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        calls["n"] += 1
        if calls["n"] <= times:
            return first[0], dict(first[1]), b"busy"
        return 200, {"Content-Type": "text/plain"}, b"fine"
    return route


async def test_503_with_retry_after_is_retried_after_waiting() -> None:
    with serve({"/busy": _flaky((503, {"Retry-After": "1"})),
                "/limited": _flaky((429, {"Retry-After": "1"}))}) as srv:
        async with quick_fetcher() as f:
            started = time.monotonic()
            r = await f.get(srv.base + "/busy")
            waited = time.monotonic() - started
            limited = await f.get(srv.base + "/limited")
    assert r.status == 200 and r.text() == "fine" and waited >= 0.95
    assert limited.status == 200
    assert srv.hits["/busy"] == 2 and srv.hits["/limited"] == 2 and f.requests == 4


async def test_retries_stop_and_the_last_answer_is_returned() -> None:
    with serve({"/down": _flaky((502, {}), times=99),
                "/later": _flaky((429, {"Retry-After": "3600"}), times=99)}) as srv:
        async with quick_fetcher(loopback_settings(retries=2)) as f:
            down = await f.get(srv.base + "/down")
            later = await f.get(srv.base + "/later")  # beyond the cap: not waited for
            once = await f.get(srv.base + "/down", retry=False)
    assert down.status == 502 and srv.hits["/down"] == 3 + 1
    assert later.status == 429 and srv.hits["/later"] == 1
    assert once.status == 502


async def test_squid_style_503_is_not_retried() -> None:
    squid = (503, {"X-Squid-Error": "ERR_DNS_FAIL 0", "Server": "squid"})
    with serve({"/squid": _flaky(squid, times=99)}) as srv:
        async with quick_fetcher() as f:
            r = await f.get(srv.base + "/squid")
    assert r.status == 503 and r.squid_error == "ERR_DNS_FAIL 0"
    assert srv.hits["/squid"] == 1


async def test_connection_refused_is_fetch_failed_refused() -> None:
    with serve({}) as srv:
        port = srv.port
    async with quick_fetcher() as f:  # the server is gone: nothing listens on the port
        with pytest.raises(FetchFailed) as info:
            await f.get(f"http://127.0.0.1:{port}/")
    assert info.value.kind == "refused"
    assert f.requests == 2  # one retry for a refused connection


def slow(_req: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """A handler that answers after 1.5 s (past the timeouts the tests below set)."""
    time.sleep(1.5)
    return 200, {}, b"late"


async def test_read_timeout_is_fetch_failed_timeout_without_hanging() -> None:
    with serve({"/slow": slow}) as srv:
        settings = loopback_settings(read_timeout=0.3, total_timeout=1.0, retries=1)
        async with quick_fetcher(settings) as f:
            started = time.monotonic()
            with pytest.raises(FetchFailed) as info:
                await f.get(srv.base + "/slow")
    assert info.value.kind == "timeout"
    assert time.monotonic() - started < 5


async def test_total_timeout_names_its_kind_not_an_empty_reason() -> None:
    """asyncio's own TimeoutError has an empty str: the reason must still say something."""
    with serve({"/slow": slow}) as srv:
        settings = loopback_settings(read_timeout=5.0, total_timeout=0.3, retries=0)
        async with quick_fetcher(settings) as f:
            with pytest.raises(FetchFailed) as info:
                await f.get(srv.base + "/slow")
    assert info.value.kind == "timeout"
    assert str(info.value) == "timeout: TimeoutError"


@pytest.mark.parametrize("probe_answer", [b"", b"HTTP/1.1 403 Forb", b"x" * 70_000])
async def test_proxy_closing_early_during_the_connect_probe_is_a_fetch_error(
        probe_answer: bytes) -> None:
    """A proxy refuses CONNECT, then closes (or babbles) when asked again by hand: the
    caller gets the fetch layer's answer, not asyncio.IncompleteReadError/LimitOverrunError."""
    connections = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            await reader.readuntil(b"\r\n\r\n")
            if len(connections) == 1:  # httpx's CONNECT: refused
                writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            else:  # the probe: an early close
                writer.write(probe_answer)
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        settings = loopback_settings(allow_hosts=[], proxy=f"http://127.0.0.1:{port}",
                                     retries=0)
        async with quick_fetcher(settings) as f:
            try:
                r = await f.get("https://proxied.example/page")
            except FetchFailed as exc:
                assert exc.kind == "proxy"
            else:
                assert r.status == 403  # the status httpx kept from the CONNECT answer
    finally:
        server.close()
        await server.wait_closed()
    assert len(connections) == 2


# --- politeness -----------------------------------------------------------------------------

async def test_polite_requests_are_spaced_per_host() -> None:
    with serve({"/p": html("x")}) as srv:
        limiter = LocalHostLimiter(rps=5.0, concurrency=2)
        async with Fetcher(loopback_settings(), limiter=limiter) as f:
            started = time.monotonic()
            await asyncio.gather(*(f.get(srv.base + "/p", polite=True) for _ in range(4)))
            polite_time = time.monotonic() - started
            started = time.monotonic()
            await asyncio.gather(*(f.get(srv.base + "/p") for _ in range(4)))
            interactive_time = time.monotonic() - started
    assert polite_time >= 3 * 0.2 - 0.05  # 4 requests at 5/s: three intervals
    assert interactive_time < polite_time


async def test_per_host_concurrency_is_bounded() -> None:
    active = {"now": 0, "max": 0}
    lock = threading.Lock()

    def slowish(_req: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        with lock:
            active["now"] += 1
            active["max"] = max(active["max"], active["now"])
        time.sleep(0.15)
        with lock:
            active["now"] -= 1
        return 200, {}, b"ok"
    with serve({"/s": slowish}) as srv:
        async with Fetcher(loopback_settings(per_host_concurrency=2)) as f:
            await asyncio.gather(*(f.get(srv.base + "/s") for _ in range(6)))
    assert active["max"] == 2


def test_the_tls_context_is_built_once_per_bundle_and_again_when_the_bundle_changes(
        tmp_path) -> None:
    """Loading the roots costs ~20 ms of CPU: a worker building a Fetcher per job paid it for
    every chunk of checks. One context per bundle file, read again once the file changes."""
    import certifi

    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    first = build_ssl_context(str(bundle))
    assert build_ssl_context(str(bundle)) is first
    assert build_ssl_context(None) is build_ssl_context(None)
    assert build_ssl_context(None) is not first
    bundle.write_bytes(bundle.read_bytes() * 2)  # another size: an edited bundle
    assert build_ssl_context(str(bundle)) is not first
    with pytest.raises(ConfigError, match="cannot load CA bundle"):
        build_ssl_context(str(tmp_path / "missing.pem"))
