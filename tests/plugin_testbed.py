"""Testbed fixtures: one tiny world, built in code and served on loopback once per session.

Fixtures
- `tiny_world` (session): a `TinyWorld` (pagetrail.tools.testbed.worldgen) — `.path` of the
  world directory plus every URL below as a named attribute, e.g. `tiny_world.moved_to`.
- `testbed` (session): the running testbed (`TestbedThread`): `.env`, `.settings()`,
  `.proxy_url`, `.archive_url` (http://127.0.0.1:P/world), `.search_url`, `.ca_bundle`.
  Starting pywb takes a few seconds, hence one per session.
- `testbed_settings` (function): `pagetrail.tools.settings.Settings` pointing at it.
- `testbed_env` (function): the same as PAGETRAIL_* environment variables (monkeypatched,
  `get_settings()` cache cleared), for code that reads the environment (the CLI).

The tiny world (content is stable; add to it rather than change it)
host               state / not_found        live now
www.news.example   up / 404                 https:// / (links to moved_to), http:// / → 301
                                            https:// /, /energy/solar-farms-double (moved_to),
                                            /old/solar → 301 moved_to (live_redirect),
                                            /energy/wind-turbines-offshore (wind_page),
                                            /robots.txt (text/plain)
blog.example.org   up / 410                 http:// / , http:// /energy-links (blog_page,
                                            links to moved_from with anchor "solar farm boom")
soft.example       up / soft404             https:// / ; unknown paths: 200 with the page
                                            titled "Page not found - Soft Example"
home.example       up / home_redirect       https:// / , /products/garden-widget; unknown
                                            paths: 302 → https://home.example/
parked.example     up / parked              every path: 200 parking page ("… may be for sale")
flaky.example      up / 404, flaky 0.5      https:// / ; about half the requests answer 503
                                            (deterministic sequence per run)
slow.example       up / 404, latency 300ms  https:// /
gone.example       nxdomain                 503 X-Squid-Error: ERR_DNS_FAIL 0 (CONNECT too)
not-in-world.example (unlisted)             same as nxdomain
refused.example    refused                  503 X-Squid-Error: ERR_CONNECT_FAIL 111
timeout.example    timeout                  never answers (client must time out)
badtls.example     tls_error                https: certificate fails verification;
                                            http: 301 to https

Archive (pywb collection "world"), all captures of www.news.example unless said:
- /2019/06/solar-farms (moved_from): 20190601000000 200 "Solar farms double in a year";
  20200115000000 301 → moved_to (a redirect memento).
- /2019/07/heat-pump-grants (archived_only): 20190710000000 200 "Heat pump grants announced".
- /2019/08/broken-link (error_capture_url): 20190805000000 404.
- http://blog.example.org/energy-links: 20190701000000 200.

Search (SearXNG JSON at search_url): every live 200 HTML page above; e.g. "solar farms"
finds moved_to first; "site:www.news.example" lists that host's pages.

Social (through the proxy as https://hn.algolia.com/api/v1/search): one post for
moved_from, title "Solar farms double in a year", tags solar, energy, 40 points.

Cases (cases.jsonl): t001 moved_same_host moved_from → moved_to (archived, source
blog_page); t002 gone/archived archived_only; t003 gone/none gone.example; t004 alive slow_url.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pagetrail.tools.testbed.runner import TestbedThread, start_in_thread
from pagetrail.tools.testbed.worldgen import TinyWorld, build_tiny_world


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory: pytest.TempPathFactory) -> TinyWorld:
    return build_tiny_world(tmp_path_factory.mktemp("tiny-world") / "tiny")


@pytest.fixture(scope="session")
def testbed(tiny_world: TinyWorld) -> Iterator[TestbedThread]:
    handle = start_in_thread(tiny_world.path)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def testbed_settings(testbed: TestbedThread):
    return testbed.settings()


@pytest.fixture
def testbed_env(testbed: TestbedThread, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    from pagetrail.tools.settings import get_settings

    for key, value in testbed.env.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    return dict(testbed.env)
