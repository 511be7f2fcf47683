"""CPU-heavy steps (parsing a page, its signature, ranking candidates) off the event loop.

The loop that runs pagetrail's requests also acknowledges Slack's commands (within 3 s) and
serves MCP; a 2 MB archived page takes seconds to parse, which on the loop would hold every
other request up. These steps run in one small shared pool instead: bounded (WORKERS at
once: a burst of heavy jobs queues here rather than crowding the machine), and the loop
goes on serving while they run. Threads, not processes: the documents go back and forth
without copying, and lxml parses without the GIL.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

WORKERS = max(2, min(4, os.cpu_count() or 2))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="pagetrail-cpu")
        return _pool


async def off_loop(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in the CPU pool, awaited without blocking the loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor(), functools.partial(fn, *args, **kwargs))
