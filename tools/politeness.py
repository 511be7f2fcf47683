"""Per-host politeness: how many requests may run at once, and how often, per host.

One small interface (`HostLimiter.slot`) so that a shared backend (Redis, when checks run on
several workers) can replace the in-process implementation without touching the fetcher.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pagetrail.tools.settings import Settings


class HostLimiter(ABC):
    """Grants a slot to send one request to a host."""

    @abstractmethod
    def slot(self, host: str, *, polite: bool) -> AbstractAsyncContextManager[None]:
        """Hold while the request runs. Always bounds concurrency per host; with `polite`,
        also waits until the host's minimum interval since its previous request has passed."""


class LocalHostLimiter(HostLimiter):
    """In-process limiter: a semaphore and a next-free time per host (one event loop).

    Hosts are forgotten once idle — nobody holding or waiting for a slot, and the next-free
    time passed — so a long-lived process (MCP server, Slack bot) that sees many hosts does
    not grow without bound. Forgetting an idle host changes nothing: a fresh semaphore is
    what an idle one is, and a next-free time in the past imposes no wait. The sweep runs
    when the table reaches `sweep_at` hosts, then at twice what it kept (amortised O(1))."""

    def __init__(self, *, rps: float = 1.0, concurrency: int = 2, sweep_at: int = 1024) -> None:
        self.interval = 1.0 / rps if rps > 0 else 0.0
        self.concurrency = max(1, concurrency)
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._next_free: dict[str, float] = {}
        self._users: dict[str, int] = {}  # holding or waiting for the host's semaphore
        self._min_sweep = max(1, sweep_at)
        self._sweep_at = self._min_sweep

    def __len__(self) -> int:
        """Hosts currently tracked."""
        return len(self._semaphores)

    def _semaphore(self, host: str) -> asyncio.Semaphore:
        sem = self._semaphores.get(host)
        if sem is None:
            if len(self._semaphores) >= self._sweep_at:
                self._sweep()
            sem = self._semaphores[host] = asyncio.Semaphore(self.concurrency)
        return sem

    def _sweep(self) -> None:
        """Forget idle hosts. Synchronous: nothing on the loop runs in between."""
        now = time.monotonic()
        for host in [h for h in self._semaphores
                     if not self._users.get(h) and self._next_free.get(h, 0.0) <= now]:
            del self._semaphores[host]
            self._next_free.pop(host, None)
            self._users.pop(host, None)
        self._sweep_at = max(self._min_sweep, 2 * len(self._semaphores))

    def _reserve(self, host: str, polite: bool) -> float:
        """Seconds to wait before sending; books the host's next free time. Synchronous, so
        concurrent callers on one loop get distinct, spaced times."""
        now = time.monotonic()
        start = max(now, self._next_free.get(host, 0.0)) if polite else now
        # Interactive requests also push the next polite request back: the host sees both.
        self._next_free[host] = max(self._next_free.get(host, 0.0), start + self.interval)
        return start - now

    @asynccontextmanager
    async def _slot(self, host: str, polite: bool) -> AsyncIterator[None]:
        semaphore = self._semaphore(host)
        self._users[host] = self._users.get(host, 0) + 1  # no await since _semaphore()
        try:
            async with semaphore:
                delay = self._reserve(host, polite)
                if delay > 0:
                    await asyncio.sleep(delay)
                yield
        finally:
            left = self._users[host] - 1
            if left:
                self._users[host] = left
            else:
                del self._users[host]

    def slot(self, host: str, *, polite: bool) -> AbstractAsyncContextManager[None]:
        return self._slot(host.lower(), polite)


# One local limiter per event loop and configuration, so that fetchers created for separate
# tasks still share a host's budget (asyncio primitives belong to one loop).
_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[float, int],
                                                                   LocalHostLimiter]]
_shared = weakref.WeakKeyDictionary()


def shared_local_limiter(rps: float, concurrency: int) -> LocalHostLimiter:
    loop = asyncio.get_running_loop()
    per_loop = _shared.setdefault(loop, {})
    key = (rps, concurrency)
    if key not in per_loop:
        per_loop[key] = LocalHostLimiter(rps=rps, concurrency=concurrency)
    return per_loop[key]


# --- shared across processes and machines: Redis -----------------------------------------

# Take a host's slot, atomically, on the Redis server's clock (one clock for every machine).
# KEYS: the host's leases (sorted set: token → expiry), its next-free time.
# ARGV: token, concurrency, interval, polite (1/0), lease seconds.
# Returns "-1" when every slot is leased, else the seconds to wait before sending (a string:
# Redis truncates Lua numbers to integers).
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return '-1'
end
local interval = tonumber(ARGV[3])
local next_free = tonumber(redis.call('GET', KEYS[2]) or '0')
local start = now
if ARGV[4] == '1' and next_free > now then start = next_free end
local booked = math.max(next_free, start + interval)
redis.call('SET', KEYS[2], string.format('%.6f', booked),
           'PX', math.ceil((booked - now) * 1000) + 1000)
local expiry = start + tonumber(ARGV[5])
redis.call('ZADD', KEYS[1], expiry, ARGV[1])
local ttl = math.ceil((expiry - now) * 1000) + 1000
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return string.format('%.6f', start - now)
"""
_RELEASE = "return redis.call('ZREM', KEYS[1], ARGV[1])"
# Just before a polite request is sent: the host's last actual start must be `interval` ago
# (a caller that woke up late must not leave the next one too short a gap). KEYS: the host's
# last-start time. ARGV: interval. Returns "0" (start now: recorded) or the seconds to wait.
_CONFIRM = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local interval = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
if now < last + interval then
  return string.format('%.6f', last + interval - now)
end
redis.call('SET', KEYS[1], string.format('%.6f', now), 'PX', math.ceil(interval * 1000) + 1000)
return '0'
"""
# Added to the interval at confirmation: what may pass between the confirmation and the
# request reaching the host (a new connection's handshake), so the host never sees two
# requests closer than the interval.
SEND_MARGIN = 0.01
POLL_SECONDS = 0.02  # wait between tries while a host's slots are all leased


class RedisHostLimiter(HostLimiter):
    """Per-host concurrency and pace shared by every process using one Redis.

    A slot is a lease (a token in the host's sorted set, scored by its expiry): released when
    the request ends, and expiring by itself after `lease_seconds` when its holder died, so a
    killed worker never keeps a host's slot for good. The next-free time is booked in the
    same script, so callers on any machine get distinct, spaced start times; a polite
    caller then confirms its actual start against the host's last one (a caller that slept
    past its time pushes the next one back instead of leaving it too short a gap). Redis
    connection errors are retried by the client (with backoff) before they surface."""

    def __init__(self, client: object, *, rps: float = 1.0, concurrency: int = 2,
                 lease_seconds: float = 60.0, prefix: str = "pagetrail:host:") -> None:
        from redis.asyncio import Redis

        assert isinstance(client, Redis)
        self.client = client
        self.interval = 1.0 / rps if rps > 0 else 0.0
        self.concurrency = max(1, concurrency)
        self.lease_seconds = lease_seconds
        self.prefix = prefix
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._confirm = client.register_script(_CONFIRM)

    def _keys(self, host: str) -> list[str]:
        return [f"{self.prefix}{host}:leases", f"{self.prefix}{host}:next",
                f"{self.prefix}{host}:last"]

    @asynccontextmanager
    async def _slot(self, host: str, polite: bool) -> AsyncIterator[None]:
        import uuid

        keys = self._keys(host)
        token = uuid.uuid4().hex
        args = [token, self.concurrency, f"{self.interval:.6f}", "1" if polite else "0",
                f"{self.lease_seconds:.3f}"]
        while True:
            answer = float(await self._acquire(keys=keys[:2], args=args))
            if answer >= 0:
                break
            await asyncio.sleep(POLL_SECONDS * (0.5 + random.random()))
        try:
            if answer > 0:
                await asyncio.sleep(answer)
            if polite and self.interval > 0:
                margin = [f"{self.interval + SEND_MARGIN:.6f}"]
                while (wait := float(await self._confirm(keys=keys[2:], args=margin))) > 0:
                    await asyncio.sleep(wait)
            yield
        finally:
            # Shielded: a cancelled request still gives its slot back now, not at expiry.
            await asyncio.shield(self._release(keys=keys[:1], args=[token]))

    def slot(self, host: str, *, polite: bool) -> AbstractAsyncContextManager[None]:
        return self._slot(host.lower(), polite)


def redis_client(url: str) -> object:
    """An asyncio Redis client for `url` that rides out a short outage (a restart): connection
    errors are retried with exponential backoff for about half a minute."""
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    return Redis.from_url(url, retry=Retry(ExponentialBackoff(cap=2.0, base=0.1), 20),
                          socket_connect_timeout=2.0, socket_timeout=10.0,
                          health_check_interval=30)


_shared_redis: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, float, int, float],
                                                                         RedisHostLimiter]]
_shared_redis = weakref.WeakKeyDictionary()


def limiter_redis_url(settings: Settings) -> str | None:
    """Where shared limits live: PAGETRAIL_REDIS_URL, else the broker when it is Redis."""
    if settings.redis_url:
        return settings.redis_url
    broker = settings.broker_url or ""
    return broker if broker.startswith(("redis://", "rediss://", "unix://")) else None


def shared_limiter(settings: Settings, rps: float | None = None,
                   concurrency: int | None = None) -> HostLimiter:
    """The configured limiter: Redis-backed when a Redis is configured (limits hold across
    workers and machines), else the event loop's in-process one. `rps` and `concurrency`
    default to the per-host settings (search engines pass their own pace)."""
    rps = settings.per_host_rps if rps is None else rps
    concurrency = settings.per_host_concurrency if concurrency is None else concurrency
    url = limiter_redis_url(settings)
    if url is None:
        return shared_local_limiter(rps, concurrency)
    loop = asyncio.get_running_loop()
    per_loop = _shared_redis.setdefault(loop, {})
    key = (url, rps, concurrency, settings.lease_seconds)
    if key not in per_loop:
        per_loop[key] = RedisHostLimiter(redis_client(url), rps=rps, concurrency=concurrency,
                                         lease_seconds=settings.lease_seconds)
    return per_loop[key]
