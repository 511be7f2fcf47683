"""The scan's lean HTTP client against real local servers: the SSRF guard on every hop,
redirect chains, body limits, keep-alive, the Fetcher fallback, and soft-404 judgement
through the shared sibling probe."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from urllib.parse import quote

import pytest
from loopback import GetHeadHandler, Loopback

from pagetrail.tools.errors import (
    BodyTooLarge,
    DecompressionBomb,
    FetchFailed,
    RedirectLoop,
    RefusedAddress,
    TooManyRedirects,
)
from pagetrail.tools.linkcheck.hostprobe import SiblingProber, scan_check
from pagetrail.tools.net.bulkfetch import TARGET_SAFE, BulkFetcher, request_target
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.settings import Settings

Answer = tuple[int, dict[str, str], bytes]
Route = Callable[[str], Answer] | Answer
HTML = {"Content-Type": "text/html; charset=utf-8"}


def html(title: str, text: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>".encode()


class Server(Loopback):
    """HTTP/1.1 keep-alive server on 127.0.0.1; counts hits per path and connections.
    An answer with a Transfer-Encoding header is written as given (pre-chunked)."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.fallback: Callable[[str], Answer] | None = None  # answers unrouted paths
        self.hits: Counter[str] = Counter()
        self.connections = 0
        self.lock = threading.Lock()
        server = self

        class Handler(GetHeadHandler):
            def setup(self) -> None:
                super().setup()
                with server.lock:
                    server.connections += 1

            def answer(self, with_body: bool) -> None:
                with server.lock:
                    server.hits[self.path] += 1
                route = server.routes.get(self.path)
                if route is None and server.fallback is not None:
                    route = server.fallback
                if route is None:
                    status, headers, body = 404, HTML, html("Not Found", "no such page")
                else:
                    status, headers, body = route(self.path) if callable(route) else route
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if "Transfer-Encoding" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(body)

        super().__init__(Handler)


def settings(**overrides: object) -> Settings:
    values: dict[str, object] = dict(
        allow_hosts=["127.0.0.1"], per_host_rps=0, per_host_concurrency=8, concurrency=8,
        retries=1, connect_timeout=2.0, read_timeout=2.0, total_timeout=4.0,
        max_bytes=10_000, max_redirects=3)
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def routes() -> dict[str, Route]:
    return {}


@pytest.fixture
def server(routes: dict[str, Route]) -> Iterator[Server]:
    srv = Server(routes)
    yield srv
    srv.close()


@pytest.fixture
async def bulk() -> AsyncIterator[BulkFetcher]:
    async with Fetcher(settings(), backoff=0.01) as fetcher:
        client = BulkFetcher(fetcher, html_only=True)
        yield client
        await client.aclose()


# --- pure parts -----------------------------------------------------------------------

def test_request_target_skips_quoting_only_what_quote_keeps() -> None:
    safe_url = "http://ex.org/a-b_c.~/x;y=1,2@3:4!$&'()*+[]?q=1&r=%20"
    assert request_target(safe_url)[1] == "/a-b_c.~/x;y=1,2@3:4!$&'()*+[]?q=1&r=%20"
    for code in range(0x800):  # beyond ASCII everything is quoted
        char = chr(code)
        if char in "?#\t\r\n":  # these end the path, or urlsplit drops them
            continue
        assert request_target(f"http://ex.org/{char}")[1] == "/" + quote(char, safe=TARGET_SAFE)


def test_request_target() -> None:
    assert request_target("https://Example.org/a b/é?q=x y") == (
        "example.org", "/a%20b/%C3%A9?q=x%20y")
    assert request_target("http://[::1]:8080") == ("[::1]:8080", "/")


# --- strict framing on a raw socket ---------------------------------------------------

GOOD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 26\r\n\r\n"
        b"<html><title>ok</title>ok!")
HEAD_200 = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"


class RawServer:
    """Answers GET /good with GOOD and GET /bad with `bad`, verbatim, on keep-alive
    connections it never closes first; counts connections and requests per path."""

    def __init__(self, bad: bytes) -> None:
        self.bad = bad
        self.connections = 0
        self.hits: Counter[str] = Counter()
        self.base = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                path = request.split(b" ", 2)[1].decode()
                self.hits[path] += 1
                writer.write(self.bad if path == "/bad" else GOOD)
                await writer.drain()
        writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[RawServer]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            yield self
        finally:
            server.close()


AMBIGUOUS = {
    "two differing Content-Length": HEAD_200 + b"Content-Length: 3\r\nContent-Length: 30\r\n"
                                    b"\r\nabc",
    "chunk size 0x10": HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n",
    "chunk size 1_0": HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n1_0\r\n0123456789\r\n"
                      b"0\r\n\r\n",
    "chunk size +a": HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n+a\r\n0123456789\r\n"
                     b"0\r\n\r\n",
    "Content-Length and Transfer-Encoding": HEAD_200 + b"Content-Length: 3\r\n"
                                            b"Transfer-Encoding: chunked\r\n\r\n"
                                            b"3\r\nabc\r\n0\r\n\r\n",
    "Transfer-Encoding and Content-Length": HEAD_200 + b"Transfer-Encoding: chunked\r\n"
                                            b"Content-Length: 3\r\n\r\n"
                                            b"3\r\nabc\r\n0\r\n\r\n",
    "a transfer coding besides chunked": HEAD_200 + b"Transfer-Encoding: gzip, chunked\r\n\r\n"
                                         b"3\r\nabc\r\n0\r\n\r\n",
    "chunked twice": HEAD_200 + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
                     b"\r\n3\r\nabc\r\n0\r\n\r\n",
    "a folded header": HEAD_200 + b"X-A: 1\r\n folded\r\nContent-Length: 3\r\n\r\nabc",
    "a chunk without its CRLF": HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n"
                                b"0\r\n\r\n",
    "not HTTP at all": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
}


@pytest.mark.parametrize("bad", AMBIGUOUS.values(), ids=AMBIGUOUS.keys())
async def test_ambiguous_framing_is_refused_and_its_connection_not_reused(bad: bytes) -> None:
    async with RawServer(bad).running() as raw, \
            Fetcher(settings(), backoff=0.01) as fetcher:
        client = BulkFetcher(fetcher, html_only=True)
        assert (await client.get(raw.base + "/good")).status == 200
        with pytest.raises(FetchFailed) as refused:  # on the pooled connection
            await client.get(raw.base + "/bad")
        assert refused.value.kind == "protocol" and "protocol" in str(refused.value)
        assert raw.connections == 1  # /bad went over the kept-alive connection ...
        again = await client.get(raw.base + "/good")
        assert again.status == 200 and again.content.endswith(b"ok!")
        assert raw.connections == 2  # ... which was closed, not pooled
        # The refusal is the answer: neither the Fetcher nor a retry asks again.
        assert client.delegated == 0 and raw.hits["/bad"] == 1
        prober = SiblingProber(client)
        checked = await scan_check(raw.base + "/bad", client, prober)
        await client.aclose()
    # Not transient (it breaks the same way again), not dead (a browser may read it).
    assert checked.verdict == "blocked" and "protocol" in checked.reason
    assert checked.blocked is not None and checked.blocked.by == "protocol"


async def test_well_framed_answers_keep_their_connection() -> None:
    chunked = (HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n"
               b"4;ext=1\r\n<htm\r\n2\r\nl>\r\n0\r\nX-Trailer: 1\r\n\r\n")
    async with RawServer(b"HTTP/1.1 100 Continue\r\n\r\n" + chunked).running() as raw, \
            Fetcher(settings()) as fetcher:
        client = BulkFetcher(fetcher, html_only=True)
        first = await client.get(raw.base + "/bad")
        second = await client.get(raw.base + "/good")
        await client.aclose()
    assert (first.status, first.content) == (200, b"<html>")
    assert second.content.endswith(b"ok!") and raw.connections == 1


# --- the SSRF guard -------------------------------------------------------------------

async def test_refuses_loopback_unless_allowed_and_on_every_redirect_hop(
        server: Server, routes: dict[str, Route]) -> None:
    routes["/to-local"] = (302, {"Location": f"http://localhost:{server.port}/secret"}, b"")
    routes["/to-metadata"] = (301, {"Location": "http://169.254.169.254/latest"}, b"")
    routes["/secret"] = (200, HTML, html("Secret", "internal"))
    async with Fetcher(settings(allow_hosts=[])) as fetcher:
        strict = BulkFetcher(fetcher)
        with pytest.raises(RefusedAddress):
            await strict.get(server.base + "/secret")
        await strict.aclose()
    assert server.hits["/secret"] == 0
    async with Fetcher(settings()) as fetcher:
        client = BulkFetcher(fetcher)
        for path in ("/to-local", "/to-metadata"):
            with pytest.raises(RefusedAddress):
                await client.get(server.base + path)
        await client.aclose()
    assert server.hits["/to-local"] == 1 and server.hits["/secret"] == 0


async def test_a_scan_never_reaches_an_endpoint_origin(
        server: Server, routes: dict[str, Route]) -> None:
    """A configured endpoint (here searxng_url) used to exempt every port of its host; a scan
    fetches pages and their links, so not even the endpoint's own origin is exempt for it."""
    routes["/secret"] = (200, HTML, html("Secret", "internal"))
    routes["/search"] = (200, HTML, html("Results", "found"))
    page = Server({"/to-endpoint": (302, {"Location": server.base + "/search"}, b"")})
    try:
        async with Fetcher(settings(allow_hosts=[f"127.0.0.1:{page.port}"],
                                    searxng_url=f"http://127.0.0.1:{server.port + 1}")) as f:
            client = BulkFetcher(f)
            with pytest.raises(RefusedAddress):  # another port of the endpoint's host
                await client.get(server.base + "/secret")
            await client.aclose()
        async with Fetcher(settings(allow_hosts=[f"127.0.0.1:{page.port}"],
                                    searxng_url=server.base)) as f:
            client = BulkFetcher(f)
            with pytest.raises(RefusedAddress):  # a link to the endpoint itself
                await client.get(server.base + "/search")
            with pytest.raises(RefusedAddress):  # a page cannot bounce into the endpoint
                await client.get(page.base + "/to-endpoint")
            await client.aclose()
    finally:
        page.close()
    assert server.hits["/secret"] == 0 and server.hits["/search"] == 0


# --- redirects, keep-alive, bodies ----------------------------------------------------

async def test_redirect_chain_is_recorded_hop_by_hop_on_one_connection(
        server: Server, routes: dict[str, Route], bulk: BulkFetcher) -> None:
    routes["/a"] = (301, {"Location": "/b"}, b"moved")
    routes["/b"] = (302, {"Location": server.base + "/c#frag"}, b"")
    routes["/c"] = (200, HTML, html("C", "landed"))
    response = await bulk.get(server.base + "/a")
    assert response.status == 200 and response.final_url == server.base + "/c"
    assert [(h.url, h.status, h.location) for h in response.chain] == [
        (server.base + "/a", 301, server.base + "/b"),
        (server.base + "/b", 302, server.base + "/c")]
    assert b"landed" in response.content and response.content_type == "text/html"
    assert bulk.requests == 3 and server.connections == 1  # keep-alive across the hops
    await bulk.get(server.base + "/c")
    assert server.connections == 1


async def test_redirect_loops_and_too_many_hops_are_errors(
        server: Server, routes: dict[str, Route], bulk: BulkFetcher) -> None:
    routes["/x"] = (302, {"Location": "/y"}, b"")
    routes["/y"] = (302, {"Location": "/x"}, b"")
    for i in range(6):
        routes[f"/hop{i}"] = (301, {"Location": f"/hop{i + 1}"}, b"")
    with pytest.raises(RedirectLoop):
        await bulk.get(server.base + "/x")
    with pytest.raises(TooManyRedirects):
        await bulk.get(server.base + "/hop0")


async def test_body_limits_chunked_gzip_and_bombs(
        server: Server, routes: dict[str, Route], bulk: BulkFetcher) -> None:
    big = b"<html><body>" + b"x" * 20_000 + b"</body></html>"
    routes["/big"] = (200, HTML, big)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(big[i:i + 4000]), big[i:i + 4000])
                      for i in range(0, len(big), 4000)) + b"0\r\n\r\n"
    routes["/big-chunked"] = (200, {**HTML, "Transfer-Encoding": "chunked"}, chunks)
    small = html("Small", "fine " * 100)
    routes["/gz-chunked"] = (200, {**HTML, "Content-Encoding": "gzip",
                                   "Transfer-Encoding": "chunked"},
                             b"%x\r\n%s\r\n0\r\n\r\n" % (len(gzip.compress(small)),
                                                         gzip.compress(small)))
    routes["/bomb"] = (200, {**HTML, "Content-Encoding": "gzip"},
                       gzip.compress(b"<html>" + b"\0" * 3_000_000))
    routes["/pdf"] = (200, {"Content-Type": "application/pdf"}, b"%PDF" + b"0" * 200_000)
    with pytest.raises(BodyTooLarge):
        await bulk.get(server.base + "/big")
    with pytest.raises(BodyTooLarge):
        await bulk.get(server.base + "/big-chunked")
    assert (await bulk.get(server.base + "/gz-chunked")).content == small
    with pytest.raises(DecompressionBomb):  # 3 MB of zeros in ~3 kB: stops at the bound
        await bulk.get(server.base + "/bomb", max_bytes=1_000_000)
    pdf = await bulk.get(server.base + "/pdf")  # not HTML: answered without reading 200 kB
    assert (pdf.status, pdf.content_type, pdf.content) == (200, "application/pdf", b"")
    with pytest.raises(BodyTooLarge):
        await bulk.get(server.base + "/pdf", html_only=False)


@contextlib.asynccontextmanager
async def stalling_server(head: bytes) -> AsyncIterator[str]:
    """A server that sends `head` (and part of a body) and then nothing until closed."""
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(head)
            await writer.drain()
            await asyncio.sleep(60)
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.parametrize("head", [
    b"",  # no answer at all
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n<html>",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\n<html\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>",  # body runs to the close
])
async def test_a_stalled_answer_ends_at_the_read_timeout_not_the_total_one(head: bytes) -> None:
    quick_reads = settings(read_timeout=0.2, total_timeout=30.0, retries=0)
    async with stalling_server(head) as base, Fetcher(quick_reads) as fetcher:
        client = BulkFetcher(fetcher, html_only=True)
        # Far below the total timeout: only the read timeout can end the wait in time.
        async with asyncio.timeout(10):
            with pytest.raises(FetchFailed) as failed:
                await client.get(base + "/stall")
        await client.aclose()
    assert failed.value.kind == "timeout" and client.delegated == 1


async def test_transient_answers_go_to_the_fetcher_and_its_retry(
        server: Server, routes: dict[str, Route], bulk: BulkFetcher) -> None:
    answers = iter([(503, HTML, b"busy"), (200, HTML, html("Back", "up again"))])
    routes["/flaky"] = lambda _path: next(answers)
    response = await bulk.get(server.base + "/flaky")
    assert response.status == 200 and server.hits["/flaky"] == 2
    assert bulk.delegated == 1


# --- judgement through the shared probe ------------------------------------------------

async def test_soft404_through_the_shared_sibling_probe(
        server: Server, routes: dict[str, Route], bulk: BulkFetcher) -> None:
    soft = (200, HTML, html("Welcome", "Sorry, nothing here. " * 5))

    server.fallback = lambda path: soft if path.startswith("/shop/") else (
        404, HTML, html("404", "none"))
    routes["/docs/guide.html"] = (200, HTML, html("Guide", "A long real guide " * 30))
    prober = SiblingProber(bulk)
    first = await scan_check(server.base + "/shop/item-1.html", bulk, prober)
    second = await scan_check(server.base + "/shop/item-2.html", bulk, prober)
    live = await scan_check(server.base + "/docs/guide.html", bulk, prober)
    assert (first.verdict, second.verdict, live.verdict) == ("soft404", "soft404", "ok")
    assert prober.probes == 2  # one per shape (/shop/*.html, /docs/*.html), not per URL
