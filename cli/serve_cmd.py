"""`pagetrail serve mcp [--http --host H --port P]` (and, later, `pagetrail serve slack`).

Each face is a sub-command of `serve` with its own `register_<face>(faces)` function, so a
new face is one function and one call in `register`.
"""

from __future__ import annotations

import argparse
import sys

from pagetrail import get_settings
from pagetrail.cli.common import UsageError, run_async
from pagetrail.cli.serve_slack import register_slack

DEFAULT_HTTP_PORT = 8765


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="run a face of pagetrail: the MCP server, ...")
    faces = parser.add_subparsers(dest="face", metavar="FACE")
    register_mcp(faces)
    register_slack(faces)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def register_mcp(faces: argparse._SubParsersAction) -> None:
    mcp = faces.add_parser(
        "mcp", help="MCP server: stdio (default, for desktop clients) or streamable HTTP",
        description="Serve pagetrail's tools over MCP. Over HTTP the endpoint is /mcp; beyond "
                    "loopback a bearer token (PAGETRAIL_MCP_TOKEN) is required.")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP bind address (127.0.0.1)")
    mcp.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT,
                     help=f"HTTP port ({DEFAULT_HTTP_PORT}; 0 picks a free one)")
    mcp.add_argument("--max-concurrent", type=int, default=None,
                     help="tool calls run at once (default: PAGETRAIL_MCP_MAX_CONCURRENT)")
    mcp.add_argument("--max-queue", type=int, default=None,
                     help="calls allowed to wait for a slot before new ones are refused "
                          "(default: 4 per concurrent slot)")
    mcp.add_argument("--read-only", action="store_true", default=None,
                     help="serve only the tools that write nothing (readOnlyHint); "
                          "default: PAGETRAIL_MCP_READ_ONLY")
    mcp.add_argument("--tools", type=_names, default=None, metavar="A,B",
                     help="serve only these tools (default: PAGETRAIL_MCP_TOOLS, or all)")
    mcp.add_argument("--exclude-tools", type=_names, default=None, metavar="C,D",
                     help="do not serve these tools (default: PAGETRAIL_MCP_EXCLUDE_TOOLS)")
    mcp.set_defaults(func=handle_mcp)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def handle_mcp(args: argparse.Namespace) -> int:
    from pagetrail.server.app import ToolSelection, build_server

    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be between 0 and 65535")
    if args.max_concurrent is not None and args.max_concurrent < 1:
        raise UsageError("--max-concurrent must be at least 1")
    if args.max_queue is not None and args.max_queue < 0:
        raise UsageError("--max-queue must be 0 or more")
    settings = get_settings()
    selection = ToolSelection.from_settings(settings, read_only=args.read_only,
                                            tools=args.tools, exclude=args.exclude_tools)
    limits = {"max_concurrent": args.max_concurrent, "max_waiting": args.max_queue,
              "selection": selection}
    if not args.http:
        server = build_server(settings, **limits)
        run_async(server.run_stdio_async())
        return 0
    from pagetrail.server.http import bound_socket, check_bind, serve_http

    token = settings.mcp_token.get_secret_value() if settings.mcp_token else None
    check_bind(args.host, token)  # before opening the store or the socket
    server = build_server(settings, **limits)
    sock = bound_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    # stderr: stdout stays clean for scripts; the port line lets callers use --port 0.
    print(f"pagetrail MCP on http://{_url_host(host)}:{port}/mcp"
          f"{' (bearer token required)' if token else ''}", file=sys.stderr, flush=True)
    run_async(serve_http(server, host=args.host, port=port, token=token, sock=sock))
    return 0


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
