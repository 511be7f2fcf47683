"""The CONNECT probe: ask an http proxy by hand what it answers to `CONNECT host:port`.

httpx keeps only the status of a refused CONNECT; the probe reads the headers too, so that a
Squid error (X-Squid-Error) reaches check_link. Private to the fetch layer (`tools.net.fetch`)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx


async def connect_probe(proxy_url: str, target: str, user_agent: str,
                         timeout: float) -> tuple[int, httpx.Headers] | None:
    """Send `CONNECT target` to an http proxy and return its status and headers."""
    proxy = urlsplit(proxy_url)
    host, port = proxy.hostname or "127.0.0.1", proxy.port or 80
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
                         f"User-Agent: {user_agent}\r\n\r\n".encode("ascii", "replace"))
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
        finally:
            writer.close()
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[1].isdigit():
        return None
    pairs = [tuple(line.split(":", 1)) for line in lines[1:] if ":" in line]
    return int(status_line[1]), httpx.Headers([(k.strip(), v.strip()) for k, v in pairs])
