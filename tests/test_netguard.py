"""SSRF guard: classification (pure) and refusals through the real fetcher."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from test_fetch import html, loopback_settings, quick_fetcher, redirect, serve

from pagetrail.tools.errors import RefusedAddress
from pagetrail.tools.net import netguard
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.netguard import (
    AddressGuard,
    allowed_hosts,
    bypasses_proxy,
    classify_address,
    endpoint_origins,
    parse_ip_literal,
)
from pagetrail.tools.settings import Settings


@pytest.mark.parametrize(("address", "label"), [
    ("127.0.0.1", "loopback"), ("10.0.0.1", "private"), ("192.168.1.5", "private"),
    ("172.16.3.4", "private"), ("169.254.169.254", "cloud-metadata"),
    ("169.254.10.1", "link-local"), ("fd00:ec2::254", "cloud-metadata"), ("::1", "loopback"),
    ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"), ("240.0.0.1", "reserved"),
    ("100.64.1.1", "shared"), ("::ffff:127.0.0.1", "loopback"), ("fe80::1", "link-local"),
    ("64:ff9b::a00:1", "private"), ("2002:7f00:1::", "loopback"), ("fc00::5", "private"),
    ("fec0::1", "site-local"), ("feff:ffff::1", "site-local"),
])
def test_non_public_addresses_are_classified(address: str, label: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) == label


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
    ("[::1]", "::1"), ("10.0.0.1", "10.0.0.1"), ("example.com", None), ("1e100.net", None),
])
def test_ip_literals_in_legacy_forms(text: str, expected: str | None) -> None:
    parsed = parse_ip_literal(text)
    assert (str(parsed) if parsed else None) == expected


def test_allow_list_is_allow_hosts_and_endpoints_are_origins() -> None:
    settings = Settings(allow_hosts=["intranet.example:8443", "Wiki.Example."],
                        archives=["http://127.0.0.1:9001/world"],
                        searxng_url="http://search.local:8888", proxy="http://10.1.1.1:3128")
    # Only explicit allow_hosts exempt a whole host (or host:port) for every request.
    assert allowed_hosts(settings) == {"intranet.example:8443", "wiki.example"}
    assert endpoint_origins(settings) == {
        ("http", "127.0.0.1", 9001), ("http", "search.local", 8888),
        ("http", "10.1.1.1", 3128), ("https", "hn.algolia.com", 443),
        ("https", "web.archive.org", 443)}  # spn_url's default


async def test_an_endpoint_exempts_its_origin_only_and_only_for_endpoint_requests() -> None:
    guard = AddressGuard(Settings(searxng_url="http://127.0.0.1:18082",
                                  archives=["http://[::1]:9001/web"]))
    assert await guard.check_url("http://127.0.0.1:18082/search?q=x", endpoints=True) == []
    assert await guard.check_url("http://[::1]:9001/web/2020/x", endpoints=True) == []
    for url in ("http://127.0.0.1:18081/secret",  # another port of the endpoint's host
                "https://127.0.0.1:18082/",  # another scheme
                "http://127.0.0.1/", "http://[::1]:9002/"):
        with pytest.raises(RefusedAddress):
            await guard.check_url(url, endpoints=True)
    with pytest.raises(RefusedAddress):  # a user-given URL: no endpoint exemption at all
        await guard.check_url("http://127.0.0.1:18082/search?q=x")


async def test_configured_endpoint_does_not_open_other_ports_of_its_host() -> None:
    """Audit repro: PAGETRAIL_SEARXNG_URL=http://127.0.0.1:P made 127.0.0.1:* fetchable."""
    with serve({"/secret": html("internal"), "/to-secret": redirect("/secret")}) as inner, \
            serve({"/search": html("results"),
                   "/to-inner": redirect(f"{inner.base}/secret", 302)}) as endpoint:
        settings = loopback_settings(allow_hosts=[], searxng_url=endpoint.base)
        async with quick_fetcher(settings) as f:
            with pytest.raises(RefusedAddress, match=r"127\.0\.0\.1"):
                await f.get(inner.base + "/secret")
            # the engine's own requests work...
            ok = await f.get(endpoint.base + "/search", endpoint=True)
            with pytest.raises(RefusedAddress):  # ...and cannot be bounced to another port
                await f.get(endpoint.base + "/to-inner", endpoint=True)
            with pytest.raises(RefusedAddress):  # a user's URL or a search result there
                await f.get(endpoint.base + "/search")
    assert ok.status == 200 and ok.text() == "results"
    assert inner.hits.total() == 0 and endpoint.hits["/search"] == 1


async def test_a_page_cannot_redirect_into_an_endpoint_origin() -> None:
    with serve({"/search": html("results")}) as endpoint:
        routes = {"/to-endpoint": redirect(endpoint.base + "/search", 302)}
        with serve(routes) as page:
            settings = loopback_settings(allow_hosts=[f"127.0.0.1:{page.port}"],
                                         searxng_url=endpoint.base)
            async with quick_fetcher(settings) as f:
                with pytest.raises(RefusedAddress):
                    await f.get(page.base + "/to-endpoint")
    assert endpoint.hits.total() == 0


def test_no_proxy_matching() -> None:
    rules = ["127.0.0.1", ".corp.example", "archive.example:8080"]
    assert bypasses_proxy("127.0.0.1", 5000, rules)
    assert bypasses_proxy("a.corp.example", 80, rules) and bypasses_proxy("corp.example", 80, rules)
    assert bypasses_proxy("archive.example", 8080, rules)
    assert not bypasses_proxy("archive.example", 80, rules)
    assert not bypasses_proxy("notcorp.example", 80, rules)
    assert bypasses_proxy("anything", 1, ["*"])


# --- refusals through the fetcher (no connection is ever attempted) ---------------------------

@pytest.mark.parametrize(("url", "named"), [
    ("http://127.0.0.1:{port}/", "127.0.0.1"),
    ("http://10.0.0.1/", "10.0.0.1"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
    ("http://[::1]:{port}/", "::1"),
    ("http://2130706433:{port}/", "127.0.0.1"),
    ("http://localhost:{port}/", "localhost"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal"),
])
async def test_private_targets_are_refused_naming_the_address(url: str, named: str) -> None:
    with serve({"/": html("secret")}) as srv:
        async with Fetcher(Settings()) as f:  # default settings: nothing allowed
            with pytest.raises(RefusedAddress) as info:
                await f.get(url.format(port=srv.port))
    assert named in str(info.value)
    assert f.requests == 0 and srv.hits.total() == 0


def _loopback_name() -> str | None:
    """A name other than localhost that really resolves to loopback here (/etc/hosts)."""
    for name in (socket.gethostname(), "vm", "runsc"):
        try:
            infos = socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)
        except OSError:
            continue
        if infos and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos) \
                and not netguard.is_local_name(name):
            return name
    return None


async def test_dns_name_resolving_to_loopback_is_refused() -> None:
    name = _loopback_name()
    if name is None:
        pytest.skip("no host name resolving to loopback on this machine")
    with serve({"/": html("secret")}) as srv:
        async with Fetcher(Settings()) as f:
            with pytest.raises(RefusedAddress, match=r"127\.0\.0\.1"):
                await f.get(f"http://{name}:{srv.port}/")
    assert srv.hits.total() == 0


async def test_dns_name_with_any_private_answer_is_refused(monkeypatch) -> None:
    # Real DNS is out of reach offline: the resolver alone is replaced, for this test only.
    async def fake_resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.20.30.40"] if host == "mixed.example" else []
    monkeypatch.setattr(netguard, "resolve_host", fake_resolve)
    guard = AddressGuard(Settings())
    with pytest.raises(RefusedAddress, match=r"10\.20\.30\.40"):
        await guard.check_url("https://mixed.example/page")


async def test_allow_list_admits_and_redirect_to_private_is_refused() -> None:
    with serve({"/": html("inner")}) as inner:
        routes = {"/ok": html("allowed"),
                  "/to-inner": redirect(f"http://127.0.0.1:{inner.port}/", 302),
                  "/to-meta": redirect("http://169.254.169.254/latest/", 301)}
        with serve(routes) as outer:
            # Only the outer server (host:port) is allowed; the inner port is not.
            settings = loopback_settings(allow_hosts=[f"127.0.0.1:{outer.port}"])
            async with quick_fetcher(settings) as f:
                ok = await f.get(outer.base + "/ok")
                with pytest.raises(RefusedAddress, match=r"127\.0\.0\.1"):
                    await f.get(outer.base + "/to-inner")
                with pytest.raises(RefusedAddress, match=r"169\.254\.169\.254"):
                    await f.get(outer.base + "/to-meta")
    assert ok.status == 200 and ok.text() == "allowed"
    assert inner.hits.total() == 0


async def test_with_a_proxy_names_are_not_resolved_but_literals_are_refused(monkeypatch) -> None:
    looked_up: list[str] = []

    async def recording_resolve(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["10.0.0.9"]
    monkeypatch.setattr(netguard, "resolve_host", recording_resolve)
    guard = AddressGuard(Settings(proxy="http://127.0.0.1:3128", no_proxy=["direct.example"]))
    assert await guard.check_url("https://www.example-news.com/x") == []
    for url in ("http://10.0.0.1/", "http://[::1]/", "http://localhost/", "http://0x7f.1/"):
        with pytest.raises(RefusedAddress):
            await guard.check_url(url)
    with pytest.raises(RefusedAddress):  # bypasses the proxy: resolved here, and private
        await guard.check_url("http://direct.example/")
    assert looked_up == ["direct.example"]
    # the proxy's origin is an endpoint: exempt for the fetcher's endpoint requests only
    assert await guard.check_url("http://127.0.0.1:3128/", endpoints=True) == []
    with pytest.raises(RefusedAddress):
        await guard.check_url("http://127.0.0.1:3129/", endpoints=True)


async def test_unresolvable_name_is_fetch_failed_dns() -> None:
    from pagetrail.tools.errors import FetchFailed

    async with quick_fetcher() as f:
        with pytest.raises(FetchFailed) as info:
            await f.get("http://no-such-host.invalid/")
    assert info.value.kind == "dns"


async def test_dns_rebinding_is_caught_at_connect_time(monkeypatch) -> None:
    # The name answers a public address when checked, then loopback when connected: the
    # connection is pinned to a re-checked address, so the second answer is refused.
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers)
    monkeypatch.setattr(netguard, "resolve_host", rebinding)
    with serve({"/": html("secret")}) as srv:
        async with Fetcher(Settings()) as f:
            with pytest.raises(RefusedAddress, match=r"127\.0\.0\.1"):
                await f.get(f"http://rebind.example:{srv.port}/")
    assert srv.hits.total() == 0


@pytest.mark.parametrize(("url", "named"), [
    ("http://10.1.2.3/x", "private"),
    ("http://[::1]:8080/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "cloud-metadata"),
    ("http://0x7f.1/", "loopback"),
    ("http://printer.local/", "local name"),
    ("http://localhost./", "local name"),
])
def test_refuse_local_url_refuses_without_any_lookup(url: str, named: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from pagetrail import refuse_local_url

    def no_dns(*args: object, **kwargs: object) -> None:
        raise AssertionError("refuse_local_url must not resolve names")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(RefusedAddress, match=named):
        refuse_local_url(url, Settings(allow_hosts=[]))


def test_refuse_local_url_passes_public_and_allowed_hosts(monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    from pagetrail import refuse_local_url

    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: pytest.fail("no DNS here"))
    # A name is left to the fetcher (it may resolve to a private address then); a public
    # literal and an allow_hosts entry pass.
    assert refuse_local_url("https://example.org/a", Settings()) == "https://example.org/a"
    assert refuse_local_url("http://93.184.216.34/", Settings()) == "http://93.184.216.34/"
    allowed = Settings(allow_hosts=["127.0.0.1:8080"])
    assert refuse_local_url("http://127.0.0.1:8080/x", allowed) == "http://127.0.0.1:8080/x"
    with pytest.raises(RefusedAddress):
        refuse_local_url("http://127.0.0.1:8081/x", allowed)
