"""The live web's forward proxy: absolute-URI http requests and CONNECT with TLS interception.

After `CONNECT host:443` the proxy answers 200, terminates TLS itself with a certificate for
`host` from the test CA, then reads origin-form requests on the TLS stream. Hosts that
cannot be reached get Squid's answer to the CONNECT itself; `timeout` hosts get no answer.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from urllib.parse import urlsplit

from pagetrail.tools.testbed.httpio import (
    ConnectionServer,
    Request,
    html_response,
    next_request,
    wait_for_client_to_leave,
    write_response,
)
from pagetrail.tools.testbed.live import HANG, LiveWeb, unreachable_answer
from pagetrail.tools.testbed.tls import CertAuthority

log = logging.getLogger(__name__)

TLS_HANDSHAKE_TIMEOUT = 10.0


class LiveProxy(ConnectionServer):
    def __init__(self, live: LiveWeb, ca: CertAuthority) -> None:
        super().__init__()
        self.live = live
        self.ca = ca

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        while (request := await next_request(reader, writer)) is not None:
            if request.method == "CONNECT":
                await self._tunnel(request, reader, writer)
                return
            if not request.target.lower().startswith(("http://", "https://")):
                await write_response(writer, html_response(
                    400, "Bad Request", "a proxy request needs an absolute URI"), close=True)
                return
            if not await self._answer(request, request.target, reader, writer):
                return

    async def _answer(self, request: Request, url: str, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection must end."""
        accept_gzip = "gzip" in (request.header("accept-encoding") or "").lower()
        response = await self.live.answer(url, request.method, accept_gzip=accept_gzip)
        if response is HANG:
            await wait_for_client_to_leave(reader)
            return False
        await write_response(writer, response, head=request.method == "HEAD",
                             close=not request.keep_alive)
        return request.keep_alive

    async def _tunnel(self, request: Request, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        authority = request.target
        try:
            parts = urlsplit("//" + authority)
            host = (parts.hostname or "").lower().rstrip(".")
            port = parts.port or 443
        except ValueError:
            await write_response(writer, html_response(400, "Bad Request", "bad CONNECT"),
                                 close=True)
            return
        if not self.live.is_service_host(host):
            spec = self.live.spec(host)
            refusal = unreachable_answer(spec, f"https://{authority}/")
            if refusal is not None:
                await write_response(writer, refusal, close=True)
                return
            assert spec is not None
            if spec.state == "timeout":
                await wait_for_client_to_leave(reader)
                return
            broken = spec.state == "tls_error"
        else:
            broken = False
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await self._serve_tls(host, port, broken, reader, writer)

    async def _serve_tls(self, host: str, port: int, broken: bool,
                         reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Play the origin `https://host:port` on an established tunnel."""
        try:
            await writer.start_tls(self.ca.server_context(host, broken=broken),
                                   ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT)
        except (ssl.SSLError, ConnectionError, OSError, TimeoutError) as exc:
            log.debug("TLS handshake for %s failed: %s", host, exc)
            return
        origin = f"https://{host}" if port == 443 else f"https://{host}:{port}"
        while True:
            try:
                inner = await next_request(reader, writer)
            except ssl.SSLError:
                return
            if inner is None:
                return
            target = inner.target
            url = target if target.startswith(("http://", "https://")) else origin + target
            if not await self._answer(inner, url, reader, writer):
                return


class LiveSocks(LiveProxy):
    """The same live web behind a SOCKS5 proxy (RFC 1928, no authentication, CONNECT only,
    names resolved here): pywb's recorder reaches upstream only through `SOCKS_HOST`/
    `SOCKS_PORT`. Port 443 is TLS with a certificate from the test CA, any other port plain
    HTTP; a host that cannot be reached gets SOCKS's "host unreachable"/"refused" reply."""

    async def handle_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        greeting = await reader.readexactly(2)
        if greeting[0] != 5:
            return
        await reader.readexactly(greeting[1])  # offered methods: we take "no authentication"
        writer.write(b"\x05\x00")
        version, command, _, kind = await reader.readexactly(4)
        if kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode("idna")
        elif kind == 1:
            host = ".".join(str(b) for b in await reader.readexactly(4))
        else:
            await reader.readexactly(16)
            await self._reply(writer, 8)  # address type not supported
            return
        port = int.from_bytes(await reader.readexactly(2), "big")
        if version != 5 or command != 1:
            await self._reply(writer, 7)  # command not supported
            return
        host = host.lower().rstrip(".")
        broken = False
        if not self.live.is_service_host(host):
            spec = self.live.spec(host)
            if spec is None or spec.state == "nxdomain":
                await self._reply(writer, 4)
                return
            if spec.state == "refused":
                await self._reply(writer, 5)
                return
            if spec.state == "timeout":
                await wait_for_client_to_leave(reader)
                return
            broken = spec.state == "tls_error"
        await self._reply(writer, 0)
        if port == 443:
            await self._serve_tls(host, port, broken, reader, writer)
            return
        origin = f"http://{host}" if port == 80 else f"http://{host}:{port}"
        while (request := await next_request(reader, writer)) is not None:
            target = request.target
            url = target if target.startswith(("http://", "https://")) else origin + target
            if not await self._answer(request, url, reader, writer):
                return

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, code: int) -> None:
        writer.write(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))
        await writer.drain()
