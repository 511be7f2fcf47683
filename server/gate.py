"""A bounded call gate: at most N tool calls run at once, at most M wait; the rest are refused.

Long calls (a recovery takes seconds and dozens of requests) must not pile up without bound
on one machine: excess calls queue, and beyond the queue they get a clean `Busy` tool error
the client can retry, instead of a server that slows to a crawl or runs out of sockets.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from pagetrail import PagetrailError


class Busy(PagetrailError):
    """Too many calls in flight and in the queue: try again shortly."""

    code = "busy"


class CallGate:
    def __init__(self, max_concurrent: int, max_waiting: int) -> None:
        if max_concurrent < 1 or max_waiting < 0:
            raise ValueError("max_concurrent must be ≥ 1 and max_waiting ≥ 0")
        self.max_concurrent = max_concurrent
        self.max_waiting = max_waiting
        self._slots = asyncio.Semaphore(max_concurrent)
        self.active = 0
        self.waiting = 0
        self.refused = 0
        self.served = 0

    @asynccontextmanager
    async def slot(self, on_queued: Callable[[int], Awaitable[None]] | None = None,
                   ) -> AsyncIterator[None]:
        """Hold one slot for the body; `on_queued(position)` is awaited when the call waits."""
        if self._slots.locked():
            if self.waiting >= self.max_waiting:
                self.refused += 1
                raise Busy(f"server busy: {self.active} calls running, {self.waiting} queued; "
                           "retry shortly")
            self.waiting += 1
            try:
                if on_queued is not None:
                    await on_queued(self.waiting)
                await self._slots.acquire()
            finally:
                self.waiting -= 1
        else:
            await self._slots.acquire()
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1
            self.served += 1
            self._slots.release()
