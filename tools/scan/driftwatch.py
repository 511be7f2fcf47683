"""Content drift for links that still work: which links, compared with which capture, and
the answer's wording for the faces. Detection itself is tools/linkcheck/drift.py (one implementation).

A watched link is compared with its capture closest to when pagetrail first saw it (its
oldest check in the store), or the link's stated date when a caller gives one. The digest
offers a drifted link as a Robust Link (tools.recovery.output.robust_anchor).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from pydantic import BaseModel

from pagetrail.store.db import Store
from pagetrail.store.scans import first_seen
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.linkcheck.drift import detect_drift
from pagetrail.tools.models import Drift, EngineFailure
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

DRIFT_CONCURRENCY = 4


class DriftReport(BaseModel):
    drifts: list[Drift]
    failures: list[EngineFailure]
    checked: int


async def check_links(urls: Sequence[str], *, store: Store, settings: Settings,
                      limit: int, seconds: float) -> DriftReport:
    """Drift of up to `limit` working links within `seconds`, each against its capture from
    first sight. A link that cannot be compared (no capture, page unreachable) is skipped;
    a failure is named in `failures`, never raised."""
    chosen = list(dict.fromkeys(urls))[:max(0, limit)]
    since = await asyncio.to_thread(first_seen, store, chosen)
    deadline = time.monotonic() + seconds
    slots = asyncio.Semaphore(DRIFT_CONCURRENCY)
    drifts: list[Drift] = []
    failures: list[EngineFailure] = []

    async def one(url: str, fetcher: Fetcher) -> None:
        async with slots:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                drift = await asyncio.wait_for(
                    detect_drift(url, since=since.get(url), fetcher=fetcher, settings=settings),
                    timeout=left)
            except (PagetrailError, TimeoutError) as exc:
                failures.append(EngineFailure(engine="drift", error=f"{url}: {exc}"[:300]))
                return
            if drift is not None:
                drifts.append(drift)

    async with Fetcher(settings) as fetcher:
        await asyncio.gather(*(one(url, fetcher) for url in chosen))
    drifts.sort(key=lambda d: (d.similarity, d.url))
    return DriftReport(drifts=drifts, failures=failures, checked=len(chosen))
