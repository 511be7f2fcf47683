"""Per-host politeness: how many requests may run at once, and how often, per host.

One small interface (`HostLimiter.slot`) so that a shared backend (Redis, when checks run on
several workers) can replace the in-process implementation without touching the fetcher.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager


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
