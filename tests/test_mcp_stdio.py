"""The MCP server as desktop clients run it: `pagetrail serve mcp` as a subprocess, over stdio."""

from __future__ import annotations

import os
import sys

import pytest
from mcp import Client, StdioServerParameters
from test_mcp_inprocess import (
    assert_clean_errors,
    assert_read_only,
    assert_served_capabilities,
    assert_tool_list,
    cancel_one_recovery,
    check_text_with_progress,
    error_of,
    exercise_every_tool,
    get_prompts,
    read_resources,
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
        await assert_served_capabilities(client)
        await assert_tool_list(client)
        await recover_with_progress(client, tiny_world)
        await read_resources(client, tiny_world)
        await get_prompts(client, tiny_world)
        await check_text_with_progress(client, tiny_world)
        await exercise_every_tool(client, tiny_world)
        await assert_clean_errors(client)
        seconds = await cancel_one_recovery(client, tiny_world.archived_only)
        assert seconds < 10
        # Cancelled, not crashed: the same session answers the next call.
        check = structured(await client.call_tool("check_link", {"url": tiny_world.news_root}))
        assert check["verdict"] == "ok"


async def test_stdio_read_only_with_flags_and_environment(stdio_params, tiny_world) -> None:
    """`serve mcp --read-only` with PAGETRAIL_MCP_EXCLUDE_TOOLS: both apply."""
    stdio_params.args = [*stdio_params.args, "--read-only"]
    stdio_params.env = {**(stdio_params.env or {}), "PAGETRAIL_MCP_EXCLUDE_TOOLS": "get_tags"}
    async with Client(stdio_params, read_timeout_seconds=60) as client:
        await assert_served_capabilities(client)
        await assert_read_only(client, tiny_world, excluded=frozenset({"get_tags"}))
        assert error_of(await client.call_tool("get_tags", {"url": tiny_world.moved_from})
                        )["code"] == "tool_disabled"
        await get_prompts(client, tiny_world, writes=False)


async def test_stdio_tool_selection(stdio_params, tiny_world) -> None:
    stdio_params.args = [*stdio_params.args, "--tools", "check_link,search_web"]
    async with Client(stdio_params, read_timeout_seconds=60) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"check_link",
                                                                       "search_web"}
        refused = error_of(await client.call_tool("fetch_memento",
                                                  {"url": tiny_world.moved_from}))
        assert refused["code"] == "tool_disabled"
        check = structured(await client.call_tool("check_link", {"url": tiny_world.news_root}))
        assert check["verdict"] == "ok"
