"""Bot walls, challenges, 999, client-dependent 403s and 429s (#26 item 1), and redirects
that are not moves (item 2): recorded answers replayed through the real fetch layer on
loopback. Fixtures and their sources: tests/fixtures/realweb/SOURCES.md."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from loopback import GetHeadHandler, Loopback

from pagetrail.cli.main import main
from pagetrail.tools.linkcheck.check import check_link
from pagetrail.tools.linkcheck.linkstate import LinkState, Policy, advance
from pagetrail.tools.linkcheck.redirects import redirect_kind
from pagetrail.tools.linkcheck.walls import detect_wall
from pagetrail.tools.models import Hop
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "realweb"
Answer = tuple[int, list[tuple[str, str]], bytes]


def recorded(name: str) -> Answer:
    """A trimmed VCR interaction (html-proofer's cassettes) as (status, headers, body)."""
    data = json.loads((FIXTURES / name).read_text())
    response = data["response"]
    return (response["status"], [(k, v) for k, v in response["headers"]
                                 if k.lower() != "content-length"],
            response["body"].encode("utf-8"))


def page(name: str, status: int, *headers: tuple[str, str]) -> Answer:
    return (status, [("Content-Type", "text/html; charset=UTF-8"), *headers],
            (FIXTURES / name).read_bytes())


def handmade(key: str) -> Answer:
    entry = json.loads((FIXTURES / "handmade_walls.json").read_text())[key]
    return entry["status"], [tuple(h) for h in entry["headers"]], entry["body"].encode()


class Replay(Loopback):
    """Serves recorded answers by path, headers as recorded (repeated Set-Cookie kept)."""

    def __init__(self, routes: dict[str, Answer]) -> None:
        self.routes = routes
        self.methods: list[tuple[str, str]] = []
        replay = self

        class Handler(GetHeadHandler):
            def answer(self, with_body: bool) -> None:
                path = self.path.split("?", 1)[0]
                replay.methods.append((self.command, path))
                status, headers, body = replay.routes.get(
                    path, (404, [("Content-Type", "text/html")], b"<title>Not Found</title>"))
                self.send_response_only(status)  # no Server/Date of our own: as recorded
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

        super().__init__(Handler)


@contextmanager
def replay(routes: dict[str, Answer]) -> Iterator[Replay]:
    server = Replay(routes)
    try:
        yield server
    finally:
        server.close()


def settings(**extra: object) -> Settings:
    values: dict[str, object] = {"allow_hosts": ["127.0.0.1"], "connect_timeout": 2.0,
                                 "read_timeout": 3.0, "total_timeout": 6.0, "retries": 0}
    values.update(extra)
    return Settings(**values)  # type: ignore[arg-type]


async def check(url: str):  # type: ignore[no-untyped-def]
    async with Fetcher(settings()) as fetcher:
        return await check_link(url, fetcher)


WALLS = {
    "/company/netapp": (recorded("htmlproofer_linkedin_999.json"), "linkedin"),
    "/cf/js": (page("cloudscraper_js_challenge_11_12_2019.html", 503, ("Server", "cloudflare")),
               "cloudflare"),
    "/cf/captcha": (page("cloudscraper_recaptcha_challenge_12_12_2019.html", 403,
                         ("Server", "cloudflare")), "cloudflare"),
    "/px/403": (page("jscryptominer_adorama_perimeterx.html", 403), "perimeterx"),
    "/px/200": (page("jscryptominer_adorama_perimeterx.html", 200), "perimeterx"),
    "/s3/object.deb": (recorded("htmlproofer_s3_403.json"), "access_denied"),
    "/changing-author-info/": (recorded("htmlproofer_github_help_403.json"), "access_denied"),
    "/cf/managed": (handmade("cloudflare_managed_challenge"), "cloudflare"),
    "/akamai/products/": (handmade("akamai_access_denied"), "akamai"),
    "/aws/waf": (handmade("aws_waf_challenge"), "aws_waf"),
    "/dd/captcha": (handmade("datadome_captcha"), "datadome"),
    "/imperva/200": (handmade("imperva_incident"), "imperva"),
    "/busy/page": ((429, [("Retry-After", "120"), ("Content-Type", "text/html")],
                    b"<title>Too Many Requests</title>"), "rate_limit"),
}


async def test_every_wall_is_blocked_with_its_cause_never_dead() -> None:
    with replay({path: answer for path, (answer, _by) in WALLS.items()}) as srv:
        results = {path: await check(srv.base + path) for path in WALLS}
    for path, (_answer, by) in WALLS.items():
        result = results[path]
        assert result.verdict == "blocked", (path, result.verdict, result.reason)
        assert not result.is_dead
        assert result.blocked is not None and result.blocked.by == by, (path, result.blocked)
        assert result.blocked.evidence and result.evidence["blocked"]["by"] == by
    # LinkedIn's recorded 999 names LinkedIn by its own headers (x-li-*), not by the host.
    assert "x-li-" in results["/company/netapp"].blocked.evidence  # type: ignore[union-attr]
    assert "AmazonS3" in results["/s3/object.deb"].blocked.evidence  # type: ignore[union-attr]
    assert "retry-after: 120" in results["/busy/page"].blocked.evidence  # type: ignore[union-attr]


async def test_a_page_about_walls_on_cloudflare_is_alive() -> None:
    with replay({"/blog/walls": handmade("article_about_walls")}) as srv:
        result = await check(srv.base + "/blog/walls")
    assert result.verdict == "ok" and result.blocked is None


def test_real_pages_served_by_cloudflare_are_no_wall() -> None:
    pages = sorted((Path(__file__).parent / "fixtures" / "pages").glob("*.html.gz"))
    assert pages
    for path in pages:
        body = gzip.decompress(path.read_bytes())
        for status in (200, 404):
            assert detect_wall(status, {"server": "cloudflare", "cf-ray": "1-FRA"}, body) \
                is None, path.name


def test_headers_alone_decide_a_head_answer() -> None:
    assert detect_wall(403, {"cf-mitigated": "challenge"}, b"").by == "cloudflare"  # type: ignore[union-attr]
    assert detect_wall(405, {"x-amzn-waf-action": "captcha"}, b"").by == "aws_waf"  # type: ignore[union-attr]
    assert detect_wall(403, {"x-datadome": "protected"}, b"").by == "datadome"  # type: ignore[union-attr]
    assert detect_wall(503, {"server": "cloudflare"}, b"<title>Error 522</title>") is None
    assert detect_wall(200, {}, b"<p>please click verify, captcha</p>") is None


def test_cli_check_json_names_the_wall(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    with replay({"/company/netapp": recorded("htmlproofer_linkedin_999.json")}) as srv:
        monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
        monkeypatch.setenv("PAGETRAIL_RETRIES", "0")
        assert main(["check", srv.base + "/company/netapp", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "blocked" and data["status"] == 999
    assert data["blocked"]["by"] == "linkedin"


def test_blocked_is_no_observation_for_dead_over_time() -> None:
    policy = Policy(failures=2, days=1)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    state = advance(LinkState(), "dead", start, policy)
    assert state.state == "suspect"
    for day in range(1, 6):
        state = advance(state, "blocked", start + timedelta(days=day), policy)
    assert state.state == "suspect" and state.failures == 1 and state.history == "F"


# --- redirects that are not moves ---------------------------------------------------------

LOGIN_PAGE = b"<html><head><title>Sign in</title></head><body><form>user pass</form></body></html>"
ARTICLE = (b"<html><head><title>Solar farms double</title></head><body><h1>Solar farms double"
           b"</h1>" + b"<p>Utility-scale solar capacity doubled in a year.</p>" * 30
           + b"</body></html>")
HTML = [("Content-Type", "text/html; charset=utf-8")]


def to(location: str, status: int = 301) -> Answer:
    return status, [("Location", location)], b""


async def test_redirects_to_login_sso_consent_are_named_and_not_moves() -> None:
    routes: dict[str, Answer] = {
        "/articles/42": to("/authorize?client_id=pub&response_type=code&redirect_uri="
                           "https%3A%2F%2Fexample.org%2Farticles%2F42", 303),
        "/authorize": (200, HTML, LOGIN_PAGE),
        "/docs/guide": to("/login?returnTo=%2Fdocs%2Fguide", 301),
        "/login": (200, HTML, LOGIN_PAGE),
        "/news/story": to("/consent?sessionId=abc", 302),
        "/consent": (200, HTML, b"<title>Before you continue</title><p>We use cookies</p>"),
        "/old/solar": to("/new/solar-farms-double", 301),
        "/new/solar-farms-double": (200, HTML, ARTICLE),
        "/de/produkte/alt": to("/en-us/", 301),
        "/en-us/": (200, HTML, ARTICLE),
    }
    with replay(routes) as srv:
        sso = await check(srv.base + "/articles/42")
        login = await check(srv.base + "/docs/guide")
        consent = await check(srv.base + "/news/story")
        moved = await check(srv.base + "/old/solar")
        locale = await check(srv.base + "/de/produkte/alt")
    assert (sso.verdict, sso.redirect_kind, sso.blocked.by) == ("blocked", "sso", "sso")  # type: ignore[union-attr]
    assert (login.verdict, login.redirect_kind) == ("blocked", "login")  # not "redirected"
    assert (consent.verdict, consent.redirect_kind) == ("blocked", "consent")
    assert moved.verdict == "redirected" and moved.redirect_kind is None
    assert moved.final_url == srv.base + "/new/solar-farms-double"
    assert (locale.verdict, locale.redirect_kind) == ("soft404", "locale_home")


@pytest.mark.parametrize(("start", "final", "kind"), [
    ("https://lnkd.in/abc", "https://www.linkedin.com/safety/go?url=https%3A%2F%2Fx.org", "interstitial"),
    ("https://bit.ly/3xyz", "https://bit.ly/a/warning?hash=3xyz&url=https%3A%2F%2Fx.org", "interstitial"),
    ("https://news.example.com/a/b", "https://guce.example.com/consent?brandType=eu", "consent"),
    ("https://site.example/a/b", "https://site.example/", "home"),
    ("https://site.example/a/b", "https://site.example/fr/", "locale_home"),
    ("https://site.example/a/b", "https://accounts.example.com/signin?continue=x", "login"),
    ("https://site.example/a/b", "https://site.example/a/b/", None),
    ("https://site.example/", "https://www.site.example/", None),
    ("https://site.example/a/b", "https://other.example/section/b", None),
])
def test_redirect_kind(start: str, final: str, kind: str | None) -> None:
    assert redirect_kind(start, final, [Hop(url=start, status=302, location=final)]) == kind


def test_cli_recover_of_a_wall_is_unverified_with_the_cause(monkeypatch, capsys, store) -> None:  # type: ignore[no-untyped-def]
    routes = {"/cf/js": page("cloudscraper_js_challenge_11_12_2019.html", 503,
                             ("Server", "cloudflare"))}
    with replay(routes) as srv:
        monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
        monkeypatch.setenv("PAGETRAIL_RETRIES", "0")
        monkeypatch.setenv("PAGETRAIL_SEARCH_ENGINES", "")
        monkeypatch.setenv("PAGETRAIL_ARCHIVES", srv.base + "/web")
        assert main(["recover", srv.base + "/cf/js", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["answer"] == "unverified" and answer["candidates"] == []
    assert answer["check"]["verdict"] == "blocked"
    assert answer["check"]["blocked"]["by"] == "cloudflare"


async def test_mcp_check_link_names_the_wall(store) -> None:  # type: ignore[no-untyped-def]
    from mcp import Client

    from pagetrail.server.app import build_server

    with replay({"/company/netapp": recorded("htmlproofer_linkedin_999.json")}) as srv:
        server = build_server(settings(), store)
        async with Client(server) as client:
            result = await client.call_tool("check_link", {"url": srv.base + "/company/netapp"})
    assert not result.is_error
    data = result.structured_content
    assert data["verdict"] == "blocked" and data["blocked"]["by"] == "linkedin"


def test_a_scan_sees_the_wall_too() -> None:
    # The scanner judges fetched pages with hostprobe.assess (observe_response → classify).
    import httpx

    from pagetrail.tools.linkcheck.hostprobe import assess
    from pagetrail.tools.net.fetch import Response

    status, headers, body = page("jscryptominer_adorama_perimeterx.html", 200)
    response = Response(url="https://shop.example/p/1", final_url="https://shop.example/p/1",
                        status=status, headers=httpx.Headers(headers), content=body,
                        content_type="text/html")
    result, links = assess("https://shop.example/p/1", response, None, want_links=True)
    assert result.verdict == "blocked" and result.blocked.by == "perimeterx"  # type: ignore[union-attr]
    assert links == []  # a challenge page's links are nobody's


def test_a_wall_on_the_random_sibling_says_nothing_about_the_page() -> None:
    from pagetrail.tools.linkcheck.check import (
        Observation,
        Observations,
        classify,
        sibling_evidence,
    )

    status, headers, body = page("jscryptominer_adorama_perimeterx.html", 200)
    wall = detect_wall(status, headers, body)
    article = Observation(url="https://shop.example/a/b", status=200,
                          final_url="https://shop.example/a/b", content_type="text/html",
                          title="Solar farms double", text="Solar farms double " * 40,
                          body_read=True)
    sibling = Observation(url="https://shop.example/a/zz", status=200,
                          final_url="https://shop.example/a/zz", content_type="text/html",
                          body_read=True, wall=wall)
    assert sibling_evidence(article, sibling)["answer"] == "inconclusive"
    obs = Observations(url=article.url, page=article, sibling=sibling,
                       sibling_url=sibling.url)
    assert classify(obs).verdict == "ok"


def test_legal_and_proxy_refusals_are_named() -> None:
    assert detect_wall(451, {}, b"").by == "legal"  # type: ignore[union-attr]


# --- walls in front of every path: the dead URL and a random sibling answered alike (#37) --

class EveryPath(Loopback):
    """A host that answers every path with one recorded answer (`{url}` in the body is the
    URL asked, as Sina's visitor page embeds the address to send the browser back to) —
    or, for the paths in `own`, with their own answer."""

    def __init__(self, answer: Answer, own: dict[str, Answer] | None = None) -> None:
        self.paths: list[str] = []
        every = self

        class Handler(GetHeadHandler):
            def answer(self, with_body: bool) -> None:
                every.paths.append(self.path)
                status, headers, body = (own or {}).get(self.path.split("?", 1)[0], answer)
                body = body.replace(b"{url}", f"http://{self.headers['Host']}{self.path}"
                                    .encode())
                self.send_response_only(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

        super().__init__(Handler)


async def check_on(server: EveryPath, path: str):  # type: ignore[no-untyped-def]
    try:
        return await check(server.base + path)
    finally:
        server.close()


async def test_douban_cdn_418_to_every_path_is_a_wall_not_dead() -> None:
    """Douban's image CDN answers every request without its Referer `418` "cdn error 001"
    (fixture: handmade_walls.json, SOURCES.md): the image and a random sibling get it alike,
    so the image is behind a refusal, not gone."""
    server = EveryPath(handmade("douban_cdn_418"))
    result = await check_on(server, "/view/photo/l/public/p2561716440.jpg")
    assert result.verdict == "blocked" and not result.is_dead, (result.verdict, result.reason)
    assert result.status == 418
    assert result.blocked is not None and result.blocked.by == "site_refusal"
    assert "HTTP 418" in result.blocked.evidence
    sibling = [p for p in server.paths if "p2561716440" not in p]
    assert sibling and sibling[0].endswith(".jpg")  # the random sibling was asked, same shape


async def test_weibo_visitor_wall_to_every_path_is_a_wall_not_soft404() -> None:
    """Sina's visitor system served as 200 to every weibo.com path: the page and a random
    sibling get the same JavaScript challenge page, which is a wall (before: soft404)."""
    server = EveryPath(handmade("weibo_visitor_system"))
    result = await check_on(server, "/u/1234567890")
    assert result.verdict == "blocked", (result.verdict, result.reason)
    assert result.blocked is not None and result.blocked.by == "challenge"
    assert "visitor system" in result.blocked.evidence
    assert result.evidence["sibling"]["answer"] == "same"
    assert len(server.paths) >= 3  # HEAD, GET and the random sibling's GET


async def test_a_generic_not_found_page_to_every_path_stays_a_soft404() -> None:
    """The negative control: the same page to every path, with a script that sets a cookie,
    but it is a not-found page — a real soft 404, not a wall."""
    result = await check_on(EveryPath(handmade("generic_not_found_everywhere")),
                            "/products/solar-panel-400w")
    assert result.verdict == "soft404" and result.blocked is None, (result.verdict,
                                                                     result.reason)


async def test_a_wall_or_a_418_only_on_the_dead_url_is_not_a_site_wide_wall() -> None:
    """Walls are told by the sibling: a 418 to our URL alone while the site answers a random
    one 404 stays what its status says; a challenge page to our URL alone while the sibling
    is 404 is a page the site tells apart — alive, never dead."""
    not_found = (404, [("Content-Type", "text/html")], b"<title>Not Found</title>")
    teapot = EveryPath(not_found, own={"/img/a.jpg": handmade("douban_cdn_418")})
    lone = await check_on(teapot, "/img/a.jpg")
    assert lone.verdict == "dead" and lone.blocked is None
    visitor = EveryPath(not_found, own={"/u/1": handmade("weibo_visitor_system")})
    alone = await check_on(visitor, "/u/1")
    assert alone.verdict == "ok" and not alone.is_dead, (alone.verdict, alone.reason)


def test_challenge_markers_need_the_script_and_its_words() -> None:
    from pagetrail.tools.linkcheck.walls import challenge_markers, nonstandard_status

    _status, _headers, body = handmade("weibo_visitor_system")
    assert "visitor system" in challenge_markers(body)
    article = (b"<html><title>How Sina's visitor system works</title><script>var a=1;</script>"
               + b"<p>" + b"word " * 200 + b"</p></html>")
    assert challenge_markers(article, "word " * 200) == ()  # a page to read, not a wall
    assert challenge_markers(b"<p>visitor system, checking your browser</p>") == ()  # no script
    assert [s for s in (418, 420, 430, 499, 404, 410, 429, 451, 403) if nonstandard_status(s)] \
        == [418, 420, 430, 499]


async def test_a_scan_tells_the_same_walls_by_its_shared_sibling_probe() -> None:
    """The scanner's one-GET check (hostprobe.scan_check, one probe per URL shape) tells
    the Douban 418 and the Weibo visitor wall from dead and soft404 as check_link does."""
    from pagetrail.tools.linkcheck.hostprobe import SiblingProber, scan_check

    for fixture, path, by in (("douban_cdn_418", "/view/photo/l/p1.jpg", "site_refusal"),
                              ("weibo_visitor_system", "/u/1234567890", "challenge")):
        server = EveryPath(handmade(fixture))
        try:
            async with Fetcher(settings()) as fetcher:
                result = await scan_check(server.base + path, fetcher,
                                          SiblingProber(fetcher, polite=False), polite=False)
        finally:
            server.close()
        assert result.verdict == "blocked", (fixture, result.verdict, result.reason)
        assert result.blocked is not None and result.blocked.by == by
