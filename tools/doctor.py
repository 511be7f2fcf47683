"""`pagetrail doctor`: does each configured service answer? One line each.

Checks the database (one connection and query: the server, and whether the schema is up to
date), the broker and the Redis of the politeness limits when configured, every archive
(one index request) and every search engine (one query). It diagnoses and returns: nothing
waits out a fault here (the store's fault policy does that for real work) and nothing is
written. A check is `required` when pagetrail cannot work without it — the database, a
configured broker or Redis, at least one archive and one search engine; `healthy()` is
False when a required one does not answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.settings import Settings, get_settings, mask_url

if TYPE_CHECKING:
    from pagetrail.tools.net.fetch import Fetcher

PROBE_URL = "https://example.org/"  # the page asked of each archive
PROBE_QUERY = "example"  # the query asked of each search engine


@dataclass(frozen=True)
class Check:
    component: str  # database | broker | redis | archive | search engine
    name: str  # what was checked (a URL without its password, an engine's name)
    ok: bool
    detail: str  # what answered, or why not (one line)
    required: bool = True
    seconds: float = 0.0

    def line(self) -> str:
        state = "ok  " if self.ok else ("DOWN" if self.required else "warn")
        return f"{state}  {self.component:<13} {self.name}: {self.detail}"


def healthy(checks: Sequence[Check]) -> bool:
    """Every required service answers; at least one archive and one engine do."""
    if any(c.required and not c.ok for c in checks):
        return False
    for component in ("archive", "search engine"):
        group = [c for c in checks if c.component == component]
        if group and not any(c.ok for c in group):
            return False
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


async def _database(settings: Settings, timeout: float) -> Check:
    from pagetrail.store.health import database_health

    started = time.monotonic()
    name = mask_url(settings.database_url)
    try:
        health = await asyncio.to_thread(database_health, settings.database_url,
                                         timeout=timeout)
    except PagetrailError as exc:
        return Check("database", name, False, f"{exc.code}: {exc}",
                     seconds=time.monotonic() - started)
    schema = ("schema up to date" if health.revision == health.head
              else "not migrated yet (run `pagetrail db upgrade`)" if health.revision is None
              else f"schema at {health.revision}, this pagetrail needs {health.head} "
                   "(run `pagetrail db upgrade`)")
    if health.note:  # an SQLite file not made yet: its folder is there and writable
        return Check("database", name, True, f"{health.server}: {health.note}",
                     seconds=time.monotonic() - started)
    return Check("database", name, True, f"answers ({health.server}); {schema}",
                 seconds=time.monotonic() - started)


async def _redis(component: str, url: str, timeout: float) -> Check:
    from pagetrail.tools.workers.dispatch import ping_broker

    started = time.monotonic()
    try:
        await asyncio.to_thread(ping_broker, url, timeout)
    except PagetrailError as exc:
        return Check(component, mask_url(url), False, f"{exc.code}: {exc}",
                     seconds=time.monotonic() - started)
    return Check(component, mask_url(url), True, "answers",
                 seconds=time.monotonic() - started)


async def _archives(settings: Settings, fetcher: Fetcher) -> list[Check]:
    from pagetrail.tools.archive.memento import ArchiveEndpoint

    async def one(prefix: str) -> Check:
        endpoint = ArchiveEndpoint.of(prefix)
        started = time.monotonic()
        try:
            response = await fetcher.get(endpoint.timemap_url(PROBE_URL), endpoint=True,
                                         retry=False, max_bytes=1 << 20)
        except PagetrailError as exc:
            return Check("archive", endpoint.prefix, False, f"{exc.code}: {_first_line(exc)}",
                         required=False, seconds=time.monotonic() - started)
        seconds = time.monotonic() - started
        if response.status >= 500 or response.status == 429:
            return Check("archive", endpoint.prefix, False,
                         f"answers HTTP {response.status} (busy or down)", required=False,
                         seconds=seconds)
        return Check("archive", endpoint.prefix, True,
                     f"answers (HTTP {response.status}, {seconds:.1f} s)", required=False,
                     seconds=seconds)

    prefixes = [p for p in settings.archives if p.strip()]
    return list(await asyncio.gather(*(one(prefix) for prefix in prefixes)))


async def _engines(settings: Settings, fetcher: Fetcher) -> list[Check]:
    from pagetrail.tools.engines.base import SearchContext
    from pagetrail.tools.engines.registry import build_engine_set
    from pagetrail.tools.engines.service import SearchService
    engine_set = build_engine_set(settings, fetcher, None, None)
    checks = [Check("search engine", note.split()[0], False, note.partition(" ")[2],
                    required=False) for note in engine_set.notes if note.strip()]
    if not engine_set.engines:
        return checks
    service = SearchService(engine_set.engines, store=None, settings=settings,
                            secrets=engine_set.secrets)
    service.attempts = 1  # a diagnosis: one try each
    context = SearchContext(dead_url=PROBE_URL)
    started = time.monotonic()
    outcome = await service.search(PROBE_QUERY, limit=1, context=context)
    seconds = time.monotonic() - started
    failed = {f.engine: f.error for f in outcome.failures}
    for engine in engine_set.engines:
        if engine.name in failed:
            checks.append(Check("search engine", engine.name, False,
                                _first_line(Exception(failed[engine.name])), required=False,
                                seconds=seconds))
        else:
            hits = len(outcome.hits.get(engine.name, []))
            checks.append(Check("search engine", engine.name, True,
                                f"answers ({hits} hit{'s' if hits != 1 else ''})",
                                required=False, seconds=seconds))
    return checks


async def run_doctor(settings: Settings | None = None, *, timeout: float = 5.0) -> list[Check]:
    """Check every configured service once; one Check each (database, broker, redis,
    archives, search engines)."""
    from pagetrail.tools.net.fetch import Fetcher as Client

    settings = settings or get_settings()
    probes = [_database(settings, timeout)]
    if settings.broker_url:
        probes.append(_redis("broker", settings.broker_url, timeout))
    if settings.redis_url and settings.redis_url != settings.broker_url:
        probes.append(_redis("redis", settings.redis_url, timeout))
    checks = list(await asyncio.gather(*probes))
    # The probes are paced in this process: with the politeness limits in a Redis that is
    # down, every request would fail for Redis's sake, not the archive's or the engine's.
    local = settings.model_copy(update={"broker_url": None, "redis_url": None})
    async with Client(local) as fetcher:
        remote = await asyncio.gather(_archives(local, fetcher), _engines(local, fetcher))
    return checks + [check for group in remote for check in group]
