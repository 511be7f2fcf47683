"""Loopback HTTP servers for tests: one way to start, address and stop them.

    server = Loopback(Handler)   # bound to 127.0.0.1:<free port>, serving in a daemon thread
    server.base                  # "http://127.0.0.1:<port>"
    server.close()

Handlers derive from QuietHandler (no access log on stderr), or from GetHeadHandler when
GET and HEAD share one answer (HTTP/1.1 keep-alive, the body left out for HEAD).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass  # the test's output is the assertions, not an access log


class GetHeadHandler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, with_body: bool) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        self.answer(True)

    def do_HEAD(self) -> None:
        self.answer(False)


class Loopback:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port: int = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
