"""The MCP server over streamable HTTP on 127.0.0.1 (uvicorn in the test's event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
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
    wait_idle,
)

from pagetrail.server.app import build_server
from pagetrail.server.http import MCP_PATH, bound_socket, http_app, uvicorn_server
from pagetrail.server.selection import ToolSelection

pytestmark = pytest.mark.testbed
TOKEN = "test-token-7f3a9c"  # a throw-away secret for this test only


@dataclass
class Running:
    url: str
    server: Any


async def _serve(server: Any, token: str | None) -> AsyncIterator[Running]:
    sock = bound_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    web = uvicorn_server(http_app(server, host="127.0.0.1", token=token),
                         host="127.0.0.1", port=port)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    try:
        while not web.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        yield Running(f"http://127.0.0.1:{port}{MCP_PATH}", server)
    finally:
        web.should_exit = True
        await asyncio.wait_for(task, 15)
        sock.close()


@pytest.fixture
async def http_server(testbed_settings, store) -> AsyncIterator[Running]:
    async for running in _serve(build_server(testbed_settings, store), token=None):
        yield running


@pytest.fixture
async def token_server(testbed_settings, store) -> AsyncIterator[Running]:
    async for running in _serve(build_server(testbed_settings, store), token=TOKEN):
        yield running


async def test_http_session(http_server, tiny_world) -> None:
    async with Client(http_server.url, read_timeout_seconds=60) as client:
        await assert_served_capabilities(client)
        await assert_tool_list(client)
        await recover_with_progress(client, tiny_world)
        await read_resources(client, tiny_world)
        await get_prompts(client, tiny_world)
        await check_text_with_progress(client, tiny_world)
        await exercise_every_tool(client, tiny_world)
        await assert_clean_errors(client)
        await cancel_one_recovery(client, tiny_world.archived_only)
        await wait_idle(http_server.server)  # the server stopped the work
        check = structured(await client.call_tool("check_link", {"url": tiny_world.news_root}))
        assert check["verdict"] == "ok"


async def test_http_read_only_and_selection(testbed_settings, store, tiny_world) -> None:
    """Read-only from the settings (PAGETRAIL_MCP_READ_ONLY), the selection's exclusion
    from the server's builder: both over HTTP."""
    settings = testbed_settings.model_copy(update={"mcp_read_only": True})
    selection = ToolSelection.from_settings(settings, exclude=["get_tags"])
    async for running in _serve(build_server(settings, store, selection=selection), None):
        async with Client(running.url, read_timeout_seconds=60) as client:
            await assert_served_capabilities(client)
            await assert_read_only(client, tiny_world, excluded=frozenset({"get_tags"}))
            assert error_of(await client.call_tool("get_tags", {"url": tiny_world.moved_from})
                            )["code"] == "tool_disabled"


async def test_token_is_required_when_set(token_server, tiny_world) -> None:
    async with httpx.AsyncClient() as raw:
        refused = await raw.post(token_server.url, json={})
        wrong = await raw.post(token_server.url, json={},
                               headers={"Authorization": "Bearer not-the-token"})
    assert refused.status_code == 401 and wrong.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer")

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with http, Client(streamable_http_client(token_server.url, http_client=http)) as client:
        check = structured(await client.call_tool("check_link", {"url": tiny_world.news_root}))
    assert check["verdict"] == "ok"
