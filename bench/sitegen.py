"""A generated link-rot benchmark site, served on 127.0.0.1 (deterministic from a seed).

Pages `/` and `/p/{i}.html` (i = 1 … pages-1), each with `links_per_page` links, listed in
/sitemap.xml. Link targets, by share:
  live page 70 % · 404 10 % · 410 3 % · 301 → live page 7 % · slow 200 (0.2 s) 4 %
  · soft 404 (200 "Page not found" for any /missing/*) 3 % · 302 → 404 3 %
The server is a small asyncio HTTP/1.1 server with keep-alive (GET and HEAD), fast enough
not to be what a checker waits for. `truth()` is the set of dead link URLs (soft 404s
included), the yardstick for every checker's dead set.

Run alone: python bench/sitegen.py --port 8765
"""

from __future__ import annotations

import argparse
import asyncio
import random
from dataclasses import dataclass, field

SLOW_SECONDS = 0.2
SLOW_PAGES = 150
KINDS = (("live", 0.70), ("dead", 0.10), ("gone", 0.03), ("redirect", 0.07), ("slow", 0.04),
         ("soft404", 0.03), ("redirect_dead", 0.03))


@dataclass
class SiteSpec:
    pages: int = 5000
    links_per_page: int = 4
    seed: int = 42
    links: dict[str, list[str]] = field(default_factory=dict)  # page path → link paths

    def page_paths(self) -> list[str]:
        return ["/"] + [f"/p/{i}.html" for i in range(1, self.pages)]


def _target(rng: random.Random, pages: int) -> str:
    kind = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
    # kind → (first number, one past the last, path template); redirect_dead is /moved/
    first, stop, template = {
        "live": (1, pages, "/p/{}.html"),
        "dead": (0, 1000, "/gone/{}.html"),
        "gone": (0, 200, "/removed/{}"),
        "redirect": (1, min(pages, 1000), "/old/{}"),
        "slow": (0, SLOW_PAGES, "/slow/{}.html"),
        "soft404": (0, 300, "/missing/{}.html"),
    }.get(kind, (0, 200, "/moved/{}"))
    return template.format(rng.randrange(first, stop))


def build_site(pages: int = 5000, links_per_page: int = 4, seed: int = 42) -> SiteSpec:
    spec = SiteSpec(pages=pages, links_per_page=links_per_page, seed=seed)
    rng = random.Random(seed)
    for path in spec.page_paths():
        spec.links[path] = [_target(rng, pages) for _ in range(links_per_page)]
    return spec


def is_dead_path(path: str) -> bool:
    return path.startswith(("/gone/", "/removed/", "/missing/", "/moved/"))


def truth(spec: SiteSpec, base: str) -> set[str]:
    return {base + p for links in spec.links.values() for p in links if is_dead_path(p)}


def _html(title: str, body: str) -> bytes:
    return (f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"{body}</body></html>").encode()


def render_page(spec: SiteSpec, path: str) -> bytes:
    items = "".join(f'<p>Read <a href="{href}">about item {n}</a> in our notes on topic '
                    f"{n}.</p>" for n, href in enumerate(spec.links[path]))
    return _html(f"Page {path}", f"<p>Notes and references for {path}.</p>{items}")


Answer = tuple[int, list[tuple[str, str]], bytes, float]
HTML = [("Content-Type", "text/html; charset=utf-8")]


def answer(spec: SiteSpec, path: str) -> Answer:
    path = path.split("?", 1)[0]
    if path in spec.links:
        return 200, HTML, render_page(spec, path), 0.0
    if path == "/robots.txt":
        return 200, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /admin/\n", 0.0
    if path == "/sitemap.xml":
        locs = "".join(f"<url><loc>{{base}}{p}</loc></url>" for p in spec.page_paths())
        return 200, [("Content-Type", "application/xml")], (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{locs}</urlset>").encode(), 0.0
    if path.startswith("/old/") and 0 < _index(path) < spec.pages:
        return 301, [("Location", f"/p/{path.rsplit('/', 1)[1]}.html")], b"", 0.0
    if path.startswith("/moved/"):
        return 302, [("Location", f"/gone/x{path.rsplit('/', 1)[1]}.html")], b"", 0.0
    if path.startswith("/slow/") and _index(path) in range(SLOW_PAGES):
        return 200, HTML, _html("Slow page", "<p>Worth the wait.</p>"), SLOW_SECONDS
    if path.startswith("/missing/"):
        return 200, HTML, _html("Page not found",
                                "<p>Sorry, this page does not exist.</p>"), 0.0
    if path.startswith("/removed/"):
        return 410, HTML, _html("Gone", "<p>Removed.</p>"), 0.0
    return 404, HTML, _html("404 Not Found", "<p>No such page.</p>"), 0.0


def _index(path: str) -> int:
    """The number in /kind/{n}.html (-1 if none): only generated numbers exist."""
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    return int(stem) if stem.isdigit() else -1


class _Protocol(asyncio.Protocol):
    def __init__(self, spec: SiteSpec, base: str) -> None:
        self.spec = spec
        self.base = base
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.queue: asyncio.Queue[tuple[str, str, bool] | None] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._respond())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) < 2:
                continue
            close = any(line.lower().startswith("connection:") and "close" in line.lower()
                        for line in lines[1:])
            self.queue.put_nowait((parts[0], parts[1], close))

    def connection_lost(self, exc: Exception | None) -> None:
        self.queue.put_nowait(None)

    async def _respond(self) -> None:
        while (item := await self.queue.get()) is not None:
            method, target, close = item
            path = target.split("://", 1)[-1]
            path = path[path.find("/"):] if not target.startswith("/") else target
            status, headers, body, delay = answer(self.spec, path)
            if path == "/sitemap.xml":
                body = body.replace(b"{base}", self.base.encode())
            if delay:
                await asyncio.sleep(delay)
            reason = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found",
                      410: "Gone"}.get(status, "OK")
            # "LinkChecker:" lets linkchecker exceed its default 10 requests/s per host.
            out = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}",
                   "LinkChecker: allow"]
            out += [f"{k}: {v}" for k, v in headers]
            if close:
                out.append("Connection: close")
            payload = ("\r\n".join(out) + "\r\n\r\n").encode() + (b"" if method == "HEAD" else body)
            if self.transport is None or self.transport.is_closing():
                return
            self.transport.write(payload)
            if close:
                self.transport.close()
                return


async def serve(spec: SiteSpec, port: int, ready: object | None = None) -> None:
    base = f"http://127.0.0.1:{port}"
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Protocol(spec, base), "127.0.0.1", port,
                                      backlog=1024)
    if ready is not None:
        ready.set()  # type: ignore[attr-defined]
    async with server:
        await server.serve_forever()


def serve_forever(port: int, pages: int, links_per_page: int, seed: int,
                  ready: object | None = None) -> None:
    asyncio.run(serve(build_site(pages, links_per_page, seed), port, ready))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--links-per-page", type=int, default=4)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    serve_forever(args.port, args.pages, args.links_per_page, args.seed)
