"""Per-host limiter: idle hosts are forgotten, busy or rate-bound hosts are not."""

from __future__ import annotations

import asyncio
import time
from itertools import pairwise

from pagetrail.tools.net.politeness import LocalHostLimiter


async def _touch(limiter: LocalHostLimiter, hosts: list[str]) -> None:
    for host in hosts:
        async with limiter.slot(host, polite=False):
            pass


async def test_the_host_table_does_not_grow_with_every_host_seen() -> None:
    """Audit repro (limiter_growth.py): one entry per host ever seen, never pruned."""
    limiter = LocalHostLimiter(rps=0, concurrency=2)  # no interval: a host is idle at once
    await _touch(limiter, [f"h{i}.attacker.example" for i in range(5000)])
    assert len(limiter._semaphores) <= 2048
    assert len(limiter._next_free) <= 2048


async def test_a_held_or_awaited_host_is_not_forgotten() -> None:
    limiter = LocalHostLimiter(rps=0, concurrency=1, sweep_at=4)
    entered: list[str] = []
    release = asyncio.Event()

    async def hold(name: str) -> None:
        async with limiter.slot("busy.example", polite=False):
            entered.append(name)
            await release.wait()

    first = asyncio.create_task(hold("first"))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(hold("second"))  # waits for the only slot
    await asyncio.sleep(0.01)
    await _touch(limiter, [f"idle{i}.example" for i in range(50)])  # many sweeps
    third = asyncio.create_task(hold("third"))
    await asyncio.sleep(0.05)
    assert entered == ["first"]  # concurrency 1 still holds across the sweeps
    assert "busy.example" in limiter._semaphores
    release.set()
    await asyncio.gather(first, second, third)
    assert sorted(entered) == ["first", "second", "third"]
    await _touch(limiter, [f"later{i}.example" for i in range(50)])
    assert "busy.example" not in limiter._semaphores  # idle now: forgotten
    assert not limiter._users


async def test_a_host_within_its_interval_keeps_its_next_free_time() -> None:
    limiter = LocalHostLimiter(rps=5.0, concurrency=2, sweep_at=4)  # 0.2 s apart
    async with limiter.slot("slow.example", polite=True):
        pass
    await _touch(limiter, [f"other{i}.example" for i in range(50)])  # sweeps run
    started = time.monotonic()
    async with limiter.slot("slow.example", polite=True):
        waited = time.monotonic() - started
    assert waited >= 0.1  # the 0.2 s interval, less the time the sweeps took


def test_a_batch_is_ordered_so_that_each_hosts_urls_are_spread_out() -> None:
    """Checks go out in chunks that last as long as their slowest URL: URLs bunched per host
    (a site's export, sorted) would make chunks wait on the host's rate. The order spreads
    each host evenly over the batch and keeps a host's own order."""
    from pagetrail.tools.net.politeness import spread_hosts

    urls = ([f"https://a.example/{i}" for i in range(30)]
            + [f"https://{h}.example/{i}" for h in "bcd" for i in range(10)]
            + ["not a url", "http://[::1"])  # no host, malformed: placed all the same
    order = spread_hosts(urls)
    assert sorted(order) == list(range(len(urls)))
    out = [urls[i] for i in order]

    def host(url: str) -> str:
        return url.split("/")[2] if url.startswith("https://") else ""

    for name in ("a.example", "b.example", "c.example", "d.example"):
        mine = [u for u in out if host(u) == name]
        assert mine == [u for u in urls if host(u) == name]  # a host's own order kept
    for name in ("b.example", "c.example", "d.example"):  # 10 of 62: ideally 6 apart
        places = [i for i, u in enumerate(out) if host(u) == name]
        assert min(b - a for a, b in pairwise(places)) >= 5
    runs = [host(u) for u in out]
    assert not any(runs[i] == runs[i + 1] == runs[i + 2] == "a.example"
                   for i in range(len(runs) - 2))  # half the batch, never three in a row
