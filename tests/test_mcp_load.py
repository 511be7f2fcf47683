"""MCP stays responsive while heavy tools run (#20): two fetch_memento calls parse a 4.5 MB
archived page (tests/heavy_archive.py) while other calls on the same server, through the
SDK's client, are answered fast — the parsing runs off the event loop."""

from __future__ import annotations

import time

import anyio
from heavy_archive import HeavyArchive
from mcp import Client

from pagetrail.server.app import build_server
from pagetrail.tools.settings import Settings

BOUND = 2.5  # seconds for a call that needs no parsing: generous, far below a parse


async def test_light_calls_answer_fast_while_huge_pages_are_parsed(tmp_path) -> None:
    archive = HeavyArchive().start()
    try:
        settings = Settings(archives=[archive.prefix], database_url=f"sqlite:///{tmp_path}/m.db",
                            search_engines=["site"], retries=0)
        server = build_server(settings, max_concurrent=4)
        heavy_done: list[bool] = []
        light: list[float] = []
        async with Client(server) as client:

            async def heavy(n: int) -> None:
                result = await client.call_tool("fetch_memento",
                                                {"url": f"https://8.8.8.8/big/{n}"})
                assert not result.is_error, result.content
                heavy_done.append(True)

            async with anyio.create_task_group() as group:
                for n in range(2):
                    group.start_soon(heavy, n)
                while archive.captures < 1:
                    await anyio.sleep(0.05)
                while len(heavy_done) < 2:
                    started = time.monotonic()
                    result = await client.call_tool("check_link", {"url": "ftp://x.example/"})
                    light.append(time.monotonic() - started)
                    assert result.is_error and "invalid_url" in result.content[0].text
                    await anyio.sleep(0.1)
    finally:
        archive.stop()
    assert len(light) >= 3, light
    assert max(light) < BOUND, sorted(light)[-3:]
