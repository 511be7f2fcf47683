"""check_link: verdicts from real local servers, and the pure decision over observations."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler

import pytest
from test_fetch import Route, html, loopback_settings, quick_fetcher, redirect, serve

from pagetrail.cli.main import main
from pagetrail.tools.errors import InvalidURL
from pagetrail.tools.linkcheck.check import (
    NOT_FOUND_PHRASES,
    PARKING_PHRASES,
    PARKING_SERVICES,
    Observation,
    Observations,
    check_link,
    classify,
    cosine,
    find_phrases,
    fold_case,
    not_found_evidence,
    parking_evidence,
    resemblance,
    sibling_url,
)
from pagetrail.tools.models import Hop
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.settings import Settings

ARTICLE = """<html><head><title>Solar farms double in a year</title></head><body>
<nav>Home News Energy Science About</nav>
<h1>Solar farms double in a year</h1>
<p>Utility-scale solar capacity in the midwest doubled during the last twelve months,
according to figures released by grid operators on Tuesday. Developers credit falling panel
prices, new transmission lines and state incentives. Farmers leasing land for arrays say the
income is steadier than corn. Critics worry about the loss of prime farmland and the strain on
local roads during construction, while grid planners warn that storage must keep pace.</p>
<footer>Copyright Example News</footer></body></html>"""

SOFT_NOT_FOUND = """<html><head><title>Example News</title></head><body>
<nav>Home News Energy Science About</nav>
<p>Sorry, we couldn't find what you were looking for. Try the search box or browse our
sections.</p><footer>Copyright Example News</footer></body></html>"""

PARKED = """<html><head><title>example-shop.com</title></head><body>
<h1>example-shop.com</h1><p>This domain is for sale! Make an offer today.</p>
<p>Related searches: shoes, bags, cheap flights</p></body></html>"""

HOME = "<html><title>Example home</title><body><h1>Welcome</h1>" + "<p>news story</p>" * 20


def status_page(status: int, title: str = "") -> Route:
    return html(f"<html><title>{title or status}</title><body>status {status}</body></html>",
                status)


async def check(url: str, settings: Settings | None = None) -> tuple[object, Fetcher]:
    async with quick_fetcher(settings) as f:
        result = await check_link(url, f)
    return result, f


# --- live verdicts ------------------------------------------------------------------------------

async def test_live_page_is_ok_and_sibling_404_confirms_it() -> None:
    with serve({"/2019/06/solar-farms": html(ARTICLE)}) as srv:
        result, f = await check(srv.base + "/2019/06/solar-farms")
    assert result.verdict == "ok" and result.status == 200
    assert result.evidence["sibling"]["answer"] == "distinguishes"
    # HEAD, GET, and the sibling probe at the same depth with a random last segment.
    assert [m for m, _ in srv.methods] == ["HEAD", "GET", "GET"]
    probe = srv.methods[2][1]
    assert probe.startswith("/2019/06/") and probe != "/2019/06/solar-farms"
    assert f.requests == 3


async def test_permanent_redirect_is_redirected_and_temporary_is_ok() -> None:
    routes = {"/old": redirect("/new", 301), "/new": html(ARTICLE),
              "/moved": redirect("/elsewhere", 308), "/elsewhere": redirect("/new", 301),
              "/tmp": redirect("/new", 302)}
    with serve(routes) as srv:
        moved, _ = await check(srv.base + "/old")
        twice, _ = await check(srv.base + "/moved")
        temporary, _ = await check(srv.base + "/tmp")
    assert moved.verdict == "redirected" and moved.final_url == srv.base + "/new"
    assert [h.status for h in moved.chain] == [301]
    assert twice.verdict == "redirected" and len(twice.chain) == 2
    assert temporary.verdict == "ok" and [h.status for h in temporary.chain] == [302]


@pytest.mark.parametrize(("status", "verdict"), [
    (404, "dead"), (410, "dead"), (500, "transient"), (503, "transient"), (429, "blocked"), (999, "blocked"),
    (401, "blocked"), (403, "blocked"),
])
async def test_status_verdicts(status: int, verdict: str) -> None:
    with serve({"/x/page": status_page(status)}) as srv:
        result, _ = await check(srv.base + "/x/page", loopback_settings(retries=0))
    assert result.verdict == verdict and result.status == status


async def test_dead_on_head_needs_no_get() -> None:
    with serve({}) as srv:
        result, f = await check(srv.base + "/gone/page.html")
    assert result.verdict == "dead" and f.requests == 1 and srv.methods == [("HEAD",
                                                                             "/gone/page.html")]


async def test_head_refused_falls_back_to_get() -> None:
    def no_head(req: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if req.command == "HEAD":
            return 405, {"Allow": "GET"}, b""
        return 200, {"Content-Type": "text/html"}, ARTICLE.encode()
    with serve({"/a/b": no_head}) as srv:
        result, _ = await check(srv.base + "/a/b")
    assert result.verdict == "ok" and result.evidence["head"]["status"] == 405


async def test_soft404_via_random_sibling_and_live_page_on_same_site_stays_ok() -> None:
    routes = {"/news/solar-farms": html(ARTICLE)}
    with serve(routes, fallback=html(SOFT_NOT_FOUND)) as srv:
        soft, _ = await check(srv.base + "/news/wind-turbines-grow")
        live, _ = await check(srv.base + "/news/solar-farms")
    assert soft.verdict == "soft404", soft.evidence
    assert soft.evidence["sibling"]["answer"] == "same"
    assert live.verdict == "ok", live.evidence
    assert live.evidence["sibling"]["answer"] == "different"


async def test_deep_url_redirected_home_is_soft404() -> None:
    with serve({"/": html(HOME)}, fallback=redirect("/", 302)) as srv:
        result, _ = await check(srv.base + "/2018/05/old-story")
        home, _ = await check(srv.base + "/")
    assert result.verdict == "soft404" and result.evidence["home_redirect"] is True
    assert home.verdict == "ok"


async def test_parked_domain_is_soft404() -> None:
    with serve({}, fallback=html(PARKED)) as srv:
        deep, _ = await check(srv.base + "/products/shoes")
        root, _ = await check(srv.base + "/")
    assert deep.verdict == "soft404" and "parked" in deep.reason
    assert root.verdict == "soft404"


async def test_squid_answers_are_unreachable() -> None:
    def squid(code: str) -> Route:
        return lambda _r: (503, {"X-Squid-Error": code, "Content-Type": "text/html"}, b"err")
    routes = {"/dns": squid("ERR_DNS_FAIL 0"), "/conn": squid("ERR_CONNECT_FAIL 111"),
              "/tls": squid("ERR_SECURE_CONNECT_FAIL 71"), "/slow": squid("ERR_READ_TIMEOUT 0")}
    with serve(routes) as srv:
        verdicts = {path: (await check(srv.base + path))[0].verdict for path in routes}
        assert srv.hits["/dns"] == 1  # HEAD only: not retried, no GET
    assert verdicts == {"/dns": "unreachable", "/conn": "unreachable", "/tls": "unreachable",
                        "/slow": "transient"}


async def test_refused_and_unreachable_verdicts() -> None:
    async with Fetcher(Settings()) as f:
        refused = await check_link("http://169.254.169.254/latest/meta-data/", f)
    assert refused.verdict == "refused" and "169.254.169.254" in refused.reason
    with serve({}) as srv:
        port = srv.port
    closed, _ = await check(f"http://127.0.0.1:{port}/page")
    assert closed.verdict == "unreachable" and closed.evidence["error"]["kind"] == "refused"
    with pytest.raises(InvalidURL):
        async with Fetcher(Settings()) as f:
            await check_link("javascript:alert(1)", f)


async def test_redirect_loop_is_unreachable() -> None:
    with serve({"/a": redirect("/b"), "/b": redirect("/a")}) as srv:
        result, _ = await check(srv.base + "/a")
    assert result.verdict == "unreachable" and result.evidence["error"]["code"] == "redirect_loop"


async def test_binary_page_is_ok_from_head() -> None:
    pdf = b"%PDF-1.4\n" + bytes(range(256)) * 40
    with serve({"/doc/report.pdf": lambda _r: (200, {"Content-Type": "application/pdf"}, pdf)}
               ) as srv:
        result, f = await check(srv.base + "/doc/report.pdf")
    assert result.verdict == "ok" and f.requests == 1


# --- the pure decision ---------------------------------------------------------------------

def page(status: int = 200, **kw: object) -> Observation:
    base = {"url": "https://site.example/a/b", "final_url": "https://site.example/a/b",
            "content_type": "text/html", "body_read": True}
    base.update(kw)
    return Observation(status=status, **base)  # type: ignore[arg-type]


def test_article_about_404_errors_on_a_site_that_distinguishes_stays_ok() -> None:
    text = "The HTTP 404 not found status means the server has no page. " * 40
    obs = Observations(url="https://site.example/a/b",
                       page=page(title="Understanding the 404 not found error", text=text),
                       sibling=page(404, url="https://site.example/a/x"))
    assert classify(obs).verdict == "ok"


def test_strong_not_found_title_on_short_page_is_soft404_even_without_probe() -> None:
    obs = Observations(url="https://site.example/a/b",
                       page=page(title="Page not found | Site",
                                 text="Sorry, the page could not be found."))
    result = classify(obs)
    assert result.verdict == "soft404" and result.evidence["not_found_wording"]["score"] >= 3


def test_same_final_url_for_sibling_is_soft404() -> None:
    hop = [Hop(url="https://site.example/a/b", status=302, location="https://site.example/sorry")]
    sib_hop = [Hop(url="https://site.example/a/zz", status=302,
                   location="https://site.example/sorry")]
    obs = Observations(
        url="https://site.example/a/b",
        page=page(final_url="https://site.example/sorry", chain=hop, text="Sorry", title="x"),
        sibling=page(final_url="https://site.example/sorry", chain=sib_hop, text="Sorry"))
    assert classify(obs).verdict == "soft404"


def test_every_url_sent_to_a_login_is_blocked_not_soft404() -> None:
    # A site that sends every URL (even a random sibling) to its sign-in page hides its
    # pages: the link is behind a login (#26), not dead.
    hop = [Hop(url="https://site.example/a/b", status=302, location="https://site.example/login")]
    sib_hop = [Hop(url="https://site.example/a/zz", status=302,
                   location="https://site.example/login")]
    obs = Observations(
        url="https://site.example/a/b",
        page=page(final_url="https://site.example/login", chain=hop, text="Log in", title="x"),
        sibling=page(final_url="https://site.example/login", chain=sib_hop, text="Log in"))
    result = classify(obs)
    assert result.verdict == "blocked" and result.redirect_kind == "login"


def test_canonical_redirect_is_ok_not_redirected() -> None:
    hop = [Hop(url="http://site.example/a/b", status=301, location="https://site.example/a/b/")]
    obs = Observations(url="http://site.example/a/b",
                       page=page(final_url="https://site.example/a/b/", chain=hop, body_read=False))
    assert classify(obs).verdict == "ok"


def test_similarity_measures() -> None:
    assert resemblance("a b c d e", "a b c d e") == 1.0
    assert resemblance("", "x") is None
    assert cosine("solar farms grow", "wind farms shrink") == pytest.approx(1 / 3)


def test_wording_and_parking_evidence() -> None:
    assert not_found_evidence("Seite nicht gefunden", "Leider nichts.")["title_phrases"]
    assert not_found_evidence("Welcome", "all fine here")["score"] == 0
    assert parking_evidence("x.com", "This domain is for sale. Buy now.", None)["parked"]
    long_text = "GoDaddy reports quarterly results; domain sales rose. " * 100
    assert not parking_evidence("GoDaddy earnings", long_text, None)["parked"]


def test_wording_tests_skip_the_token_count_only_when_it_cannot_matter() -> None:
    # No cue at all: not measured (the count is wordfreq's, the costly part).
    assert not_found_evidence("Welcome", "all fine here")["tokens"] is None
    assert parking_evidence("Welcome", "all fine here", None)["tokens"] is None
    # A cue: measured, and the length decides as before.
    short = not_found_evidence("Oops", "Sorry, this page does not exist.")
    assert short["tokens"] == 6 and short["short_page"] and short["score"] == 1
    long_page = not_found_evidence("Oops", "Sorry, this page does not exist. " + "word " * 500)
    assert not long_page["short_page"] and long_page["text_phrases"] == []
    # A strong title without any listed phrase ("Error404") still gets its length measured.
    assert not_found_evidence("Error404", "nothing here")["short_page"] is True


PHRASES = NOT_FOUND_PHRASES + PARKING_PHRASES + PARKING_SERVICES


def reference_find_phrases(text: str, phrases: tuple[str, ...]) -> list[str]:
    """What find_phrases promises: re.IGNORECASE whole-word search, phrase by phrase."""
    return [p for p in phrases
            if re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", text, re.IGNORECASE)]


@pytest.mark.parametrize("text", [
    "Page NOT FOUND", "Error 404 – the page could not be found", "x404", "4040 results",
    "NOT_FOUND", "not found_", "Seite NICHT GEFUNDEN", "PÁGINA NO ENCONTRADA",
    "СТРАНИЦА НЕ НАЙДЕНА", "DOEſ NOT EXIſT", "FİLE NOT FOUND", "fıle not found",
    "this domain is for sale!", "Buy this domain\u00a0now", "sedoparking.com", "above.com.",
    "page\u0345not found", "ﬆ not found", "", "no", "n'existe pas", "doesn’t exist",
])
def test_find_phrases_agrees_with_case_insensitive_regex(text: str) -> None:
    assert find_phrases(text, PHRASES) == reference_find_phrases(text, PHRASES)


def test_fold_case_agrees_with_re_ignorecase_on_every_code_point() -> None:
    # find_phrases compares fold_case(text) with the folded phrases: exact only if, for every
    # character, folding keeps one character, keeps \w-ness, and equates a character with a
    # phrase character exactly when re.IGNORECASE does.
    phrase_chars = sorted({fold_case(c) for c in "".join(PHRASES)})
    any_phrase_char = re.compile("[" + "".join(map(re.escape, phrase_chars)) + "]", re.I)
    word = re.compile(r"\w")
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        folded = fold_case(char)
        assert len(folded) == 1, hex(code)
        assert bool(word.match(char)) == bool(word.match(folded)), hex(code)
        if any_phrase_char.fullmatch(char) or folded in phrase_chars:
            for p in phrase_chars:
                same = bool(re.fullmatch(re.escape(p), char, re.IGNORECASE))
                assert same == (folded == p), (hex(code), p)


@pytest.mark.parametrize(("url", "prefix", "suffix"), [
    ("https://s.example/2019/06/solar-farms", "https://s.example/2019/06/pt", ""),
    ("https://s.example/docs/guide.html", "https://s.example/docs/pt", ".html"),
    ("https://s.example/a/b/", "https://s.example/a/pt", "/"),
])
def test_sibling_url_keeps_the_shape(url: str, prefix: str, suffix: str) -> None:
    sib = sibling_url(url)
    assert sib and sib.startswith(prefix) and sib.endswith(suffix) and sib != url
    assert sib.count("/") == url.count("/")


def test_sibling_url_randomises_query_values_and_skips_root() -> None:
    sib = sibling_url("https://s.example/item.php?id=123")
    assert sib and sib.startswith("https://s.example/item.php?id=") and "id=123" not in sib
    assert sib.split("=")[1].isdigit()
    assert sibling_url("https://s.example/") is None


# --- CLI ---------------------------------------------------------------------------------------

def test_cli_json_and_human_output(monkeypatch, capsys) -> None:
    with serve({"/p/q": html(ARTICLE)}) as srv:
        monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
        assert main(["check", srv.base + "/p/q", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["verdict"] == "ok" and data["status"] == 200
        assert main(["check", srv.base + "/nope"]) == 0
        line = capsys.readouterr().out.strip()
    assert line.startswith("dead") and "404" in line and "\n" not in line


def test_cli_refused_and_malformed(capsys) -> None:
    # A private address is a mistake like a malformed URL (#15, #20): one line, exit 2.
    assert main(["check", "http://10.0.0.1/admin", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("pagetrail: refused_address") and "10.0.0.1" in captured.err
    assert main(["check", "not a url"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pagetrail: invalid_url") and "\n" not in err


# --- through the testbed's proxy (Squid-like answers, TLS interception, host behaviours) -----

@pytest.mark.testbed
async def test_every_host_behaviour_through_the_testbed_proxy(testbed_settings, tiny_world) -> None:
    settings = testbed_settings.model_copy(update={"read_timeout": 1.5, "total_timeout": 3.0})
    t = tiny_world
    expected = {
        t.moved_to: "ok",                      # live article over https through CONNECT
        t.news_http_root: "ok",                # http → https 301, same page: canonical
        t.live_redirect: "redirected",         # 301 → moved_to
        t.moved_from: "dead",                  # 404 now
        t.blog_root + "no-such-page": "dead",  # 410 host
        t.soft_root + "2019/missing-article": "soft404",
        t.home_page: "ok",
        t.home_root + "2019/old/product": "soft404",
        t.parked_root: "soft404",
        t.parked_root + "some/page": "soft404",
        t.nxdomain_url: "unreachable",         # Squid ERR_DNS_FAIL on CONNECT
        t.unlisted_url: "unreachable",
        t.refused_url: "unreachable",          # Squid ERR_CONNECT_FAIL 111
        t.tls_error_url: "unreachable",        # certificate fails verification
        "http://badtls.example/": "unreachable",
        t.timeout_url: "transient",
        t.slow_url: "ok",
        t.soft_root: "ok",
    }
    got: dict[str, str] = {}
    async with Fetcher(settings, backoff=0.05, max_backoff=0.2) as f:
        for url in expected:
            got[url] = (await check_link(url, f)).verdict
    assert got == expected


@pytest.mark.testbed
async def test_squid_error_reaches_the_caller_for_https_connect(testbed_settings, tiny_world):
    async with Fetcher(testbed_settings) as f:
        response = await f.get(tiny_world.nxdomain_url)
        refused = await f.get(tiny_world.refused_url)
    assert response.status == 503 and response.squid_error == "ERR_DNS_FAIL 0"
    assert refused.squid_error == "ERR_CONNECT_FAIL 111"


@pytest.mark.testbed
async def test_testbed_flaky_host_is_retried_to_an_answer(testbed_settings, tiny_world) -> None:
    async with Fetcher(testbed_settings, backoff=0.05, max_backoff=0.2) as f:
        verdicts = [(await check_link(tiny_world.flaky_url, f)).verdict for _ in range(2)]
    assert set(verdicts) <= {"ok", "transient"} and "ok" in verdicts


def reference_visible_text(page: str) -> tuple[str, str]:
    """visible_text as it was written with lxml.html (what the plain-lxml version keeps)."""
    import lxml.html
    from lxml import etree

    try:
        root = lxml.html.document_fromstring(page[:1_000_000])
    except (etree.ParserError, ValueError):
        return "", ""
    title_el = root.find(".//title")
    title = " ".join((title_el.text_content() if title_el is not None else "").split())
    for bad in root.xpath("//script|//style|//noscript|//template|//head"):
        bad.drop_tree()
    return title[:500], " ".join(root.text_content().split())[:200_000]


def test_visible_text_matches_the_lxml_html_version_on_real_and_hostile_pages() -> None:
    import gzip
    from pathlib import Path

    from pagetrail.tools.linkcheck.check import visible_text

    pages = Path(__file__).parent / "fixtures" / "pages"
    samples = [gzip.decompress(p.read_bytes()).decode("utf-8", "replace")
               for p in sorted(pages.glob("*.html.gz"))]
    samples += [ARTICLE, SOFT_NOT_FOUND, PARKED, HOME, "", "   ", "\x00\x01", "<html>",
                "<<<>>><a href=", "<title>T</title>tail <script>x</script>after",
                "<p>a<style>s</style>b<!-- c -->d</p><head><title>late</title></head>",
                '<?xml version="1.0" encoding="utf-8"?><html><title>x</title></html>']
    assert len(samples) > 15
    for sample in samples:
        assert visible_text(sample) == reference_visible_text(sample), sample[:80]
