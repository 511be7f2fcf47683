"""robots.txt as RFC 9309 reads it, through the scanner's `RobotsRules` against a real local
site: wildcards and `$`, the longest match, Allow winning a tie, user-agent groups, and the
load-once cache. (urllib.robotparser fails the first three: it ignores wildcards and takes the
first matching rule.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_scanner import Site, fast_settings

from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.scan.scanner import RobotsRules

AGENT = "pagetrail/0.1 (+https://example.org/bot)"


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as s:
        yield s


async def verdicts(site: Site, robots: str, paths: list[str], agent: str = AGENT
                   ) -> dict[str, bool]:
    site.routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, robots.encode())
    async with Fetcher(fast_settings()) as fetcher:
        rules = RobotsRules(fetcher, agent)
        return {path: await rules.allowed(site.url(path)) for path in paths}


async def test_wildcard_and_end_anchor(site: Site) -> None:
    got = await verdicts(site, "User-agent: *\nDisallow: /*.pdf$\nDisallow: /tmp*/x\n",
                         ["/a/report.pdf", "/a/report.pdf?download=1", "/a/report.pdfx",
                          "/tmp-1/x", "/tmp/y", "/index.html"])
    assert got == {"/a/report.pdf": False, "/a/report.pdf?download=1": True,
                   "/a/report.pdfx": True, "/tmp-1/x": False, "/tmp/y": True,
                   "/index.html": True}


async def test_longest_match_wins_whatever_the_order(site: Site) -> None:
    # The first matching rule (robotparser) would allow /docs/private/x and disallow
    # /shop/cart/view; the longest matching rule decides.
    got = await verdicts(site, ("User-agent: *\nAllow: /docs/\nDisallow: /docs/private/\n"
                                "Disallow: /shop/\nAllow: /shop/cart/\n"),
                         ["/docs/private/x", "/docs/public", "/shop/cart/view", "/shop/item"])
    assert got == {"/docs/private/x": False, "/docs/public": True,
                   "/shop/cart/view": True, "/shop/item": False}


async def test_allow_wins_a_tie(site: Site) -> None:
    got = await verdicts(site, "User-agent: *\nDisallow: /page\nAllow: /page\n"
                               "Disallow: /*.html\nAllow: /a*html\n",
                         ["/page", "/a.html", "/b.html"])
    # /page: equal rules, Allow wins; /a.html: "/*.html" and "/a*html" are both 7 long.
    assert got == {"/page": True, "/a.html": True, "/b.html": False}


async def test_user_agent_groups(site: Site) -> None:
    robots = ("User-agent: *\nDisallow: /\n\n"
              "User-agent: pagetrail\nDisallow: /private/\n\n"
              "User-agent: otherbot\nAllow: /\n")
    ours = await verdicts(site, robots, ["/index.html", "/private/a"])
    assert ours == {"/index.html": True, "/private/a": False}  # our group, not `*`
    site.hits.clear()
    others = await verdicts(site, robots, ["/index.html"], agent="somebot/2.0")
    assert others == {"/index.html": False}  # no group of its own: `*`


async def test_loaded_once_and_missing_allows_everything(site: Site) -> None:
    async with Fetcher(fast_settings()) as fetcher:
        rules = RobotsRules(fetcher, AGENT)
        assert await rules.allowed(site.url("/a")) and await rules.allowed(site.url("/b"))
    assert site.hits["/robots.txt"] == 1  # 404: everything allowed, asked once per run
