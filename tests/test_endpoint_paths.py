"""A user's URL never changes which path of a configured endpoint is requested (#20): every
endpoint (archive TimeMap/TimeGate/CDX/raw capture, HN, SearXNG, the CDX search engine) is a
loopback server that records the exact request line, reached through the real faces (the
CLI's main(), the MCP SDK client) with hostile paths, queries and fragments."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import unquote, urlsplit

import pytest
from loopback import Loopback, QuietHandler
from mcp import Client

from pagetrail.cli.main import main
from pagetrail.server.app import build_server
from pagetrail.tools.net.urls import endpoint_url, is_dot_segment, url_as_path_data
from pagetrail.tools.settings import Settings, get_settings

HOSTILE = [
    "http://8.8.8.8/x/../../../../../../admin/delete?all=1",
    "http://8.8.8.8/x/%2e%2e/%2E%2E/%2e%2E/admin/delete",
    "http://8.8.8.8/./x/.%2e/..;/..;/admin#frag/../../admin",
    "http://8.8.8.8/x/..%2f..%2f..%2fadmin",
    "http://8.8.8.8/x\\..\\..\\admin",
    "http://8.8.8.8/..",
    "http://8.8.8.8/a?../../admin=1&b=/../../x#../../y",
]
PREFIXES = ("/web/", "/cdx/search/cdx", "/hn/v1/", "/sx/")  # the /web layout's CDX too


class Recorder(Loopback):
    def __init__(self) -> None:
        self.lines: list[str] = []
        recorder = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                recorder.lines.append(self.requestline)
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            do_HEAD = do_GET

        super().__init__(Handler)

    def paths(self) -> list[str]:
        """The request targets received for this server (absolute-form through the proxy)."""
        found = []
        for line in self.lines:
            target = line.split(" ")[1]
            if target.startswith("http"):
                parts = urlsplit(target)
                if f"{parts.scheme}://{parts.netloc}" != self.base:
                    continue  # a user URL fetched through the proxy: not an endpoint
                target = target[len(self.base):]
            found.append(target)
        return found

    def assert_within_prefixes(self) -> None:
        paths = self.paths()
        assert paths, self.lines
        for target in paths:
            path = urlsplit(target).path
            assert path.startswith(PREFIXES), target
            for segment in path.split("/"):
                assert not is_dot_segment(unquote(segment)), target
                assert not is_dot_segment(segment), target


@pytest.fixture
def recorder(monkeypatch, tmp_path) -> Iterator[Recorder]:
    rec = Recorder()
    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'p.db'}")
    monkeypatch.setenv("PAGETRAIL_ARCHIVES", f"{rec.base}/web")
    monkeypatch.setenv("PAGETRAIL_HN_API_URL", f"{rec.base}/hn/v1")
    monkeypatch.setenv("PAGETRAIL_SEARXNG_URL", f"{rec.base}/sx?token=t0k")
    monkeypatch.setenv("PAGETRAIL_SEARCH_ENGINES", "searxng")
    monkeypatch.setenv("PAGETRAIL_PROXY", rec.base)  # user pages: never the internet
    monkeypatch.setenv("PAGETRAIL_RETRIES", "0")
    get_settings.cache_clear()
    try:
        yield rec
    finally:
        rec.close()


@pytest.mark.parametrize("url", HOSTILE)
@pytest.mark.parametrize("command", [["memento"], ["memento", "--list"], ["signature"],
                                     ["tags"], ["memento", "--redirects"]],
                         ids=lambda c: "-".join(c))
def test_cli_keeps_user_urls_inside_the_endpoints(recorder: Recorder, capsys, command,
                                                  url) -> None:
    status = main([*command, url])
    err = capsys.readouterr().err
    assert status in (0, 1, 2), err
    assert "Traceback" not in err
    recorder.assert_within_prefixes()


@pytest.mark.parametrize("query", ["../../../admin?x=1#y", "%2e%2e/%2e%2e/admin", "a&format=x"])
def test_search_queries_stay_data(recorder: Recorder, capsys, query) -> None:
    main(["search", query])
    capsys.readouterr()
    recorder.assert_within_prefixes()
    for target in recorder.paths():
        assert urlsplit(target).path == "/sx/search"
        assert "token=t0k" in target and target.count("format=") == 1


@pytest.mark.parametrize("url", HOSTILE[:4])
async def test_mcp_tools_keep_user_urls_inside_the_endpoints(recorder: Recorder, url) -> None:
    server = build_server(Settings())
    async with Client(server) as client:
        for tool in ("fetch_memento", "extract_signature", "get_tags"):
            await client.call_tool(tool, {"url": url})
    recorder.assert_within_prefixes()
    assert any(p.startswith("/hn/v1/search?") for p in recorder.paths())


@pytest.mark.parametrize("url", HOSTILE)
@pytest.mark.parametrize("base", ["http://h/web", "http://h/web/", "http://h/a/b/pywb/coll"])
def test_endpoint_url_never_leaves_the_prefix(url: str, base: str) -> None:
    for path in ("", "timemap/link/", "20190101000000id_/"):
        built = urlsplit(endpoint_url(base, path, data_url=url))
        prefix = urlsplit(base).path.rstrip("/") + "/"
        assert built.path.startswith(prefix)
        assert not any(is_dot_segment(s) for s in built.path.split("/"))
        assert not built.fragment


def test_path_data_is_the_same_resource_as_a_browser_would_fetch() -> None:
    assert url_as_path_data("http://a.example/x/../y/./z?q=1#f") == "http://a.example/y/z?q=1"
    assert url_as_path_data("http://a.example/%2E%2e/y") == "http://a.example/y"
    assert url_as_path_data("http://a.example/a/b/..") == "http://a.example/a/"
    assert url_as_path_data("https://a.example") == "https://a.example"
