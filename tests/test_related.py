"""Related archived pages: the ranking equation by hand, and the whole path against a small
wayback-style archive served on 127.0.0.1 (CDX + raw captures) through the real memento
primitive."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest
from loopback import Loopback, QuietHandler
from test_classify import write_directory_file

from pagetrail.cli.main import main
from pagetrail.tools.content.uritokens import similarity_tokens
from pagetrail.tools.errors import ConfigError, InvalidURL, ModelMissing
from pagetrail.tools.learning.classify import load_candidates, train
from pagetrail.tools.learning.related import (
    RELATED_NOTE,
    archival_quality,
    embedded_resources,
    jaccard,
    normalise_weights,
    popularity,
    preselect,
    rank_archived,
    rank_score,
    recommend_archived,
    temporal_similarity,
)
from pagetrail.tools.models import Memento
from pagetrail.tools.settings import Settings

NOW = datetime(2026, 1, 1, tzinfo=UTC)


# --- the equation on hand-computed inputs -------------------------------------------------


def test_temporal_similarity_by_hand():
    # span 1996-01-01 → 2026-01-01 = 10958 days; gap 2014-03-01 → 2014-02-26 = 3 days
    t = temporal_similarity(datetime(2014, 3, 1, tzinfo=UTC), datetime(2014, 2, 26, tzinfo=UTC),
                            now=NOW)
    assert t == pytest.approx(1 - 3 / 10958)
    assert temporal_similarity(NOW, datetime(1996, 1, 1, tzinfo=UTC), now=NOW) == 0.0
    # naive datetimes are read as UTC; symmetric in its arguments
    assert temporal_similarity(datetime(2010, 1, 1), datetime(2012, 1, 1, tzinfo=UTC), now=NOW) \
        == temporal_similarity(datetime(2012, 1, 1), datetime(2010, 1, 1, tzinfo=UTC), now=NOW)


def test_popularity_by_hand():
    assert popularity(0) == 0.0
    assert popularity(99, reference=9999) == pytest.approx(math.log(100) / math.log(10000))
    assert popularity(10**7, reference=1000) == 1.0


def test_uri_jaccard_of_the_paper_example():
    a = similarity_tokens("http://odu.edu/compsci")  # odu, edu, compsci (+ comp, sci split)
    b = similarity_tokens("http://cs.odu.edu/")  # odu, edu
    assert {"odu", "edu"} <= a and b == {"odu", "edu"}
    assert jaccard(a, b) == pytest.approx(2 / len(a))
    assert jaccard(frozenset(), frozenset()) == 0.0


def test_archival_quality_and_equation_by_hand():
    assert archival_quality(3, 4) == 0.75
    assert archival_quality(0, 0) == 1.0  # nothing embedded, nothing missing
    weights = normalise_weights({"temporal": 2, "popularity": 1, "uri_similarity": 1,
                                 "archival_quality": 0})
    assert weights == {"temporal": 0.5, "popularity": 0.25, "uri_similarity": 0.25,
                       "archival_quality": 0.0}
    components = {"temporal": 0.9, "popularity": 0.4, "uri_similarity": 0.2,
                  "archival_quality": 1.0}
    assert rank_score(components, weights) == pytest.approx(0.5 * 0.9 + 0.25 * 0.4 + 0.25 * 0.2)
    equal = normalise_weights(None)
    assert rank_score(components, equal) == pytest.approx((0.9 + 0.4 + 0.2 + 1.0) / 4)
    # an unknown component counts as 0, not as a guess
    assert rank_score({**components, "archival_quality": None}, equal) == \
        pytest.approx((0.9 + 0.4 + 0.2) / 4)


@pytest.mark.parametrize("bad", [{"alexa": 1.0}, {"temporal": -1.0},
                                 {"temporal": 0, "popularity": 0}, {"temporal": float("nan")}])
def test_bad_weights_are_named_errors(bad):
    with pytest.raises(ConfigError):
        normalise_weights(bad)


def test_embedded_resources_resolved_and_bounded():
    html = b"""<html><head><link rel="stylesheet" href="/s.css"><link rel="canonical" href="/x">
    <script src="app.js"></script></head><body><img src="data:image/png;base64,AA">
    <img src="http://cdn.example/a.png"><img src="/s.css"><iframe src="javascript:void(0)">
    </iframe></body></html>"""
    assert embedded_resources(html, "http://site.example/dir/page") == [
        "http://site.example/s.css", "http://site.example/dir/app.js", "http://cdn.example/a.png"]
    many = "".join(f'<img src="/{i}.png">' for i in range(50))
    assert len(embedded_resources(many, "http://a.example/", limit=8)) == 8


def test_preselect_prefers_lexically_close_hosts():
    hosts = ["zebra.com", "golfworld.org", "golfclub.com", "knitting.net"]
    assert preselect("http://golfclubs.example/", hosts, 2) == ["golfclub.com", "golfworld.org"]


async def test_rank_archived_drops_unarchived_and_reports_components():
    captured = {
        "http://near.example/": [("20140226090846", 200), ("20200101000000", 200)],
        "http://far.example/": [("20010101000000", 200)],
        "http://redirect.example/": [("20140301000000", 301)],  # a redirect is not a page
    }

    async def lookup(url: str) -> list[Memento]:
        return [Memento(original_url=url, memento_url=f"http://a/{ts}/{url}",
                        raw_url=f"http://a/{ts}id_/{url}", archive="http://a", status=status,
                        datetime=datetime.strptime(ts, "%Y%m%d%H%M%S").replace(tzinfo=UTC))
                for ts, status in captured.get(url, [])]

    at = datetime(2014, 3, 1, tzinfo=UTC)
    pages, archived, failures = await rank_archived(
        "http://lost.example/", [*captured, "http://never.example/"], lookup=lookup,
        fetch_capture=None, at=at, now=NOW, limit=5)
    assert archived == 2 and failures == []
    assert [p.url for p in pages] == ["http://near.example/", "http://far.example/"]
    near = pages[0]
    assert near.memento_url.endswith("/20140226090846/http://near.example/")  # closest to `at`
    assert near.components["temporal"] == pytest.approx(
        temporal_similarity(at, datetime(2014, 2, 26, 9, 8, 46, tzinfo=UTC), now=NOW))
    assert near.components["popularity"] == pytest.approx(popularity(2))
    assert near.components["archival_quality"] is None  # not measured: no capture fetcher
    assert near.to_dict()["kind"] == "related"


# --- the whole path against a local archive --------------------------------------------------


class _Archive:
    """Captures: original URL → list of (timestamp, html or None)."""

    def __init__(self) -> None:
        self.captures: dict[str, list[tuple[str, bytes | None]]] = {}
        self.requests: list[str] = []


def _handler(archive: _Archive) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            archive.requests.append(self.path)
            parts = urlsplit(self.path)
            if parts.path == "/coll/cdx":
                url = parse_qs(parts.query)["url"][0]
                rows = [json.dumps({"urlkey": url, "timestamp": ts, "original": url,
                                    "statuscode": "200", "mimetype": "text/html"})
                        for ts, _ in archive.captures.get(url, [])]
                return self._send(200, "\n".join(rows).encode(), "text/plain")
            prefix = "/coll/"
            if self.path.startswith(prefix) and "id_/" in self.path:
                ts, _, original = self.path[len(prefix):].partition("id_/")
                for stamp, body in archive.captures.get(original, []):
                    if stamp == ts and body is not None:
                        return self._send(200, body, "text/html")
            return self._send(404, b"not archived", "text/plain")

        def _send(self, status: int, body: bytes, mime: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", mime)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@pytest.fixture
def local_archive() -> Iterator[tuple[_Archive, str]]:
    archive = _Archive()
    server = Loopback(_handler(archive))
    try:
        yield archive, f"{server.base}/coll"
    finally:
        server.close()


@pytest.fixture
def trained(tmp_path_factory) -> dict[str, list[str]]:
    data = write_directory_file(tmp_path_factory.mktemp("data") / "export.tsv")
    train(data, kind="nb")
    return load_candidates()


async def test_recommend_archived_with_the_memento_primitive(local_archive, trained, monkeypatch):
    archive, prefix = local_archive
    sports = trained["sports"]
    complete, damaged, old = sports[0], sports[1], sports[2]
    page = b'<html><body><img src="/logo.png"><script src="/app.js"></script></body></html>'
    archive.captures = {
        f"http://{complete}/": [("20140226090846", page)],
        f"http://{complete}/logo.png": [("20140226090900", b"")],
        f"http://{complete}/app.js": [("20140226090900", b"")],
        f"http://{damaged}/": [("20140226090846", page)],  # its resources were never archived
        f"http://{old}/": [("19990101000000", page)],
    }
    settings = Settings(archives=[prefix], allow_hosts=["127.0.0.1"], no_proxy=["127.0.0.1"],
                        retries=0)
    lost = "http://rugbytennisfans.example/club/fixtures"
    result = await recommend_archived(lost, at=datetime(2014, 3, 1, tzinfo=UTC), limit=5,
                                      settings=settings, pool=len(sports))
    assert result.category == "sports" and result.category_source == "classifier"
    assert result.note == RELATED_NOTE
    urls = [item.url for item in result.items]
    assert set(urls) == {f"http://{complete}/", f"http://{damaged}/", f"http://{old}/"}
    by_url = {item.url: item for item in result.items}
    assert by_url[f"http://{complete}/"].components["archival_quality"] == 1.0
    assert by_url[f"http://{damaged}/"].components["archival_quality"] == 0.0
    assert by_url[f"http://{complete}/"].score > by_url[f"http://{damaged}/"].score
    assert by_url[f"http://{old}/"].components["temporal"] < \
        by_url[f"http://{complete}/"].components["temporal"]
    assert [i.score for i in result.items] == sorted((i.score for i in result.items), reverse=True)
    assert result.looked_up == len(sports) and result.archived == 3
    assert all(r.startswith("/coll/") for r in archive.requests)


async def test_recommend_archived_bad_input_and_no_model(local_archive):
    with pytest.raises(InvalidURL):
        await recommend_archived("javascript:alert(1)")
    with pytest.raises(ModelMissing):
        await recommend_archived("http://golf.example/")


def test_cli_related_json(local_archive, trained, monkeypatch, capsys):
    archive, prefix = local_archive
    host = trained["health"][0]
    archive.captures = {f"http://{host}/": [("20200101000000", b"<html><body>x</body></html>")]}
    monkeypatch.setenv("PAGETRAIL_ARCHIVES", prefix)
    monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("PAGETRAIL_NO_PROXY", "127.0.0.1")
    from pagetrail.tools.settings import get_settings

    get_settings.cache_clear()
    # a listed host: its category comes from the data ("ontology"), as in the paper's step 1
    assert main(["related", f"http://{host}/gone/page", "--at", "2020-02-01", "--limit", "3",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["category"] == "health" and out["category_source"] == "ontology"
    assert out["items"] and all(item["kind"] == "related" for item in out["items"])
    assert set(out["items"][0]["components"]) == {"temporal", "popularity", "uri_similarity",
                                                  "archival_quality"}
    assert main(["related", "http://x.example/", "--at", "yesterday"]) == 2
