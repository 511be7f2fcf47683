"""Build small testbed worlds in code (for tests): `WorldBuilder`, and the shared tiny world.

    builder = WorldBuilder(tmp_path / "w")
    builder.host("news.example", not_found="soft404", not_found_html="<p>oops</p>")
    builder.page("https://news.example/", "<title>News</title>…")
    builder.capture("https://news.example/old", "20190601000000", html="…")
    builder.write()

`build_tiny_world(dir)` writes the world every testbed test shares; `TinyWorld` names its
URLs so tests read as what they check. Keep its content stable: other tests rely on it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

_HTML = "text/html; charset=utf-8"


@dataclass
class _Capture:
    url: str
    timestamp: str  # 14 digits
    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class WorldBuilder:
    root: Path
    name: str = "tiny"
    then: str = "2019-06-01T00:00:00Z"
    now: str = "2026-11-01T00:00:00Z"
    collection: str = "world"
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    live: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    social_posts: list[dict[str, Any]] = field(default_factory=list)
    captures: list[_Capture] = field(default_factory=list)
    format: int = 1
    search: dict[str, Any] | None = None  # world.json `search` (format 2)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)

    # --- the live web -------------------------------------------------------------------
    def blob(self, body: bytes, suffix: str = ".html") -> str:
        """Store a body gzip-compressed under its content hash; return its blobs/ path."""
        digest = hashlib.sha256(body).hexdigest()
        relative = f"{digest[:2]}/{digest}{suffix}.gz"
        target = self.root / "blobs" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.compress(body, mtime=0))
        return relative

    def host(self, name: str, state: str = "up", *, not_found: str = "404",
             latency_ms: int = 0, flaky: float = 0.0,
             not_found_html: str | None = None) -> WorldBuilder:
        spec: dict[str, Any] = {"state": state}
        if state == "up":
            spec["not_found"] = not_found
            if latency_ms:
                spec["latency_ms"] = latency_ms
            if flaky:
                spec["flaky"] = flaky
            if not_found_html is not None:
                spec["not_found_blob"] = self.blob(not_found_html.encode())
        self.hosts[name] = spec
        return self

    def resource(self, url: str, status: int, headers: dict[str, str],
                 body: bytes | None = None, suffix: str = ".html") -> WorldBuilder:
        item: dict[str, Any] = {"url": url, "status": status, "headers": headers}
        if body is not None:
            item["blob"] = self.blob(body, suffix)
        self.live.append(item)
        return self

    def page(self, url: str, html: str, *, status: int = 200, indexed: bool | None = None,
             popularity: int | None = None) -> WorldBuilder:
        self.resource(url, status, {"Content-Type": _HTML}, html.encode())
        if indexed is not None:
            self.live[-1]["indexed"] = indexed
        if popularity is not None:
            self.live[-1]["popularity"] = popularity
        return self

    def text(self, url: str, text: str) -> WorldBuilder:
        return self.resource(url, 200, {"Content-Type": "text/plain"}, text.encode(), ".txt")

    def redirect(self, url: str, location: str, status: int = 301) -> WorldBuilder:
        return self.resource(url, status, {"Location": location})

    # --- then: the archive --------------------------------------------------------------
    def capture(self, url: str, timestamp: str, *, html: str = "", status: int = 200,
                location: str | None = None) -> WorldBuilder:
        headers = [("Content-Type", _HTML)]
        if location:
            headers.append(("Location", location))
        self.captures.append(_Capture(url, timestamp, status, headers, html.encode()))
        return self

    # --- annotations and cases ----------------------------------------------------------
    def social(self, url: str, title: str, tags: list[str], points: int = 1,
               created: str | None = None) -> WorldBuilder:
        self.social_posts.append({"url": url, "title": title, "tags": tags, "points": points,
                                  "created": created})
        return self

    def case(self, case_id: str, url: str, category: str, kind: str, urls: list[str], *,
             archived: bool = False, source: dict[str, str] | None = None,
             link_date: str | None = None, drifted: bool | None = None) -> WorldBuilder:
        expect: dict[str, Any] = {"kind": kind, "urls": urls, "archived": archived}
        if drifted is not None:
            expect["drifted"] = drifted
        self.cases.append({"id": case_id, "url": url, "source": source, "link_date": link_date,
                           "category": category, "expect": expect})
        return self

    # --- output -------------------------------------------------------------------------
    def write(self) -> Path:
        meta: dict[str, Any] = {"format": self.format, "name": self.name, "then": self.then,
                                "now": self.now, "archive_collection": self.collection,
                                "hosts": self.hosts}
        if self.search is not None:
            meta["search"] = self.search
        (self.root / "world.json").write_text(json.dumps(meta, indent=1))
        _write_jsonl(self.root / "live.jsonl", self.live)
        _write_jsonl(self.root / "cases.jsonl", self.cases)
        _write_jsonl(self.root / "social.jsonl", self.social_posts)
        if self.captures:
            (self.root / "archive").mkdir(exist_ok=True)
            (self.root / "archive" / f"{self.name}.warc.gz").write_bytes(
                warc_bytes(self.captures))
        return self.root


def _write_jsonl(path: Path, items: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items))


def warc_bytes(captures: list[_Capture]) -> bytes:
    """A gzipped WARC/1.0 file: a request and a response record per capture."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    for capture in captures:
        date = datetime.strptime(capture.timestamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        warc_date = date.strftime("%Y-%m-%dT%H:%M:%SZ")
        request = writer.create_warc_record(
            capture.url, "request", payload=io.BytesIO(b""),
            http_headers=StatusAndHeaders(f"GET {_path_of(capture.url)} HTTP/1.1",
                                          [("Host", _host_of(capture.url))], is_http_request=True),
            warc_headers_dict={"WARC-Date": warc_date})
        headers = [*capture.headers, ("Content-Length", str(len(capture.body)))]
        response = writer.create_warc_record(
            capture.url, "response", payload=io.BytesIO(capture.body),
            http_headers=StatusAndHeaders(f"{capture.status} {_reason(capture.status)}",
                                          headers, protocol="HTTP/1.1"),
            warc_headers_dict={"WARC-Date": warc_date})
        for record in (response, request):
            writer.write_record(record)
            record.raw_stream.close()  # warcio buffered it in a temporary file
    return out.getvalue()


def _path_of(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _host_of(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).netloc


def _reason(status: int) -> str:
    from http import HTTPStatus

    return HTTPStatus(status).phrase


# --- the shared tiny world --------------------------------------------------------------

@dataclass(frozen=True)
class TinyWorld:
    """What build_tiny_world() writes (see tests/plugin_testbed.py for the full picture)."""

    path: Path
    collection: str = "world"
    # live, host www.news.example (up, not_found 404)
    news_root: str = "https://www.news.example/"
    news_http_root: str = "http://www.news.example/"          # 301 → news_root
    moved_to: str = "https://www.news.example/energy/solar-farms-double"
    live_redirect: str = "https://www.news.example/old/solar"  # 301 → moved_to
    wind_page: str = "https://www.news.example/energy/wind-turbines-offshore"
    news_robots: str = "https://www.news.example/robots.txt"
    # dead on news (404 now), archived then
    moved_from: str = "https://www.news.example/2019/06/solar-farms"
    moved_from_capture: str = "20190601000000"     # 200, the original article
    moved_from_redirect_capture: str = "20200115000000"  # 301 → moved_to (a redirect memento)
    archived_only: str = "https://www.news.example/2019/07/heat-pump-grants"
    archived_only_capture: str = "20190710000000"
    error_capture_url: str = "https://www.news.example/2019/08/broken-link"
    error_capture: str = "20190805000000"          # a 404 capture
    # plain http host blog.example.org (up, not_found 410)
    blog_page: str = "http://blog.example.org/energy-links"
    blog_root: str = "http://blog.example.org/"
    # soft.example (soft404), home.example (home_redirect), parked.example (parked)
    soft_root: str = "https://soft.example/"
    soft_not_found_title: str = "Page not found - Soft Example"
    home_root: str = "https://home.example/"
    home_page: str = "https://home.example/products/garden-widget"
    parked_root: str = "https://parked.example/"
    parking_title: str = "parked.example - This domain may be for sale"
    # unreachable hosts
    nxdomain_url: str = "https://gone.example/page"
    unlisted_url: str = "https://not-in-world.example/"
    refused_url: str = "https://refused.example/"
    timeout_url: str = "https://timeout.example/"
    tls_error_url: str = "https://badtls.example/"
    # unreliable but up
    flaky_url: str = "https://flaky.example/"       # flaky 0.5
    slow_url: str = "https://slow.example/"         # latency_ms 300
    # social (served as hn.algolia.com)
    social_url: str = "https://www.news.example/2019/06/solar-farms"
    social_title: str = "Solar farms double in a year"
    hosts: tuple[str, ...] = field(default=(
        "www.news.example", "blog.example.org", "soft.example", "home.example",
        "parked.example", "flaky.example", "slow.example", "gone.example",
        "refused.example", "timeout.example", "badtls.example"))


def _article(title: str, text: str, links: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>"
            f"<body><header><a href=\"/\">Home</a></header><main><h1>{title}</h1>"
            f"<p>{text}</p>{links}</main><script>var tracking = 'scriptword';</script>"
            f"</body></html>")


def build_tiny_world(root: Path) -> TinyWorld:
    t = TinyWorld(path=Path(root))
    b = WorldBuilder(Path(root), name="tiny")
    solar = ("Solar farms doubled their output in a single year across the midwest, "
             "as photovoltaic prices kept falling and utilities signed new contracts.")
    b.host("www.news.example", not_found="404")
    b.page(t.news_root, _article("Example News", "Energy, climate and technology news.",
                                 f'<a href="{t.moved_to}">Solar farms double</a>'))
    b.redirect(t.news_http_root, t.news_root)
    b.page(t.moved_to, _article("Solar farms double in a year", solar))
    b.redirect(t.live_redirect, t.moved_to)
    b.page(t.wind_page, _article("Offshore wind turbines get bigger",
                                 "Offshore wind turbines now reach fifteen megawatts; "
                                 "the north sea hosts the largest parks."))
    b.text(t.news_robots, "User-agent: *\nAllow: /\n")
    b.capture(t.moved_from, t.moved_from_capture,
              html=_article("Solar farms double in a year", solar))
    b.capture(t.moved_from, t.moved_from_redirect_capture, status=301, location=t.moved_to)
    b.capture(t.archived_only, t.archived_only_capture,
              html=_article("Heat pump grants announced",
                            "The ministry announced grants for heat pumps in old houses."))
    b.capture(t.error_capture_url, t.error_capture, status=404,
              html=_article("Not found", "No such page."))

    b.host("blog.example.org", not_found="410")
    b.page(t.blog_root, _article("Energy blog", "Links about energy."))
    b.page(t.blog_page, _article("Energy links", "Reading list about the solar farm boom.",
                                 f'<a href="{t.moved_from}">solar farm boom</a>'))
    b.capture(t.blog_page, "20190701000000",
              html=_article("Energy links", "Reading list about the solar farm boom."))

    b.host("soft.example", not_found="soft404",
           not_found_html=_article(t.soft_not_found_title, "Sorry, nothing here."))
    b.page(t.soft_root, _article("Soft Example", "A site whose missing pages answer 200."))
    b.host("home.example", not_found="home_redirect")
    b.page(t.home_root, _article("Home Example", "Garden tools and widgets."))
    b.page(t.home_page, _article("Garden widget", "A widget for the garden, new model."))
    b.host("parked.example", not_found="parked")
    b.page(t.parked_root, _article(t.parking_title, "This domain name may be for sale."))
    b.host("flaky.example", not_found="404", flaky=0.5)
    b.page(t.flaky_url, _article("Flaky Example", "Sometimes up."))
    b.host("slow.example", not_found="404", latency_ms=300)
    b.page(t.slow_url, _article("Slow Example", "Always late."))
    for name, state in (("gone.example", "nxdomain"), ("refused.example", "refused"),
                        ("timeout.example", "timeout"), ("badtls.example", "tls_error")):
        b.host(name, state)

    b.social(t.social_url, t.social_title, ["solar", "energy"], points=40,
             created="2019-06-03T10:00:00Z")
    source = {"url": t.blog_page, "anchor": "solar farm boom",
              "context": "a good overview of the solar farm boom in the midwest"}
    b.case("t001", t.moved_from, "moved_same_host", "moved", [t.moved_to], archived=True,
           source=source, link_date="2019-07-01T00:00:00Z")
    b.case("t002", t.archived_only, "gone", "archived", [], archived=True)
    b.case("t003", t.nxdomain_url, "gone", "none", [])
    b.case("t004", t.slow_url, "alive", "alive", [t.slow_url])
    b.write()
    return t
