"""Minimal HTTP/1.1 on asyncio streams: parse requests, write responses, own the connections.

The testbed needs things web frameworks hide (absolute-URI requests, CONNECT followed by TLS
on the same socket, answering nothing at all), so it speaks HTTP/1.1 itself. Only what a
client library sends is supported: Content-Length or chunked request bodies, keep-alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus

log = logging.getLogger(__name__)

MAX_LINE = 16 * 1024
MAX_HEADERS = 100
MAX_BODY = 10 * 1024 * 1024


class BadRequest(Exception):
    """The client sent something that is not HTTP/1.x we understand."""


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes = b""

    def header(self, name: str, default: str | None = None) -> str | None:
        lowered = name.lower()
        for key, value in self.headers:
            if key.lower() == lowered:
                return value
        return default

    @property
    def keep_alive(self) -> bool:
        connection = (self.header("connection") or "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)


def html_response(status: int, title: str, text: str,
                  extra: Iterable[tuple[str, str]] = ()) -> Reply:
    body = (f"<!DOCTYPE html><html><head><title>{title}</title></head>"
            f"<body><h1>{title}</h1><p>{text}</p></body></html>").encode()
    return Reply(status, [("Content-Type", "text/html; charset=utf-8"), *extra], body)


def json_response(payload: bytes, status: int = 200) -> Reply:
    return Reply(status, [("Content-Type", "application/json; charset=utf-8")], payload)


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError as exc:
        raise BadRequest("line too long") from exc
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise BadRequest("connection closed mid-line") from exc
        return b""
    if len(line) > MAX_LINE:
        raise BadRequest("line too long")
    return line


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request on the connection, or None when the client closed it cleanly."""
    line = await _read_line(reader)
    while line in (b"\r\n", b"\n"):  # tolerate stray blank lines between requests
        line = await _read_line(reader)
    if not line:
        return None
    try:
        method, target, version = line.decode("latin-1").strip().split(" ")
    except ValueError as exc:
        raise BadRequest(f"bad request line {line[:80]!r}") from exc
    if not version.startswith("HTTP/1."):
        raise BadRequest(f"unsupported version {version!r}")
    headers: list[tuple[str, str]] = []
    while True:
        raw = await _read_line(reader)
        if not raw:
            raise BadRequest("connection closed in headers")
        if raw in (b"\r\n", b"\n"):
            break
        if len(headers) >= MAX_HEADERS:
            raise BadRequest("too many headers")
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep or not name.strip():
            raise BadRequest(f"bad header line {raw[:80]!r}")
        headers.append((name.strip(), value.strip()))
    request = Request(method.upper(), target, version, headers)
    request.body = await _read_body(reader, request)
    return request


async def _read_body(reader: asyncio.StreamReader, request: Request) -> bytes:
    if (request.header("transfer-encoding") or "").lower() == "chunked":
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = await _read_line(reader)
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError as exc:
                raise BadRequest("bad chunk size") from exc
            if size == 0:
                while (await _read_line(reader)) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > MAX_BODY:
                raise BadRequest("body too large")
            chunks.append(await reader.readexactly(size))
            await _read_line(reader)
    length = request.header("content-length")
    if not length:
        return b""
    try:
        size = int(length)
    except ValueError as exc:
        raise BadRequest("bad Content-Length") from exc
    if size < 0 or size > MAX_BODY:
        raise BadRequest("bad Content-Length")
    return await reader.readexactly(size)


def encode_response(response: Reply, *, head: bool = False, close: bool = False) -> bytes:
    reason = _reason(response.status)
    lines = [f"HTTP/1.1 {response.status} {reason}"]
    present = {k.lower() for k, _ in response.headers}
    lines += [f"{k}: {v}" for k, v in response.headers if k.lower() != "content-length"]
    if "date" not in present:
        lines.append(f"Date: {formatdate(usegmt=True)}")
    lines.append(f"Content-Length: {len(response.body)}")
    if close:
        lines.append("Connection: close")
    head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    return head_bytes if head else head_bytes + response.body


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


async def write_response(writer: asyncio.StreamWriter, response: Reply, *,
                         head: bool = False, close: bool = False) -> None:
    writer.write(encode_response(response, head=head, close=close))
    await writer.drain()


async def next_request(reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> Request | None:
    """The connection's next request; None when the client is done or sent a malformed
    one (then answered 400 and closed): every server's read step."""
    try:
        return await read_request(reader)
    except BadRequest as exc:
        await write_response(writer, html_response(400, "Bad Request", str(exc)), close=True)
        return None


async def wait_for_client_to_leave(reader: asyncio.StreamReader) -> None:
    """Say nothing and read until the client gives up (the `timeout` host behaviour)."""
    with contextlib.suppress(ConnectionError, OSError):
        while await reader.read(65536):
            pass


class ConnectionServer:
    """An asyncio TCP server that tracks its connection tasks so close() ends them all.

    (asyncio.Server.close() stops listening but leaves open connections running.)
    """

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self, host: str, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._on_connection, host, port,
                                                  limit=MAX_LINE * 4)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _on_connection(self, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            await self.handle_connection(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, BadRequest) as exc:
            log.debug("connection ended: %s", exc)
        except asyncio.CancelledError:
            pass
        # Anything else is a bug of the testbed's own handler: asyncio logs it with its
        # traceback (this coroutine is the server's connection callback).
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]
            writer.close()
            with contextlib.suppress(OSError, TimeoutError):  # the peer is gone either way
                await asyncio.wait_for(writer.wait_closed(), 1)

    async def handle_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        if self._server is not None:
            with contextlib.suppress(TimeoutError):  # a client still lingering
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None


class HandlerServer(ConnectionServer):
    """Plain HTTP server calling `handler(request) -> Reply` with keep-alive."""

    def __init__(self, handler) -> None:  # handler: Callable[[Request], Awaitable[Reply]]
        super().__init__()
        self._handler = handler

    async def handle_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        while (request := await next_request(reader, writer)) is not None:
            response = await self._handler(request)
            await write_response(writer, response, head=request.method == "HEAD",
                                 close=not request.keep_alive)
            if not request.keep_alive:
                return
