"""The MCP server as desktop clients run it: `pagetrail serve mcp` as a subprocess, over stdio."""

from __future__ import annotations

import os
import sys

import pytest
from mcp import Client, StdioServerParameters
from test_mcp_inprocess import (
    assert_clean_errors,
    assert_tool_list,
    cancel_one_recovery,
    exercise_every_tool,
    recover_with_progress,
    structured,
)

pytestmark = pytest.mark.testbed


@pytest.fixture
def stdio_params(testbed, tmp_path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k.startswith("PAGETRAIL_")}
    env.update(testbed.env)
    env["PAGETRAIL_DATABASE_URL"] = f"sqlite:///{tmp_path / 'mcp.db'}"
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "pagetrail.cli", "serve", "mcp"], env=env)


async def test_stdio_session(stdio_params, tiny_world) -> None:
    """One subprocess for the whole conversation, as a desktop client keeps it."""
    async with Client(stdio_params, read_timeout_seconds=60) as client:
        await assert_tool_list(client)
        await recover_with_progress(client, tiny_world)
        await exercise_every_tool(client, tiny_world)
        await assert_clean_errors(client)
        seconds = await cancel_one_recovery(client, tiny_world.archived_only)
        assert seconds < 10
        # Cancelled, not crashed: the same session answers the next call.
        check = structured(await client.call_tool("check_link", {"url": tiny_world.news_root}))
        assert check["verdict"] == "ok"
