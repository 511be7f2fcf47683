"""The live web through the testbed proxy, as a real client sees it (httpx + CA bundle)."""

from __future__ import annotations

import socket
import ssl

import httpx
import pytest

from pagetrail.tools.testbed.live import LiveWeb
from pagetrail.tools.testbed.world import load_world

pytestmark = pytest.mark.testbed


@pytest.fixture
def client(testbed):
    context = ssl.create_default_context(cafile=testbed.ca_bundle)
    with httpx.Client(proxy=testbed.proxy_url, verify=context, trust_env=False,
                      timeout=5) as c:
        yield c


def test_http_page_by_absolute_uri(client, tiny_world):
    response = client.get(tiny_world.blog_page)
    assert response.status_code == 200
    assert "<title>Energy links</title>" in response.text
    assert response.headers["content-type"].startswith("text/html")


def test_https_page_through_connect(client, tiny_world):
    response = client.get(tiny_world.moved_to)
    assert response.status_code == 200
    assert "Solar farms doubled" in response.text


def test_live_redirects_are_served_as_stored(client, tiny_world):
    response = client.get(tiny_world.news_http_root)
    assert response.status_code == 301
    assert response.headers["location"] == tiny_world.news_root
    followed = client.get(tiny_world.live_redirect, follow_redirects=True)
    assert str(followed.url) == tiny_world.moved_to
    assert followed.status_code == 200


def test_head_has_headers_but_no_body(client, tiny_world):
    response = client.head(tiny_world.moved_to, headers={"Accept-Encoding": "identity"})
    assert response.status_code == 200
    assert int(response.headers["content-length"]) > 100
    assert response.content == b""


def test_trailing_slash_is_another_resource(client, tiny_world):
    # live.jsonl lists resources by URL: the slashed variant of a live page is an unknown path
    assert client.get(tiny_world.moved_to).status_code == 200
    assert client.get(tiny_world.moved_to + "/").status_code == 404


def test_not_found_404_and_410(client, tiny_world):
    assert client.get(tiny_world.moved_from).status_code == 404
    assert client.get("http://blog.example.org/removed-post").status_code == 410


def test_soft_404_answers_200_with_not_found_page(client, tiny_world):
    response = client.get(tiny_world.soft_root + "no/such/page")
    assert response.status_code == 200
    assert tiny_world.soft_not_found_title in response.text


def test_home_redirect(client, tiny_world):
    response = client.get(tiny_world.home_root + "old/catalogue?id=3")
    assert response.status_code == 302
    assert response.headers["location"] == tiny_world.home_root
    assert client.get(tiny_world.home_page).status_code == 200  # known pages still served


def test_parked_domain_answers_parking_page_for_any_path(client, tiny_world):
    for path in ("", "any/path", "index.html"):
        response = client.get(tiny_world.parked_root + path)
        assert response.status_code == 200
        assert "may be for sale" in response.text


@pytest.mark.parametrize("attr", ["nxdomain_url", "unlisted_url"])
def test_unresolvable_host_gets_squid_dns_error(client, tiny_world, attr):
    url = getattr(tiny_world, attr).replace("https://", "http://")
    response = client.get(url)
    assert response.status_code == 503
    assert response.headers["x-squid-error"] == "ERR_DNS_FAIL 0"


def test_refused_host_gets_squid_connect_error(client, tiny_world):
    response = client.get(tiny_world.refused_url.replace("https://", "http://"))
    assert response.status_code == 503
    assert response.headers["x-squid-error"] == "ERR_CONNECT_FAIL 111"


@pytest.mark.parametrize(("attr", "error"), [("nxdomain_url", "ERR_DNS_FAIL 0"),
                                             ("refused_url", "ERR_CONNECT_FAIL 111")])
def test_connect_to_unreachable_host_is_refused_like_squid(testbed, tiny_world, attr, error):
    host = httpx.URL(getattr(tiny_world, attr)).host
    port = int(testbed.proxy_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 503")
    assert f"X-Squid-Error: {error}" in answer


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_timeout_host_never_answers(testbed, tiny_world, scheme):
    context = ssl.create_default_context(cafile=testbed.ca_bundle)
    url = tiny_world.timeout_url.replace("https", scheme, 1)
    with httpx.Client(proxy=testbed.proxy_url, verify=context, trust_env=False,
                      timeout=0.5) as client, pytest.raises(httpx.TimeoutException):
        client.get(url)


def test_tls_error_host_fails_verification(client, tiny_world):
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        client.get(tiny_world.tls_error_url)
    plain = client.get(tiny_world.tls_error_url.replace("https://", "http://"))
    assert plain.status_code == 301
    assert plain.headers["location"] == tiny_world.tls_error_url


def test_latency_is_added(client, tiny_world):
    response = client.get(tiny_world.slow_url)
    assert response.status_code == 200
    assert response.elapsed.total_seconds() >= 0.29


def test_flaky_host_answers_some_503(client, tiny_world):
    statuses = [client.get(tiny_world.flaky_url).status_code for _ in range(24)]
    assert set(statuses) == {200, 503}
    assert 3 <= statuses.count(503) <= 21


async def test_flaky_sequence_repeats_across_runs(tiny_world):
    world = load_world(tiny_world.path)
    runs = []
    for _ in range(2):
        live = LiveWeb(world)
        runs.append([(await live.answer(tiny_world.flaky_url)).status for _ in range(16)])
    assert runs[0] == runs[1]
    assert 503 in runs[0]


def test_gzip_bodies_are_decoded_by_the_client(client, tiny_world):
    response = client.get(tiny_world.moved_to, headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert "Solar farms doubled" in response.text


def test_keep_alive_serves_several_requests_on_one_connection(testbed, tiny_world):
    port = int(testbed.proxy_url.rsplit(":", 1)[1])
    request = (f"GET {tiny_world.blog_page} HTTP/1.1\r\nHost: blog.example.org\r\n"
               "Accept-Encoding: identity\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        reader = sock.makefile("rb")
        for _ in range(3):
            sock.sendall(request)
            assert reader.readline().startswith(b"HTTP/1.1 200")
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert b"Energy links" in reader.read(length)


def test_hn_search_by_url(client, tiny_world):
    response = client.get("https://hn.algolia.com/api/v1/search", params={
        "query": tiny_world.social_url.replace("https://www.", "http://"),
        "restrictSearchableAttributes": "url"})
    assert response.status_code == 200
    hits = response.json()["hits"]
    assert [h["title"] for h in hits] == [tiny_world.social_title]
    assert {"solar", "energy"} <= set(hits[0]["_tags"])
    assert hits[0]["points"] == 40 and hits[0]["objectID"]
    assert response.json()["nbHits"] == 1


def test_hn_search_misses_and_text_query(client, tiny_world):
    api = "https://hn.algolia.com/api/v1/search"
    miss = client.get(api, params={"query": tiny_world.moved_to,
                                   "restrictSearchableAttributes": "url"}).json()
    assert miss["hits"] == [] and miss["nbHits"] == 0
    text = client.get(api, params={"query": "solar farms"}).json()
    assert [h["url"] for h in text["hits"]] == [tiny_world.social_url]


@pytest.mark.parametrize("garbage", [
    b"NONSENSE\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"GET http://blog.example.org/ HTTP/1.1\r\nno colon in this header\r\n\r\n",
])
@pytest.mark.parametrize("server", ["proxy_url", "search_url"])
def test_malformed_requests_get_400_and_a_closed_connection(testbed, garbage, server):
    port = int(getattr(testbed, server).rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(garbage)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 ")
