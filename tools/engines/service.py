"""Run one query on several engines at once: cached, paced, retried, each failing alone.

For each engine: answer from the store's SearchCache when a fresh entry exists (key:
engine, query, scope); otherwise wait for the engine's rate-limit slot, call it, retry
`RateLimited`/`EngineTransient` with backoff (tenacity) honouring Retry-After, and cache
the answer for `settings.search_cache_ttl` seconds. An engine that still fails becomes an
`EngineFailure` in the outcome; the other engines' hits are returned as usual.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pydantic import ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
)

from pagetrail.store.db import STORE_ERRORS, Store
from pagetrail.store.searches import cache_hits, cached_hits
from pagetrail.tools.engines.base import (
    Engine,
    EngineTransient,
    SearchContext,
    redact,
)
from pagetrail.tools.engines.failures import failure_kind
from pagetrail.tools.errors import PagetrailError, RateLimited
from pagetrail.tools.models import EngineFailure, Hit
from pagetrail.tools.net.politeness import HostLimiter, shared_limiter
from pagetrail.tools.settings import Settings, get_settings

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 500  # longer "queries" are pasted text: APIs reject or truncate them
MAX_LIMIT = 100
MAX_RETRY_WAIT = 30.0  # a Retry-After longer than this is a failure now, not a wait
# Engines turn what they expect into PagetrailErrors; these are what an engine's own parsing
# raises on an answer it did not foresee (a missing key, a null, a wrong type). Reported as
# that engine's `internal` failure. An ImportError or a NameError is not: it fails loudly.
ENGINE_BUGS = (LookupError, TypeError, AttributeError, ValueError)
MAX_RATE_LIMITED_ATTEMPTS = 8  # with a deadline: 429s waited out as told, up to this many tries


def backoff(attempt: int) -> float:
    """Exponential backoff with jitter: 0.5 s, 1 s, 2 s … capped at 8 s, plus up to 0.5 s."""
    return min(8.0, 0.5 * 2 ** max(0, attempt - 1)) + random.uniform(0, 0.5)


def utcnow() -> datetime:
    return datetime.now(UTC)


def cache_query(query: str) -> str:
    return " ".join(query.split()).lower()


def cache_scope(engine: Engine, site: str | None, limit: int,
                context: SearchContext | None) -> str:
    """The rest of the cache key: site, limit and, for engines that use it, the context."""
    scope = f"site={(site or '').lower()};limit={limit}"
    if context is not None and getattr(engine, "uses_context", False):
        scope += ";" + context.cache_scope()
    return scope


@dataclass
class SearchOutcome:
    query: str
    site: str | None
    hits: dict[str, list[Hit]] = field(default_factory=dict)  # engine name → ranked hits
    failures: list[EngineFailure] = field(default_factory=list)
    cached: set[str] = field(default_factory=set)  # engines answered from the cache

    def all_hits(self) -> list[Hit]:
        """Every engine's hits, engine after engine (each keeps its own rank)."""
        return [hit for hits in self.hits.values() for hit in hits]


def _store_failure(what: str, exc: Exception) -> EngineFailure:
    return EngineFailure(engine="store", error=f"{what}: {type(exc).__name__}", kind="store")


class SearchService:
    def __init__(
        self,
        engines: Sequence[Engine],
        *,
        store: Store | None = None,
        settings: Settings | None = None,
        limiter: HostLimiter | None = None,
        clock: Callable[[], datetime] = utcnow,
        secrets: Iterable[str] = (),
        attempt_timeout: float | None = None,
        max_retry_wait: float = MAX_RETRY_WAIT,
    ) -> None:
        self.settings = settings or get_settings()
        self.engines = list(engines)
        self.store = store
        self._limiter = limiter
        self.clock = clock
        self.secrets = [s for s in secrets if s]
        self.attempts = max(1, self.settings.retries + 1)
        self.attempt_timeout = attempt_timeout or self.settings.total_timeout
        self.max_retry_wait = max_retry_wait
        self.calls: dict[str, int] = {}  # engine name → live calls (attempts) made
        self.rate_limited: dict[str, int] = {}  # engine name → attempts answered 429
        # time.monotonic() by which every answer is needed (a recovery's budget), or None.
        # With one, a 429 is waited out as told (Retry-After) as long as the wait ends
        # before it, rather than after `retries` attempts.
        self.deadline: float | None = None

    @property
    def limiter(self) -> HostLimiter:
        return self.limiter_for(None)

    def limiter_for(self, engine: Engine | None) -> HostLimiter:
        # The per-host politeness interface, keyed "search:<engine>": one budget per search
        # API shared by every service in the process (and across workers with a shared
        # backend). Created lazily: the local limiter belongs to the running event loop.
        # An engine may carry its own pace (`rps`, e.g. a self-hosted SearXNG).
        if self._limiter is None:
            rps = getattr(engine, "rps", None) or self.settings.search_rps
            return shared_limiter(self.settings, rps)
        return self._limiter

    @property
    def names(self) -> list[str]:
        return [engine.name for engine in self.engines]

    async def search(
        self,
        query: str,
        *,
        site: str | None = None,
        limit: int = 10,
        context: SearchContext | None = None,
        engines: Iterable[str] | None = None,
    ) -> SearchOutcome:
        wanted = set(engines) if engines is not None else None
        chosen = [e for e in self.engines if wanted is None or e.name in wanted]
        query = " ".join(query.split())[:MAX_QUERY_CHARS]
        limit = max(1, min(limit, MAX_LIMIT))
        outcome = SearchOutcome(query=query, site=site)
        if not query:
            return outcome  # nothing to ask
        answers = await asyncio.gather(
            *(self._one(engine, query, site, limit, context, outcome.failures)
              for engine in chosen)
        )
        for engine, (hits, cached, failure) in zip(chosen, answers, strict=True):
            if failure is not None:
                outcome.failures.append(failure)
                continue
            # Backends behind a metasearch that did not answer: named, their peers' hits kept.
            outcome.failures.extend(
                EngineFailure(engine=f"{engine.name}:{backend}", error=why, kind="partial")
                for backend, why in getattr(hits, "unresponsive", ()))
            outcome.hits[engine.name] = list(hits)
            if cached:
                outcome.cached.add(engine.name)
        return outcome

    async def _one(self, engine: Engine, query: str, site: str | None, limit: int,
                   context: SearchContext | None, failures: list[EngineFailure],
                   ) -> tuple[list[Hit], bool, EngineFailure | None]:
        scope = cache_scope(engine, site, limit, context)
        cached = await self._cache_get(engine.name, query, scope, failures)
        if cached is not None:
            return cached, True, None
        try:
            hits = await self._call_with_retries(engine, query, site, limit, context)
        except PagetrailError as exc:
            message = redact(str(exc), self.secrets)
            log.warning("search engine %s failed: %s", engine.name, message)
            return [], False, EngineFailure(engine=engine.name, error=f"{exc.code}: {message}",
                                            kind=failure_kind(exc))
        except STORE_ERRORS as exc:  # the local index lives in the store
            log.warning("search engine %s: store failed: %s", engine.name, exc)
            return [], False, EngineFailure(engine=engine.name,
                                            error=f"store: {type(exc).__name__}", kind="store")
        except ENGINE_BUGS as exc:  # one engine's bug must not sink the other engines
            log.exception("search engine %s crashed", engine.name)
            return [], False, EngineFailure(engine=engine.name,
                                            error=f"internal: {type(exc).__name__}",
                                            kind="internal")
        if getattr(hits, "unresponsive", None):
            return hits, False, None  # incomplete: not cached, the next search asks again
        await self._cache_put(engine.name, query, scope, hits, failures)
        return hits, False, None

    # --- retries ----------------------------------------------------------------------------

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            return exc.retry_after
        return backoff(state.attempt_number)

    def _stop(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RateLimited) and self.deadline is not None:
            wait = exc.retry_after if exc.retry_after is not None else backoff(state.attempt_number)
            return (state.attempt_number >= MAX_RATE_LIMITED_ATTEMPTS
                    or wait > self.max_retry_wait
                    or time.monotonic() + wait >= self.deadline)
        if state.attempt_number >= self.attempts:
            return True
        # Asked to come back much later: give up now rather than stall the recovery.
        return (isinstance(exc, RateLimited) and exc.retry_after is not None
                and exc.retry_after > self.max_retry_wait)

    async def _call_with_retries(self, engine: Engine, query: str, site: str | None,
                                 limit: int, context: SearchContext | None) -> list[Hit]:
        retrying = AsyncRetrying(
            retry=retry_if_exception_type((RateLimited, EngineTransient)),
            stop=self._stop,
            wait=self._wait,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._call_once(engine, query, site, limit, context)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def _call_once(self, engine: Engine, query: str, site: str | None, limit: int,
                         context: SearchContext | None) -> list[Hit]:
        paced = bool(getattr(engine, "rate_limited", True))
        started = time.monotonic()
        try:
            async with self.limiter_for(engine).slot(f"search:{engine.name}", polite=paced):
                self.calls[engine.name] = self.calls.get(engine.name, 0) + 1
                hits = await asyncio.wait_for(
                    engine.search(query, site=site, limit=limit, context=context),
                    timeout=self.attempt_timeout,
                )
        except TimeoutError:
            raise EngineTransient(
                f"{engine.name}: no answer within {self.attempt_timeout:g}s") from None
        except RateLimited:
            self.rate_limited[engine.name] = self.rate_limited.get(engine.name, 0) + 1
            raise
        log.debug("search %s %r: %d hits in %.2fs", engine.name, query, len(hits),
                  time.monotonic() - started)
        return hits

    # --- cache ------------------------------------------------------------------------------

    async def _cache_get(self, engine: str, query: str, scope: str,
                         failures: list[EngineFailure]) -> list[Hit] | None:
        if self.store is None:
            return None
        try:
            return await asyncio.to_thread(self._cache_get_sync, engine, query, scope)
        except (*STORE_ERRORS, ValidationError) as exc:  # unreadable: a miss, said so
            log.warning("search cache read failed: %s", exc)
            failures.append(_store_failure("search cache read", exc))
            return None

    def _cache_get_sync(self, engine: str, query: str, scope: str) -> list[Hit] | None:
        assert self.store is not None
        hits = cached_hits(self.store, engine, cache_query(query), scope, self.clock())
        return None if hits is None else [Hit.model_validate(item) for item in hits]

    async def _cache_put(self, engine: str, query: str, scope: str, hits: list[Hit],
                         failures: list[EngineFailure]) -> None:
        if self.store is None or self.settings.search_cache_ttl <= 0:
            return
        try:
            await asyncio.to_thread(self._cache_put_sync, engine, query, scope, hits)
        except STORE_ERRORS as exc:  # the hits stand; only the next search pays again
            log.warning("search cache write failed: %s", exc)
            failures.append(_store_failure("search cache write", exc))

    def _cache_put_sync(self, engine: str, query: str, scope: str, hits: list[Hit]) -> None:
        assert self.store is not None
        cache_hits(self.store, engine, cache_query(query), scope,
                   [hit.model_dump(mode="json") for hit in hits], now=self.clock(),
                   ttl=timedelta(seconds=self.settings.search_cache_ttl))
