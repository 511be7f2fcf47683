"""Serve a whole world on loopback: live-web proxy, pywb archive, search engine.

    async with Testbed(world_dir) as tb:
        settings = tb.settings()        # pagetrail Settings pointing at the testbed

`start_in_thread(world_dir)` runs the same in a background thread with its own event loop
(for synchronous callers such as pytest session fixtures); `.stop()` ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pagetrail.tools.settings import Settings
from pagetrail.tools.testbed.archive import PywbArchive
from pagetrail.tools.testbed.httpio import HandlerServer, Reply, Request
from pagetrail.tools.testbed.live import LiveWeb
from pagetrail.tools.testbed.proxy import LiveProxy, LiveSocks
from pagetrail.tools.testbed.search import SearchIndex
from pagetrail.tools.testbed.spn import TESTBED_KEYS, SpnService
from pagetrail.tools.testbed.tls import CertAuthority
from pagetrail.tools.testbed.world import World, load_world

log = logging.getLogger(__name__)

SEARCH_ENGINES = "site,cdx,searxng,local"
LOOPBACK_HOSTS = "127.0.0.1,localhost"
T = TypeVar("T")

PROBE_SECONDS = 2.0  # a loopback service that takes longer to accept is as good as down


def _started(part: T | None) -> T:
    assert part is not None, "testbed not started"
    return part


class Testbed:
    """Async context manager serving one world; ports are free ones unless `port_base` is set
    (then proxy = port_base, search = port_base + 1, archive = port_base + 2,
    Save Page Now = port_base + 3, the live web as SOCKS5 = port_base + 4).

    Save Page Now is configured (URL and keys) but scans do not ask it for captures unless a
    caller turns `spn_on_scan` on: a capture changes the world's archive, and evaluations
    must see the same archive every run."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, world_dir: str | Path | World, *, host: str = "127.0.0.1",
                 port_base: int | None = None) -> None:
        self._world_arg = world_dir
        self.host = host
        self.port_base = port_base
        self.world: World | None = None
        self.live: LiveWeb | None = None
        self.index: SearchIndex | None = None
        self._workdir: Path | None = None
        self._proxy: LiveProxy | None = None
        self._search: HandlerServer | None = None
        self._archive: PywbArchive | None = None
        self._socks: LiveSocks | None = None
        self._spn_server: HandlerServer | None = None
        self.spn: SpnService | None = None
        self._ca: CertAuthority | None = None

    # --- endpoints -------------------------------------------------------------------------
    @property
    def proxy_url(self) -> str:
        return f"http://{self.host}:{_started(self._proxy).port}"

    @property
    def search_url(self) -> str:
        return f"http://{self.host}:{_started(self._search).port}"

    @property
    def archive_url(self) -> str:
        return _started(self._archive).collection_url

    @property
    def spn_url(self) -> str:
        return f"http://{self.host}:{_started(self._spn_server).port}/save"

    @property
    def ca_bundle(self) -> str:
        return str(_started(self._ca).bundle_path)

    @property
    def env(self) -> dict[str, str]:
        return {
            "PAGETRAIL_PROXY": self.proxy_url,
            "PAGETRAIL_CA_BUNDLE": self.ca_bundle,
            "PAGETRAIL_ARCHIVES": self.archive_url,
            "PAGETRAIL_SEARXNG_URL": self.search_url,
            "PAGETRAIL_SEARCH_ENGINES": SEARCH_ENGINES,
            "PAGETRAIL_NO_PROXY": LOOPBACK_HOSTS,
            "PAGETRAIL_ALLOW_HOSTS": LOOPBACK_HOSTS,
            # The proxy plays hn.algolia.com, so the default HN API URL stays right.
            "PAGETRAIL_HN_API_URL": "https://hn.algolia.com/api/v1",
            "PAGETRAIL_SPN_URL": self.spn_url,
            "PAGETRAIL_IA_ACCESS_KEY": TESTBED_KEYS[0],
            "PAGETRAIL_IA_SECRET_KEY": TESTBED_KEYS[1],
            "PAGETRAIL_SPN_ON_SCAN": "false",
        }

    def settings(self, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "proxy": self.proxy_url,
            "ca_bundle": self.ca_bundle,
            "archives": [self.archive_url],
            "searxng_url": self.search_url,
            "search_engines": SEARCH_ENGINES.split(","),
            "no_proxy": LOOPBACK_HOSTS.split(","),
            "allow_hosts": LOOPBACK_HOSTS.split(","),
            "hn_api_url": "https://hn.algolia.com/api/v1",
            "spn_url": self.spn_url,
            "ia_access_key": TESTBED_KEYS[0],
            "ia_secret_key": TESTBED_KEYS[1],
            "spn_on_scan": False,
        }
        values.update(overrides)
        return Settings(**values)

    # --- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> Testbed:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    async def start(self) -> None:
        arg = self._world_arg
        self.world = arg if isinstance(arg, World) else await asyncio.to_thread(load_world, arg)
        self._workdir = Path(tempfile.mkdtemp(prefix="pagetrail-testbed-"))
        self._ca = CertAuthority(self._workdir)
        self.live = LiveWeb(self.world)
        self._proxy = LiveProxy(self.live, self._ca)
        await self._proxy.start(self.host, self._port(0))
        self._socks = LiveSocks(self.live, self._ca)
        await self._socks.start(self.host, self._port(4))
        self._archive = PywbArchive(self.world, self._workdir / "pywb", host=self.host,
                                    port=self._port(2) or None, socks_port=self._socks.port)
        # The index build (CPU, a thread) and pywb's start (a process) overlap.
        index_task = asyncio.create_task(asyncio.to_thread(SearchIndex.build, self.world))
        try:
            await self._archive.start()
        finally:
            self.index = await index_task
        self._search = HandlerServer(self._answer_search)
        await self._search.start(self.host, self._port(1))
        self.spn = SpnService(self._archive)
        self._spn_server = HandlerServer(self.spn.answer)
        await self._spn_server.start(self.host, self._port(3))
        log.info("testbed %s up: proxy %s, archive %s, search %s", self.world.name,
                 self.proxy_url, self.archive_url, self.search_url)

    async def down(self) -> list[str]:
        """The world's services that no longer answer, named with their address (empty while
        all answer): a run that used them can tell its answers from an outage's."""
        services = {"the archive (pywb)": self.archive_url, "the live web (proxy)":
                    self.proxy_url, "the search engine": self.search_url}
        down = []
        for name, url in services.items():
            parts = urlsplit(url)
            try:
                async with asyncio.timeout(PROBE_SECONDS):
                    _reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
                writer.close()
                answered = True
            except (OSError, TimeoutError):
                answered = False
            if not answered or (self._archive is not None and url == self.archive_url
                                and not self._archive.running):
                down.append(f"{name} at {url}")
        return down

    def _port(self, offset: int) -> int:
        return self.port_base + offset if self.port_base else 0

    async def _answer_search(self, request: Request) -> Reply:
        assert self.index is not None
        return await asyncio.to_thread(self.index.answer, request)

    async def stop(self) -> None:
        if self._spn_server is not None:
            await self._spn_server.close()
        if self.spn is not None:
            await self.spn.close()
        if self._search is not None:
            await self._search.close()
        if self._socks is not None:
            await self._socks.close()
        if self._proxy is not None:
            await self._proxy.close()
        if self._archive is not None:
            await asyncio.to_thread(self._archive.stop)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


class TestbedThread:
    """A Testbed running on its own event loop in a daemon thread."""

    __test__ = False

    def __init__(self, world_dir: str | Path, **options: Any) -> None:
        self.testbed = Testbed(world_dir, **options)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="pagetrail-testbed", daemon=True)

    def start(self) -> TestbedThread:
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self.testbed:
                self._started.set()
                await self._stop.wait()
        except BaseException as exc:  # reported to start()'s caller
            self._error = exc
        finally:
            self._started.set()

    @property
    def env(self) -> dict[str, str]:
        return self.testbed.env

    def settings(self, **overrides: Any) -> Settings:
        return self.testbed.settings(**overrides)

    def __getattr__(self, name: str) -> Any:  # proxy_url, archive_url, world, ...
        return getattr(self.testbed, name)

    def stop(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


def start_in_thread(world_dir: str | Path, **options: Any) -> TestbedThread:
    return TestbedThread(world_dir, **options).start()
