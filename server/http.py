"""Streamable HTTP transport: `/mcp` on loopback by default, bearer token beyond it.

Binding beyond loopback without PAGETRAIL_MCP_TOKEN is refused (the tools fetch URLs for
whoever calls them); when a token is set every request must carry
`Authorization: Bearer <token>` (compared in constant time), loopback included.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from typing import Any

from mcp.server.mcpserver import MCPServer

from pagetrail import ConfigError

MCP_PATH = "/mcp"
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})

ASGIApp = Any  # (scope, receive, send) -> Awaitable[None]


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token (ConfigError says how to fix it)."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to listen on {host} without a token: set PAGETRAIL_MCP_TOKEN "
            "(clients then send 'Authorization: Bearer <token>'), or bind 127.0.0.1")


class BearerAuth:
    """ASGI middleware: HTTP requests need `Authorization: Bearer <token>`; 401 otherwise.

    Pure ASGI (not BaseHTTPMiddleware) so streamed SSE responses pass through untouched."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorised(scope):
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="pagetrail"')]})
            await send({"type": "http.response.body",
                        "body": b'{"error": "unauthorized", "message": "bearer token required"}'})
            return
        await self.app(scope, receive, send)

    def _authorised(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                return hmac.compare_digest(value, self.expected)
        return False


def http_app(server: MCPServer, *, host: str, token: str | None) -> ASGIApp:
    """The Starlette app serving MCP at /mcp, behind the bearer check when a token is set."""
    check_bind(host, token)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return BearerAuth(app, token) if token else app


def uvicorn_server(app: ASGIApp, *, host: str, port: int, log_level: str = "warning") -> Any:
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                            timeout_graceful_shutdown=5)
    return uvicorn.Server(config)


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one), for callers that need the port first."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(server: MCPServer, *, host: str, port: int, token: str | None,
                     sock: socket.socket | None = None) -> None:
    """Serve until cancelled or interrupted."""
    app = http_app(server, host=host, token=token)
    web = uvicorn_server(app, host=host, port=port)
    await web.serve(sockets=[sock] if sock is not None else None)
