"""A loopback Memento archive whose every capture is a huge page (the adversarial case of
#20: 4.5 MB, 100,000 links), for load tests of the faces and bench/mcp_load.py.

    archive = HeavyArchive().start()
    archive.prefix        # PAGETRAIL_ARCHIVES
    archive.captures      # how many huge raw captures were served
    archive.events        # "served" once each huge capture is written; a test appends its own
    # an original URL with "/small/" in it gets a small page instead
"""

from __future__ import annotations

import threading

from loopback import Loopback, QuietHandler

TIMESTAMP = "20190101000000"
SMALL_PAGE = (b"<html><head><title>A small archived page</title></head><body><p>Solar farms "
              b"double in a year.</p></body></html>")


def huge_page(links: int = 100_000) -> bytes:
    rows = "".join(f'<p><a href="/x/{i}">solar {i}</a> wind farm</p>' for i in range(links))
    return (f"<html><head><title>A very large archived page</title>"
            f'<meta name="keywords" content="solar,wind"></head><body>{rows}</body></html>'
            ).encode()


class HeavyArchive:
    def __init__(self, links: int = 100_000) -> None:
        self.body = huge_page(links)
        self.captures = 0
        # What happened, in order: "served" when a huge capture was written to its client;
        # a test adds its own events (list.append is atomic), so order can be asserted.
        self.events: list[str] = []
        self.authorizations: list[str | None] = []  # the Authorization header of each request
        self._lock = threading.Lock()
        self._server: Loopback | None = None

    @property
    def base(self) -> str:
        assert self._server is not None
        return self._server.base

    @property
    def prefix(self) -> str:
        return f"{self.base}/web"

    def start(self) -> HeavyArchive:
        archive = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                archive.authorizations.append(self.headers.get("authorization"))
                path = self.path
                if path.startswith("/web/timemap/link/"):
                    original = path[len("/web/timemap/link/"):]
                    body = (f'<{archive.prefix}/{TIMESTAMP}/{original}>; rel="memento"; '
                            'datetime="Tue, 01 Jan 2019 00:00:00 GMT"\n').encode()
                    self._send(200, body, "application/link-format")
                elif path.startswith(f"/web/{TIMESTAMP}id_/"):
                    small = "/small/" in path  # a light capture, for the light commands
                    with archive._lock:
                        archive.captures += not small
                    body = SMALL_PAGE if small else archive.body
                    self._send(200, body, "text/html; charset=utf-8",
                               {"Memento-Datetime": "Tue, 01 Jan 2019 00:00:00 GMT"})
                    if not small:
                        archive.events.append("served")
                else:
                    self._send(404, b"no", "text/plain")

            def _send(self, status: int, body: bytes, kind: str,
                      extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

        self._server = Loopback(Handler)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
