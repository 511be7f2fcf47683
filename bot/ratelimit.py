"""Per-user and per-channel rate limits for the bot's work: a burst is queued, not dropped
(up to MAX_QUEUED_PER_USER waiting jobs a person; beyond that a new one is refused).

Each key ("user:U1", "channel:C1") has a token bucket (`rate` per second, `burst` tokens).
A job waits until every one of its keys has a token, then takes them all at once. Jobs of
the same owner (the first key: the person) queue in arrival order; a job waiting for its
owner's token holds nobody else up, so one person's burst never blocks the channel.
Waiting jobs are counted so the acknowledgement can say how many are ahead.

One process, asyncio: this is the local implementation. Across workers (DESIGN.md: Scale)
the same `acquire(keys)` interface would be backed by a shared store (Redis).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

MAX_QUEUED_PER_USER = 10  # jobs of one person waiting for their turn; more are refused


@dataclass
class Bucket:
    rate: float  # tokens per second
    burst: float
    tokens: float
    updated: float

    def refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def wait_time(self, now: float) -> float:
        """Seconds until one token is available (0 when it is)."""
        self.refill(now)
        if self.tokens >= 1.0:
            return 0.0
        return (1.0 - self.tokens) / self.rate if self.rate > 0 else float("inf")


@dataclass
class Limit:
    rate: float
    burst: int


@dataclass
class KeyedLimiter:
    """Token buckets by key prefix: `limits["user"]` applies to every "user:…" key."""

    limits: dict[str, Limit]
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, Bucket] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    waiting: Counter[str] = field(default_factory=Counter)
    max_queued: int = MAX_QUEUED_PER_USER
    _admitted: Counter[str] = field(default_factory=Counter)

    def admit(self, keys: Sequence[str]) -> bool:
        """Reserve a place in the owner's (`keys[0]`) queue, at once (before the job's task
        runs): False when the owner already has `max_queued` jobs waiting. Every admitted
        job calls `release(keys)` once it has its turn (or gives up)."""
        if not keys:
            return True
        owner = keys[0]
        if self._admitted[owner] >= self.max_queued:
            return False
        self._admitted[owner] += 1
        return True

    def release(self, keys: Sequence[str]) -> None:
        if not keys:
            return
        owner = keys[0]
        self._admitted[owner] -= 1
        if self._admitted[owner] <= 0:
            del self._admitted[owner]

    def _bucket(self, key: str) -> Bucket | None:
        limit = self.limits.get(key.split(":", 1)[0])
        if limit is None:
            return None
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = Bucket(limit.rate, float(limit.burst),
                                                 float(limit.burst), self.clock())
        return bucket

    def ahead_of(self, keys: Sequence[str]) -> int:
        """How many jobs are already waiting on any of these keys."""
        return max((self.waiting[k] for k in keys), default=0)

    async def acquire(self, keys: Sequence[str]) -> None:
        """Wait for a token on every key; `keys[0]` is the owner whose jobs run in order."""
        ordered = list(dict.fromkeys(keys))
        if not ordered:
            return
        for key in ordered:
            self.waiting[key] += 1
        try:
            async with self._locks.setdefault(ordered[0], asyncio.Lock()):
                buckets = [b for b in (self._bucket(k) for k in ordered) if b is not None]
                while True:
                    now = self.clock()
                    wait = max((b.wait_time(now) for b in buckets), default=0.0)
                    if wait <= 0:  # no await between the test and the take: atomic
                        for bucket in buckets:
                            bucket.tokens -= 1.0
                        return
                    await asyncio.sleep(min(wait, 60.0))
        finally:
            for key in ordered:
                self.waiting[key] -= 1

    async def take_turn(self, keys: Sequence[str]) -> None:
        """For an admitted job: wait for its turn (`acquire`), then give back the place in
        the owner's queue that `admit` reserved — also when the wait is cancelled."""
        try:
            await self.acquire(keys)
        finally:
            self.release(keys)


def default_limiter() -> KeyedLimiter:
    """A person gets a recovery every 3 s after a burst of 3; a channel every second after 5."""
    return KeyedLimiter({"user": Limit(rate=1 / 3, burst=3), "channel": Limit(rate=1.0, burst=5)})


def job_keys(user: str, channel: str) -> list[str]:
    """The person first: their jobs queue in order; the channel's bucket is shared."""
    return [f"user:{user}", f"channel:{channel}"]
