"""Replay recorded archive answers (tests/fixtures/archives/*.json) on a loopback server.

Each fixture holds the interactions of one recording (request method and URI, response
status, headers and body), trimmed, with its source in SOURCES.md. The server answers a
request whose path and query match a recorded URI's (a POST's key is `POST <path>`) (the archive's host replaced by the
loopback one, in headers and bodies too); `routes` answer what a test composes around the
recordings (a capture listing, say); anything else is a 404 counted in `misses`.

    with ArchiveReplay("wayback_excluded_url", routes={...}) as replay:
        settings = replay.settings()          # archives=[replay.prefix]
        replay.hits["/web/2017…id_/https://…"]  # requests seen per path and query
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from loopback import Loopback, QuietHandler

FIXTURES = Path(__file__).parent / "fixtures" / "archives"
ARCHIVE_ORIGINS = ("https://web.archive.org", "http://web.archive.org")

Answer = tuple[int, dict[str, str], bytes]
Route = Callable[[str], Answer | None]


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def interactions(name: str) -> list[dict[str, Any]]:
    return load(name)["interactions"]


def key_of(uri_or_path: str) -> str:
    """Path and query, percent-decoded: how the recorded and the replayed requests meet."""
    parts = urlsplit(uri_or_path)
    return unquote(parts.path + (f"?{parts.query}" if parts.query else ""))


class ArchiveReplay:
    def __init__(self, *fixtures: str, routes: Route | None = None) -> None:
        self.recorded: dict[str, list[Answer]] = {}
        self.hits: Counter[str] = Counter()
        self.misses: list[str] = []
        self.routes = routes
        replay = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.reply(f"POST {key_of(self.path)}")

            def do_GET(self) -> None:
                self.reply(key_of(self.path))

            def reply(self, key: str) -> None:
                replay.hits[key] += 1
                answer = replay.answer(key)
                if answer is None:
                    replay.misses.append(key)
                    answer = (404, {"content-type": "text/plain"}, b"not recorded")
                status, headers, body = answer
                self.send_response(status)
                for name, value in headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding",
                                            "content-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = Loopback(Handler)
        self.base = self.server.base
        self.prefix = f"{self.base}/web"
        for name in fixtures:
            for item in interactions(name):
                response = item["response"]
                headers = {k: self.local(v) for k, v in response["headers"].items()}
                body = self.local(response["body"]).encode("utf-8")
                self.recorded.setdefault(key_of(item["request"]["uri"]), []).append(
                    (int(response["status"]), headers, body))

    def local(self, text: str) -> str:
        for origin in ARCHIVE_ORIGINS:
            text = text.replace(origin, self.base)
        return text

    def answer(self, key: str) -> Answer | None:
        if self.routes is not None:
            routed = self.routes(key)
            if routed is not None:
                return routed
        answers = self.recorded.get(key)
        if not answers:
            return None
        # Repeated requests get the recorded answers in order, the last one repeated.
        seen = self.hits[key]
        return answers[min(seen, len(answers)) - 1]

    def settings(self, **overrides: Any) -> Any:
        from pagetrail.tools.settings import Settings

        options: dict[str, Any] = {
            "archives": [self.prefix], "retries": 0, "connect_timeout": 2, "read_timeout": 5,
            "allow_hosts": ["127.0.0.1"], "no_proxy": ["127.0.0.1"]}
        options.update(overrides)
        return Settings(**options)

    def close(self) -> None:
        self.server.close()

    def __enter__(self) -> ArchiveReplay:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def cdx_rows(*rows: tuple[str, str, str, str]) -> Answer:
    """A CDX JSON answer (the Internet Archive's table) listing (timestamp, original, status,
    mime) rows — the listing around a recorded capture, built from the recording's URI."""
    table: list[list[str]] = [["urlkey", "timestamp", "original", "mimetype", "statuscode"]]
    table += [["-", ts, original, mime, status] for ts, original, status, mime in rows]
    return 200, {"content-type": "application/json"}, json.dumps(table).encode()


def recorded_capture(uri: str) -> tuple[str, str]:
    """(timestamp, original URL) of a recorded `…/web/{ts}id_/{url}` request URI."""
    rest = urlsplit(uri).path.split("/web/", 1)[1]
    stamp, _, original = rest.partition("/")
    return stamp.removesuffix("id_"), original + (f"?{urlsplit(uri).query}"
                                                  if urlsplit(uri).query else "")


def recorded(name: str, index: int = 0) -> Answer:
    """(status, headers, body) of one recorded answer."""
    response = interactions(name)[index]["response"]
    return (int(response["status"]), dict(response["headers"]),
            response["body"].encode("utf-8"))
