"""Internationalised host names: a URL written in Unicode and the same URL in IDNA ASCII
(what a client sends) name one host — in pagetrail's URL keys and in the testbed runner."""

from __future__ import annotations

import ssl

import httpx

from pagetrail.tools.net.urls import canonical_host, host_of, normalize_url, same_url, site_of
from pagetrail.tools.testbed.runner import start_in_thread
from pagetrail.tools.testbed.world import load_world
from pagetrail.tools.testbed.worldgen import WorldBuilder

UNICODE = "https://www.segelblog.müller.example/haltet-die-seen-sauber/"
ASCII = "https://www.segelblog.xn--mller-kva.example/haltet-die-seen-sauber/"


def test_both_spellings_of_a_host_are_one_host():
    assert canonical_host("Segelblog.MÜLLER.example.") == "segelblog.xn--mller-kva.example"
    assert canonical_host("segelblog.xn--mller-kva.example") == "segelblog.xn--mller-kva.example"
    assert host_of(UNICODE) == host_of(ASCII) == "www.segelblog.xn--mller-kva.example"
    assert site_of(UNICODE) == site_of(ASCII)
    assert same_url(UNICODE, ASCII)
    assert normalize_url(UNICODE) == "http://segelblog.xn--mller-kva.example/haltet-die-seen-sauber"


def test_a_name_idna_refuses_is_kept_as_it_is():
    label = "a" * 64  # longer than a DNS label may be
    assert canonical_host(f"{label}.example") == f"{label}.example"
    assert canonical_host(f"ü{label}.example") == f"ü{label}.example"


def _world(root):
    b = WorldBuilder(root, name="idn", format=2, then="2020-01-01T00:00:00Z")
    b.host("www.segelblog.müller.example")
    b.page("https://www.segelblog.müller.example/", "<html><head><title>Segelblog</title>"
           "</head><body><p>Segeln.</p></body></html>")
    b.page(UNICODE, "<html><head><title>Haltet die Seen sauber</title></head>"
                    "<body><p>Müll gehört nicht ins Wasser.</p></body></html>")
    return b.write()


def test_the_world_finds_a_unicode_host_by_its_ascii_name(tmp_path):
    world = load_world(_world(tmp_path / "w"))
    assert world.host("www.segelblog.xn--mller-kva.example") is not None
    assert world.lookup(ASCII) is not None and world.lookup(UNICODE) is not None


def test_the_runner_serves_a_unicode_host_to_a_client_sending_ascii(tmp_path):
    bed = start_in_thread(_world(tmp_path / "w"))
    try:
        context = ssl.create_default_context(cafile=bed.ca_bundle)
        with httpx.Client(proxy=bed.proxy_url, verify=context, trust_env=False,
                          timeout=5) as client:
            response = client.get(UNICODE)  # httpx sends the IDNA ASCII name
    finally:
        bed.stop()
    assert response.status_code == 200, response.headers
    assert "Haltet die Seen sauber" in response.text
