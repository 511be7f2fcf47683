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
from collections.abc import AsyncIterator, Sequence
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


# --- batch order --------------------------------------------------------------------------

def spread_hosts(urls: Sequence[str]) -> list[int]:
    """An order (indexes into `urls`) that spreads each host's URLs evenly over the whole
    batch: the k-th of a host's n URLs goes at about (k + phase) / n of the way through,
    the phase fixed per host (so hosts with as many URLs do not all come at once), a host's
    own URLs in their given order.

    Why: bulk checks go out in chunks, and a chunk takes as long as its slowest URL. URLs in
    input order (a page's links, a site's export) or at random bunch up per host, so some
    URL of a chunk often waits for its host's rate while the rest of the chunk is done; spread
    out, each host sees a steady trickle and its rate is rarely what a chunk waits for. The
    limits themselves are unchanged (the limiter enforces them whatever the order)."""
    from urllib.parse import urlsplit
    from zlib import crc32

    by_host: dict[str, list[int]] = {}
    for index, url in enumerate(urls):
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:  # not a URL: the job records the error; its place does not matter
            host = ""
        by_host.setdefault(host, []).append(index)
    placed: list[tuple[float, int]] = []
    for host, indexes in by_host.items():
        phase = (crc32(host.encode("utf-8", "surrogatepass")) % 1000) / 1000
        placed.extend(((k + phase) / len(indexes), index) for k, index in enumerate(indexes))
    placed.sort()
    return [index for _, index in placed]


# --- shared across processes and machines: Redis -----------------------------------------

# Why a sliding-window log of *sends*, not booked start times: what must hold is "at most
# `limit` requests reach the host in any `window` seconds", measured at the host. A booked
# start time says nothing about when the request arrives (the caller may be descheduled
# between the booking and the send, on a loaded machine for hundreds of ms), so spacing
# bookings cannot bound arrivals. What is known for certain, in real time, is that a request
# arrives after its booking (made immediately before the send, under the concurrency lease)
# and before its release (the exchange ended). So each request occupies [booked, released]
# in the host's log, and a polite request is booked only when fewer than `limit` requests
# have a `released` within the last `window` seconds or are still in flight. Then any window
# at the host holds at most `limit` arrivals: take the one booked last in it; every other
# arrival in the window was booked before it and released no earlier than `window` before its
# booking, so it was counted. The price is latency: a request keeps its place in the window
# until it ends, so a host with a slow answer gets somewhat fewer than `limit` per window.
# Ordering, not clock agreement, is what the argument uses, so it holds across machines on
# the Redis server's clock.
#
# Take a host's slot, atomically, on the Redis server's clock.
# KEYS: the host's leases (sorted set: token → lease expiry), its send log (sorted set:
# token → when the send ended; the lease expiry while in flight).
# ARGV: token, concurrency, window seconds, limit per window (0: no rate), polite (1/0),
# lease seconds.
# Returns "-1" when every slot is leased, "0" when the slot is taken (send now), else the
# seconds until the window has room (a string: Redis truncates Lua numbers to integers).
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return '-1'
end
local window = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
if limit > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.6f', now - window))
  local n = redis.call('ZCARD', KEYS[2])
  if ARGV[5] == '1' and n >= limit then
    local oldest = redis.call('ZRANGE', KEYS[2], n - limit, n - limit, 'WITHSCORES')
    return string.format('%.6f', math.max(tonumber(oldest[2]) + window - now, 0.001))
  end
end
local expiry = now + tonumber(ARGV[6])
redis.call('ZADD', KEYS[1], expiry, ARGV[1])
local ttl = math.ceil((expiry - now) * 1000) + 1000
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
if limit > 0 then
  -- Interactive (not polite) requests are logged too: the host sees them as well.
  redis.call('ZADD', KEYS[2], expiry, ARGV[1])
  ttl = math.ceil((expiry + window - now) * 1000) + 1000
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return '0'
"""
# The exchange ended: give the slot back and close the request's span in the send log (XX:
# an entry already pruned stays gone). KEYS: leases, send log. ARGV: token.
_RELEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZADD', KEYS[2], 'XX', string.format('%.6f', now), ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
"""
POLL_SECONDS = 0.02  # wait between tries while a host's slots are all leased
# Longest single wait for room in a window: the entry to leave it may still be in flight
# (scored by its lease expiry) and end any moment.
WINDOW_POLL_SECONDS = 0.1


def rate_window(rps: float) -> tuple[int, float]:
    """(limit, window seconds) for a rate: at most `limit` sends in any `window`. Whole
    requests per second when rps ≥ 1 (4/s: 4 in any 1 s; 2.5/s rounds down to 2), one per
    1/rps seconds below (0.5/s: 1 in any 2 s); (0, 0) for no rate."""
    if rps <= 0:
        return 0, 0.0
    window = max(1.0, 1.0 / rps)
    return max(1, int(rps * window + 1e-9)), window


class RedisHostLimiter(HostLimiter):
    """Per-host concurrency and rate shared by every process using one Redis.

    A slot is a lease (a token in the host's sorted set, scored by its expiry): released when
    the request ends, and expiring by itself after `lease_seconds` when its holder died, so a
    killed worker never keeps a host's slot for good. The rate is a sliding-window log of
    sends (see the comment above _ACQUIRE): at most `limit` requests reach the host in any
    `window` seconds, as the host measures it, whatever the callers' scheduling delays. A
    request that outlives its lease counts neither as in flight nor in the log afterwards.
    Redis connection errors are retried by the client (with backoff) before they surface."""

    def __init__(self, client: object, *, rps: float = 1.0, concurrency: int = 2,
                 lease_seconds: float = 60.0, prefix: str = "pagetrail:host:") -> None:
        from redis.asyncio import Redis

        assert isinstance(client, Redis)
        self.client = client
        self.limit, self.window = rate_window(rps)
        self.concurrency = max(1, concurrency)
        self.lease_seconds = lease_seconds
        self.prefix = prefix
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)

    def _keys(self, host: str) -> list[str]:
        return [f"{self.prefix}{host}:leases", f"{self.prefix}{host}:sends"]

    @asynccontextmanager
    async def _slot(self, host: str, polite: bool) -> AsyncIterator[None]:
        import uuid

        keys = self._keys(host)
        token = uuid.uuid4().hex
        args = [token, self.concurrency, f"{self.window:.6f}", self.limit,
                "1" if polite else "0", f"{self.lease_seconds:.3f}"]
        while (answer := float(await self._acquire(keys=keys, args=args))) != 0:
            if answer < 0:  # jittered, so that pollers do not move in step
                await asyncio.sleep(POLL_SECONDS * (0.5 + random.random()))
            else:
                await asyncio.sleep(min(answer, WINDOW_POLL_SECONDS) * (1 + random.random() / 4))
        try:
            yield
        finally:
            # Shielded: a cancelled request still gives its slot back now, not at expiry.
            await asyncio.shield(self._release(keys=keys, args=[token]))

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


# --- circuit breaker: a service that throttles or is down is left alone for a while -------

BREAKER_FAILURES = 3  # consecutive throttled/down answers that open the circuit
BREAKER_COOLDOWN = 30.0  # seconds the circuit stays open without a longer Retry-After
BREAKER_MAX_COOLDOWN = 600.0


class CircuitBreaker(ABC):
    """Per service host: `BREAKER_FAILURES` throttled or down answers in a row (or one
    answer with a Retry-After) open the circuit for the cooldown (the Retry-After when it is
    longer, at most `BREAKER_MAX_COOLDOWN`); while open, callers do not ask the host at all.
    A good answer closes it. Shared by every process using one Redis (RedisBreaker)."""

    def __init__(self, *, failures: int = BREAKER_FAILURES, cooldown: float = BREAKER_COOLDOWN,
                 max_cooldown: float = BREAKER_MAX_COOLDOWN) -> None:
        self.failures = max(1, failures)
        self.cooldown = cooldown
        self.max_cooldown = max_cooldown

    def _open_for(self, retry_after: float | None) -> float:
        return min(self.max_cooldown, max(self.cooldown, retry_after or 0.0))

    @abstractmethod
    async def open_for(self, host: str) -> float:
        """Seconds the host's circuit stays open (0: closed, ask away)."""

    @abstractmethod
    async def failure(self, host: str, retry_after: float | None = None) -> float:
        """One throttled/down answer; returns the seconds the circuit is now open (0: not)."""

    @abstractmethod
    async def success(self, host: str) -> None:
        """A good answer: the count of failures in a row starts again."""


class LocalBreaker(CircuitBreaker):
    """In-process breaker (one event loop), on the monotonic clock."""

    def __init__(self, **options: float) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self._fails: dict[str, int] = {}
        self._until: dict[str, float] = {}

    async def open_for(self, host: str) -> float:
        return max(0.0, self._until.get(host.lower(), 0.0) - time.monotonic())

    async def failure(self, host: str, retry_after: float | None = None) -> float:
        host = host.lower()
        fails = self._fails[host] = self._fails.get(host, 0) + 1
        if fails >= self.failures or retry_after:
            seconds = self._open_for(retry_after)
            self._until[host] = max(self._until.get(host, 0.0), time.monotonic() + seconds)
            self._fails[host] = 0
            return seconds
        return 0.0

    async def success(self, host: str) -> None:
        self._fails.pop(host.lower(), None)


# KEYS: the host's failure count, its open-until marker. ARGV: threshold, open seconds,
# count window seconds, force (1: open now: a Retry-After). Returns the seconds now open
# ('0' when still closed), on the Redis server's clock.
_TRIP = """
local fails = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
if fails >= tonumber(ARGV[1]) or ARGV[4] == '1' then
  local ms = math.floor(tonumber(ARGV[2]) * 1000)
  local left = redis.call('PTTL', KEYS[2])
  if left < ms then redis.call('SET', KEYS[2], '1', 'PX', ms) else ms = left end
  redis.call('DEL', KEYS[1])
  return string.format('%.3f', ms / 1000)
end
return '0'
"""


class RedisBreaker(CircuitBreaker):
    """The breaker shared by every process and worker on one Redis: the open state is a key
    that expires by itself when the cooldown ends."""

    def __init__(self, client: object, *, prefix: str = "pagetrail:breaker:",
                 **options: float) -> None:
        from redis.asyncio import Redis

        super().__init__(**options)  # type: ignore[arg-type]
        assert isinstance(client, Redis)
        self.client = client
        self.prefix = prefix
        self._trip = client.register_script(_TRIP)

    def _keys(self, host: str) -> list[str]:
        host = host.lower()
        return [f"{self.prefix}{host}:fails", f"{self.prefix}{host}:open"]

    async def open_for(self, host: str) -> float:
        left = int(await self.client.pttl(self._keys(host)[1]))  # type: ignore[attr-defined]
        return left / 1000 if left > 0 else 0.0

    async def failure(self, host: str, retry_after: float | None = None) -> float:
        seconds = self._open_for(retry_after)
        answer = await self._trip(keys=self._keys(host),
                                  args=[self.failures, f"{seconds:.3f}",
                                        int(self.max_cooldown), "1" if retry_after else "0"])
        return float(answer)

    async def success(self, host: str) -> None:
        await self.client.delete(self._keys(host)[0])  # type: ignore[attr-defined]


_breakers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str | None, CircuitBreaker]]
_breakers = weakref.WeakKeyDictionary()


def shared_breaker(settings: Settings) -> CircuitBreaker:
    """The configured breaker: on Redis when one is configured (every worker sees a circuit
    opened by any of them), else the event loop's in-process one."""
    url = limiter_redis_url(settings)
    per_loop = _breakers.setdefault(asyncio.get_running_loop(), {})
    if url not in per_loop:
        per_loop[url] = LocalBreaker() if url is None else RedisBreaker(redis_client(url))
    return per_loop[url]
