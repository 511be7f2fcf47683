"""The MCP server through the SDK's real client (mcp.Client), in-process, against the testbed.

The helpers here (`exercise_every_tool`, `recover_with_progress`, `cancel_one_recovery`,
`assert_clean_errors`) are shared with the stdio and HTTP tests: the same checks, three
transports.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from mcp import Client

from pagetrail.server.app import build_server, server_state

pytestmark = pytest.mark.testbed

TOOLS = {"recover_link", "check_link", "fetch_memento", "extract_signature", "get_tags",
         "search_web", "rank_candidates", "record_pick", "scan_page", "recommend_archived",
         "scan_site", "scan_site_result", "archive_link", "check_links_in_text"}


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text if result.content else result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def assert_tool_list(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        assert "Cost" in (tool.description or ""), tool.name
        assert tool.annotations is not None and tool.annotations.destructive_hint is False
    assert listed["record_pick"].annotations.read_only_hint is False
    assert listed["record_pick"].annotations.open_world_hint is False
    assert listed["check_link"].annotations.read_only_hint is True
    assert listed["recover_link"].annotations.open_world_hint is True
    assert "untrusted" in (listed["recover_link"].description or "")
    url_schema = listed["recover_link"].input_schema["properties"]["url"]
    assert url_schema["maxLength"] == 2048
    assert listed["recover_link"].input_schema["required"] == ["url"]


async def recover_with_progress(client: Client, world: Any) -> list[tuple[float, str]]:
    seen: list[tuple[float, str]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message or ""))

    result = await client.call_tool("recover_link", {"url": world.moved_from, "fresh": True},
                                    progress_callback=on_progress)
    answer = structured(result)
    assert answer["answer"] == "moved"
    assert answer["candidates"][0]["url"] == world.moved_to
    assert answer["candidates"][-1]["kind"] == "archived"
    assert answer["queries"] == []  # only on request
    stages = [message.split(" ")[0].rstrip(":") for _p, message in seen]
    assert stages[:2] == ["checking", "archive"]
    assert "ranking" in stages
    values = [p for p, _m in seen]
    assert values == sorted(values) and len(set(values)) == len(values)  # increasing
    return seen


async def exercise_every_tool(client: Client, world: Any) -> None:
    """Call each tool once against the tiny world and check what it says."""
    check = structured(await client.call_tool("check_link", {"url": world.moved_from}))
    assert check["verdict"] == "dead" and check["status"] == 404

    memento = structured(await client.call_tool("fetch_memento", {"url": world.moved_from}))
    assert memento["document"]["title"] == "Solar farms double in a year"
    assert memento["datetime"].startswith("2019-06-01")
    assert memento["document"]["links"] == []  # clipped for callers

    signature = structured(await client.call_tool("extract_signature",
                                                  {"url": world.moved_from}))
    assert "solar" in signature["ls7"] and len(signature["ls5"]) == 5
    from_replay = structured(await client.call_tool("extract_signature",
                                                    {"url": memento["memento_url"]}))
    assert from_replay["ls5"] == signature["ls5"]

    tags = structured(await client.call_tool("get_tags", {"url": world.moved_from}))
    assert "solar" in {t["tag"] for t in tags["tags"]}

    search = structured(await client.call_tool("search_web", {"query": "solar farms"}))
    assert search["hits"] and search["hits"][0]["url"] == world.moved_to

    ranked = structured(await client.call_tool("rank_candidates", {
        "reference_url": world.moved_from, "candidate_urls": [world.wind_page, world.moved_to]}))
    assert ranked["candidates"][0]["url"] == world.moved_to
    assert ranked["candidates"][0]["confidence"] > ranked["candidates"][1]["confidence"]

    pick = structured(await client.call_tool("record_pick", {
        "dead_url": world.moved_from, "chosen_url": world.moved_to, "note": "from a test"}))
    assert pick["chosen_url"] == world.moved_to and pick["rejected"] is False

    scan = structured(await client.call_tool("scan_page", {"url": world.blog_page, "limit": 1}))
    dead = [link for link in scan["links"] if link["verdict"] == "dead"]
    assert [link["url"] for link in dead] == [world.moved_from]
    assert scan["recoveries"][0]["url"] == world.moved_from
    assert scan["recoveries"][0]["candidates"][0]["url"] == world.moved_to


async def assert_clean_errors(client: Client) -> None:
    for arguments, code in [
        ({"url": "not a url"}, "invalid_url"),
        ({"url": "ftp://example.org/file"}, "invalid_url"),
        ({"url": "http://10.1.2.3/admin"}, "refused_address"),
        ({"url": "http://169.254.169.254/latest/meta-data/"}, "refused_address"),
    ]:
        result = await client.call_tool("recover_link", arguments)
        assert result.is_error, arguments
        assert code in result.content[0].text
    schema_error = await client.call_tool("recover_link", {"max_candidates": 3})
    assert schema_error.is_error and "url" in schema_error.content[0].text
    # The session survives all of that.
    assert structured(await client.call_tool("search_web", {"query": "wind turbines"}))["hits"]


async def cancel_one_recovery(client: Client, url: str) -> float:
    """Start a recovery, cancel it at its first progress notification; return the seconds
    from start to the caller being released (the call must not complete)."""
    first_progress = anyio.Event()
    completed = False

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        first_progress.set()

    async def call() -> None:
        nonlocal completed
        await client.call_tool("recover_link", {"url": url, "fresh": True},
                               progress_callback=on_progress)
        completed = True

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.fail_after(30):
            await first_progress.wait()
        group.cancel_scope.cancel()
    assert not completed
    return time.monotonic() - started


async def wait_idle(server: Any, seconds: float = 3.0) -> None:
    gate = server_state(server).gate
    with anyio.fail_after(seconds):
        while gate.active or gate.waiting:
            await anyio.sleep(0.02)


# --------------------------------------------------------------------------- tests


@pytest.fixture
def mcp_server(testbed_settings, store):
    return build_server(testbed_settings, store)


async def test_lists_tools_with_schemas_and_annotations(mcp_server) -> None:
    async with Client(mcp_server) as client:
        await assert_tool_list(client)


async def test_every_tool_against_the_testbed(mcp_server, tiny_world) -> None:
    async with Client(mcp_server) as client:
        await exercise_every_tool(client, tiny_world)


async def test_recover_link_reports_progress(mcp_server, tiny_world) -> None:
    async with Client(mcp_server) as client:
        seen = await recover_with_progress(client, tiny_world)
    assert any(message.startswith("checking") and tiny_world.moved_from in message
               for _p, message in seen)


async def test_errors_are_tool_errors(mcp_server) -> None:
    async with Client(mcp_server) as client:
        await assert_clean_errors(client)


async def test_cancelled_recovery_stops_on_the_server(mcp_server, tiny_world) -> None:
    async with Client(mcp_server) as client:
        await cancel_one_recovery(client, tiny_world.archived_only)
        await wait_idle(mcp_server)  # the server-side work stopped, it did not run on
        check = structured(await client.call_tool("check_link", {"url": tiny_world.news_root}))
        assert check["verdict"] == "ok"


async def test_excess_calls_queue_then_are_refused(testbed_settings, store, tiny_world) -> None:
    server = build_server(testbed_settings, store, max_concurrent=1, max_waiting=1)
    results: list[Any] = []
    async with Client(server) as client:
        async def call(url: str) -> None:
            results.append(await client.call_tool("recover_link", {"url": url, "fresh": True}))

        async with anyio.create_task_group() as group:
            for url in (tiny_world.moved_from, tiny_world.archived_only, tiny_world.nxdomain_url,
                        tiny_world.error_capture_url):
                group.start_soon(call, url)
    refused = [r for r in results if r.is_error]
    assert len(results) == 4
    assert len(refused) == 2  # one runs, one waits, two are turned away
    assert all("busy" in r.content[0].text for r in refused)
    assert server_state(server).gate.refused == 2


async def test_a_site_scan_is_enqueued_and_polled(mcp_server, tiny_world) -> None:
    """scan_site answers at once with a job id (the scan runs as a job, in-process here,
    on the workers with a broker); scan_site_result gives the digest when it is done."""
    async with Client(mcp_server) as client:
        job = structured(await client.call_tool("scan_site", {"url": tiny_world.blog_page,
                                                              "depth": 1, "max_pages": 5}))
        assert job["status"] == "queued" and job["target"] == tiny_world.blog_page
        deadline = time.monotonic() + 60
        while True:
            result = structured(await client.call_tool("scan_site_result",
                                                       {"job_id": job["job_id"]}))
            if result["status"] not in ("queued", "running"):
                break
            assert result["target"] == tiny_world.blog_page  # a known job, not unknown
            assert time.monotonic() < deadline
            await anyio.sleep(0.2)
        assert result["status"] == "done", result
        assert result["digest"]["target"] == tiny_world.blog_page
        assert result["digest"]["urls_checked"] >= 2
        unknown = structured(await client.call_tool("scan_site_result", {"job_id": "nope"}))
        assert unknown["status"] == "unknown" and unknown["digest"] is None


async def test_scan_site_result_tells_queued_running_failed_and_unknown(mcp_server,
                                                                        store) -> None:
    """The jobs table's marks, as a worker leaves them: a job still in the broker's queue,
    one a worker has started, one that failed, and an id nobody enqueued are four answers."""
    from pagetrail.store.jobs import JobRecord, mark_job, record_jobs
    from pagetrail.tools.workers.jobs import job_key

    item = {"target": "https://site.example/", "request": "r1", "depth": 1}
    key = job_key("scan", item)
    async with Client(mcp_server) as client:
        async def state(job_id: str) -> dict[str, Any]:
            return structured(await client.call_tool("scan_site_result", {"job_id": job_id}))

        assert (await state("r1"))["status"] == "unknown"
        mark_job(store, "scan", key, item, "queued")
        assert (await state("r1"))["status"] == "queued"
        mark_job(store, "scan", key, item, "running")
        mark_job(store, "scan", key, item, "queued")  # a late queued mark changes nothing
        assert (await state("r1"))["status"] == "running"
        record_jobs(store, [JobRecord("scan", key, item, "failed", {}, "fetch_failed: gone")])
        mark_job(store, "scan", key, item, "running")  # a redelivery cannot reopen it
        failed = await state("r1")
        assert failed["status"] == "failed" and failed["error"] == "fetch_failed: gone"
        assert failed["target"] == "https://site.example/"
