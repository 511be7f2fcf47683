"""Per-user / per-channel limiter: bursts wait their turn, other people are not held up."""

from __future__ import annotations

import asyncio
import contextlib
import time

from pagetrail.bot.ratelimit import MAX_QUEUED_PER_USER, KeyedLimiter, Limit, job_keys


async def test_burst_is_queued_in_order_and_paced() -> None:
    limiter = KeyedLimiter({"user": Limit(rate=20.0, burst=1), "channel": Limit(100, 100)})
    done: list[tuple[int, float]] = []
    start = time.monotonic()

    async def job(i: int) -> None:
        await limiter.acquire(job_keys("U1", "C1"))
        done.append((i, time.monotonic() - start))

    await asyncio.gather(*(job(i) for i in range(5)))
    assert [i for i, _ in done] == [0, 1, 2, 3, 4]  # nobody dropped, first come first served
    assert done[-1][1] >= 4 / 20 * 0.9  # paced at the user's rate


async def test_other_users_are_not_held_up() -> None:
    limiter = KeyedLimiter({"user": Limit(rate=1.0, burst=1), "channel": Limit(100, 100)})
    await limiter.acquire(job_keys("U1", "C1"))
    slow = asyncio.create_task(limiter.acquire(job_keys("U1", "C1")))  # waits ~1 s
    await asyncio.sleep(0.05)
    assert limiter.ahead_of(job_keys("U1", "C1")) == 1
    started = time.monotonic()
    await limiter.acquire(job_keys("U2", "C1"))
    # U1's second job waits ~1 s; U2's is not queued behind it. Half that is the bound, so a
    # busy CI machine cannot fail a test of who waits for whom.
    assert time.monotonic() - started < 0.5
    await slow


async def test_channel_limit_applies_across_users() -> None:
    limiter = KeyedLimiter({"user": Limit(100, 100), "channel": Limit(rate=10.0, burst=2)})
    started = time.monotonic()
    await asyncio.gather(*(limiter.acquire(job_keys(f"U{i}", "C1")) for i in range(4)))
    assert time.monotonic() - started >= 2 / 10 * 0.9


def test_a_persons_queue_is_capped_and_others_are_not_affected() -> None:
    limiter = KeyedLimiter({"user": Limit(1, 1)})
    assert limiter.max_queued == MAX_QUEUED_PER_USER == 10
    limiter.max_queued = 3
    keys = job_keys("U1", "C1")
    assert [limiter.admit(keys) for _ in range(4)] == [True, True, True, False]
    assert limiter.admit(job_keys("U2", "C1"))  # someone else: their own queue
    assert limiter.admit(job_keys("U1", "C2")) is False  # the person's queue, any channel
    limiter.release(keys)
    assert limiter.admit(keys)


async def test_take_turn_gives_the_place_back_even_when_cancelled() -> None:
    limiter = KeyedLimiter({"user": Limit(rate=0.01, burst=1)}, max_queued=1)
    keys = job_keys("U1", "C1")
    assert limiter.admit(keys)
    await limiter.take_turn(keys)  # the burst token: at once
    assert limiter.admit(keys)     # the place was given back
    waiting = asyncio.create_task(limiter.take_turn(keys))  # no token for ~100 s
    await asyncio.sleep(0.05)
    assert limiter.admit(keys) is False
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiting
    assert limiter.admit(keys)
