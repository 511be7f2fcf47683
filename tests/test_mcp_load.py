"""MCP stays responsive while heavy tools run (#20): two fetch_memento calls parse a 4.5 MB
archived page (tests/heavy_archive.py) while other calls on the same server, through the
SDK's client, are answered — the parsing runs off the event loop. Asserted on counts and
order, not timings: light calls are answered after a huge page was served and before its
parse ended (a parse on the loop would hold them until it ends). The latencies are
bench/mcp_load.py's."""

from __future__ import annotations

import anyio
import pytest
from heavy_archive import HeavyArchive
from mcp import Client

from pagetrail.server.app import build_server
from pagetrail.tools.settings import Settings

DURING = 3  # light answers wanted between a huge page served and the first heavy answer


@pytest.mark.slow
async def test_light_calls_answer_fast_while_huge_pages_are_parsed(tmp_path) -> None:
    archive = HeavyArchive().start()
    try:
        settings = Settings(archives=[archive.prefix], database_url=f"sqlite:///{tmp_path}/m.db",
                            search_engines=["site"], retries=0)
        server = build_server(settings, max_concurrent=4)
        heavy_done: list[bool] = []
        light = 0
        events = archive.events
        async with Client(server) as client:

            async def heavy(n: int) -> None:
                result = await client.call_tool("fetch_memento",
                                                {"url": f"https://8.8.8.8/big/{n}"})
                assert not result.is_error, result.content
                heavy_done.append(True)
                events.append("heavy")

            async with anyio.create_task_group() as group:
                for n in range(2):
                    group.start_soon(heavy, n)
                while archive.captures < 1:
                    await anyio.sleep(0.05)
                while len(heavy_done) < 2:
                    if "served" in events and \
                            events[events.index("served"):].count("light") >= DURING:
                        # Enough light calls were answered during the parse: more would
                        # only take the CPU the parse needs (shared with the other tests).
                        await anyio.sleep(0.1)
                        continue
                    result = await client.call_tool("check_link", {"url": "ftp://x.example/"})
                    light += 1
                    events.append("light")
                    assert result.is_error and "invalid_url" in result.content[0].text
                    await anyio.sleep(0.05)
    finally:
        archive.stop()
    assert light >= DURING, events
    # Order: after the first huge page reached its client, light calls kept being answered
    # while it was parsed, before the first heavy answer.
    window = events[events.index("served"):events.index("heavy")]
    assert window.count("light") >= DURING, events
