"""A tiny scriptable HTTP server on 127.0.0.1 for the engine tests (plus its own test).

Routes map a path to a fixed answer or to a function of the request; every request is
recorded (path, query, headers, time) so tests can assert what was — or was not — sent.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx
from loopback import Loopback, QuietHandler


@dataclass
class Seen:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    at: float
    raw_target: str


@dataclass
class Answer:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)


Route = Answer | Callable[[Seen], Answer]


class LocalServer(Loopback):
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                seen = Seen(parts.path, parse_qs(parts.query),
                            {k.lower(): v for k, v in self.headers.items()},
                            time.monotonic(), self.path)
                with server._lock:
                    server.seen.append(seen)
                route = server.routes.get(parts.path)
                answer = route(seen) if callable(route) else route
                if answer is None:
                    answer = Answer(404, b"not found", {"Content-Type": "text/plain"})
                body = answer.body.encode() if isinstance(answer.body, str) else answer.body
                self.send_response(answer.status)
                headers = {"Content-Type": "application/json", **answer.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)

    def requests_to(self, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.path == path]



@contextmanager
def local_server() -> Iterator[LocalServer]:
    server = LocalServer()
    try:
        yield server
    finally:
        server.close()


def loopback_settings(**overrides: object):
    """Settings that let the fetcher reach servers on 127.0.0.1 directly."""
    from pagetrail.tools.settings import Settings

    values: dict[str, object] = {"allow_hosts": ["127.0.0.1"], "no_proxy": ["127.0.0.1"],
                                 "retries": 1, "search_rps": 50.0, "per_host_rps": 50.0,
                                 "total_timeout": 5.0}
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def make_fetcher(settings) -> AsyncIterator[object]:
    """The real fetcher (SSRF guard, limits and all) with loopback allowed."""
    from pagetrail.tools.net.fetch import Fetcher

    async with Fetcher(settings) as fetcher:
        yield fetcher


def test_local_server_answers_and_records() -> None:
    with local_server() as server:
        server.routes["/hello"] = Answer(200, '{"ok": true}')
        server.routes["/echo"] = lambda seen: Answer(201, seen.query.get("q", [""])[0])
        assert httpx.get(f"{server.base}/hello").json() == {"ok": True}
        echo = httpx.get(f"{server.base}/echo?q=hi", headers={"X-Test": "1"})
        assert (echo.status_code, echo.text) == (201, "hi")
        assert httpx.get(f"{server.base}/missing").status_code == 404
        assert server.requests_to("/echo")[0].headers["x-test"] == "1"
        assert len(server.seen) == 3
