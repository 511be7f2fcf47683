"""The MCP server through the SDK's real client (mcp.Client), in-process, against the testbed.

The helpers here (`exercise_every_tool`, `recover_with_progress`, `cancel_one_recovery`,
`assert_clean_errors`, `assert_served_capabilities`, `read_resources`, `get_prompts`,
`check_text_with_progress`, `assert_read_only`) are shared with the stdio and HTTP tests:
the same checks, three transports.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from pagetrail.server.app import build_server, server_state
from pagetrail.server.selection import ToolSelection

pytestmark = pytest.mark.testbed

TOOLS = {"recover_link", "check_link", "fetch_memento", "extract_signature", "get_tags",
         "search_web", "rank_candidates", "record_pick", "scan_page", "recommend_archived",
         "scan_site", "scan_site_result", "archive_link", "check_links_in_text"}


READ_ONLY_TOOLS = {"check_link", "fetch_memento", "extract_signature", "get_tags",
                   "search_web", "rank_candidates", "scan_site_result", "recommend_archived"}


def error_of(result: Any) -> dict[str, Any]:
    """A tool error's structured `error` (code, message, …), its text agreeing with it."""
    assert result.is_error
    error = result.structured_content["error"]
    assert result.content[0].text == f"{error['code']}: {error['message']}"
    assert "\n" not in result.content[0].text
    return error  # type: ignore[no-any-return]


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
        error = error_of(await client.call_tool("recover_link", arguments))
        assert error["code"] == code, (arguments, error)
    assert error["url"] == "http://169.254.169.254/latest/meta-data/"
    # A missing argument and a wrong one: the code, the fields, one clean line.
    missing = error_of(await client.call_tool("recover_link", {"max_candidates": 3}))
    assert missing["code"] == "invalid_arguments" and missing["fields"] == ["url"]
    assert missing["message"] == "recover_link: url: required"
    wrong = error_of(await client.call_tool("recover_link", {"url": "https://example.org/",
                                                             "max_candidates": 99}))
    assert wrong["code"] == "invalid_arguments" and wrong["fields"] == ["max_candidates"]
    assert "pydantic" not in wrong["message"].lower() and "99" not in wrong["message"]
    unknown = error_of(await client.call_tool("recover_links", {"url": "https://x.org/"}))
    assert unknown["code"] == "unknown_tool"
    # The session survives all of that.
    assert structured(await client.call_tool("search_web", {"query": "wind turbines"}))["hits"]


async def assert_served_capabilities(client: Client) -> None:
    """Every capability advertised has something behind it, and no change notification
    (listChanged, subscribe) is promised: the server publishes none."""
    capabilities = client.server_capabilities
    assert capabilities is not None
    if capabilities.tools is not None:
        assert (await client.list_tools()).tools
        assert not capabilities.tools.list_changed
    if capabilities.prompts is not None:
        assert (await client.list_prompts()).prompts
        assert not capabilities.prompts.list_changed
    if capabilities.resources is not None:
        served = ((await client.list_resources()).resources
                  + (await client.list_resource_templates()).resource_templates)
        assert served
        assert not capabilities.resources.list_changed
        assert not capabilities.resources.subscribe
    assert capabilities.tools and capabilities.prompts and capabilities.resources


async def read_resources(client: Client, world: Any) -> None:
    """After a recovery of world.moved_from: the recent list and that URL's answer."""
    listed = {str(r.uri) for r in (await client.list_resources()).resources}
    recent_uri = "pagetrail://recoveries/recent"
    assert listed == {recent_uri, "pagetrail://channels"}
    recent = json.loads((await client.read_resource(recent_uri)).contents[0].text)
    urls = [item["recovery"]["url"] for item in recent["recoveries"]]
    assert world.moved_from in urls
    newest = recent["recoveries"][0]
    assert newest["recovered_at"] and newest["recovery"]["answer"]

    templates = {t.name: t.uri_template
                 for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {"recovery": "pagetrail://recovery/{url}",
                         "channel": "pagetrail://channel/{channel}"}
    template = templates["recovery"]
    uri = template.replace("{url}", quote(world.moved_from, safe=""))
    one = await client.read_resource(uri)
    assert one.contents[0].mime_type == "application/json"
    answer = json.loads(one.contents[0].text)
    assert answer["recovery"]["url"] == world.moved_from
    assert answer["recovery"]["answer"] == "moved"
    assert answer["recovery"]["candidates"][0]["url"] == world.moved_to

    never = template.replace("{url}", quote("https://never.example/recovered", safe=""))
    with pytest.raises(MCPError) as refused:
        await client.read_resource(never)
    assert refused.value.error.data["code"] == "not_found"


async def get_prompts(client: Client, world: Any, *, writes: bool = True) -> None:
    names = {p.name for p in (await client.list_prompts()).prompts}
    assert names == ({"repair_links", "why_link_dead"} if writes else {"why_link_dead"})
    why = await client.get_prompt("why_link_dead", {"url": world.moved_from})
    text = why.messages[0].content.text
    assert world.moved_from in text and quote(world.moved_from, safe="") in text
    assert "check_link" in text and ("recover_link" in text) is writes
    if writes:
        draft = f"Solar farms doubled ([source]({world.moved_from}))."
        repair = await client.get_prompt("repair_links", {"text": draft})
        assert draft in repair.messages[0].content.text
        assert "check_links_in_text" in repair.messages[0].content.text


async def check_text_with_progress(client: Client, world: Any) -> None:
    """check_links_in_text sends one progress notification per link recovered."""
    seen: list[tuple[float, str]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message or ""))

    links = [world.moved_from, world.moved_to, world.nxdomain_url]
    text = " ".join(f"See [{n}]({url})." for n, url in enumerate(links))
    result = structured(await client.call_tool("check_links_in_text", {"text": text},
                                               progress_callback=on_progress))
    assert [link["url"] for link in result["links"]] == links
    recovering = [message for _p, message in seen if message.startswith("recovering")]
    assert len(recovering) == len(links)
    assert {message.split(" ")[1].rstrip(":") for message in recovering} == {
        f"{n}/{len(links)}" for n in range(1, len(links) + 1)}
    assert {message.split(": ", 1)[1] for message in recovering} == set(links)
    values = [p for p, _m in seen]
    assert values == sorted(values) and len(set(values)) == len(values)


async def assert_read_only(client: Client, world: Any, *,
                           excluded: frozenset[str] = frozenset()) -> None:
    """Only the read-only tools (less `excluded`) are listed and callable; a write tool is
    refused by name."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == READ_ONLY_TOOLS - excluded
    assert all(tool.annotations.read_only_hint for tool in listed.values())
    check = structured(await client.call_tool("check_link", {"url": world.moved_from}))
    assert check["verdict"] == "dead"
    for name, arguments in [("recover_link", {"url": world.moved_from}),
                            ("record_pick", {"dead_url": world.moved_from,
                                             "chosen_url": world.moved_to})]:
        refused = error_of(await client.call_tool(name, arguments))
        assert refused["code"] == "tool_disabled" and "read-only" in refused["message"]


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
    assert all(error_of(r)["code"] == "busy" for r in refused)
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


async def test_capabilities_resources_and_prompts(mcp_server, tiny_world) -> None:
    async with Client(mcp_server) as client:
        await assert_served_capabilities(client)
        await recover_with_progress(client, tiny_world)
        await read_resources(client, tiny_world)
        await get_prompts(client, tiny_world)
    async with Client(mcp_server, mode="legacy") as client:  # the initialize handshake
        await assert_served_capabilities(client)


async def test_check_links_in_text_reports_progress(mcp_server, tiny_world) -> None:
    async with Client(mcp_server) as client:
        await check_text_with_progress(client, tiny_world)


async def test_read_only_mode(testbed_settings, store, tiny_world) -> None:
    server = build_server(testbed_settings, store, selection=ToolSelection(read_only=True))
    async with Client(server) as client:
        await assert_read_only(client, tiny_world)
        await assert_served_capabilities(client)
        await get_prompts(client, tiny_world, writes=False)


async def test_tool_selection(testbed_settings, store, tiny_world) -> None:
    selection = ToolSelection(tools=("check_link", "recover_link", "check_links_in_text"),
                              exclude=("recover_link",))
    async with Client(build_server(testbed_settings, store, selection=selection)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {
            "check_link", "check_links_in_text"}
        excluded = error_of(await client.call_tool("recover_link", {"url": tiny_world.moved_from}))
        assert excluded["code"] == "tool_disabled" and "--exclude-tools" in excluded["message"]
        unselected = error_of(await client.call_tool("search_web", {"query": "solar"}))
        assert unselected["code"] == "tool_disabled" and "--tools" in unselected["message"]
        assert structured(await client.call_tool("check_link", {"url": tiny_world.news_root}))
        why = await client.get_prompt("why_link_dead", {"url": tiny_world.moved_from})
        assert "recover_link" not in why.messages[0].content.text  # not served here


async def test_selection_from_the_settings(testbed_settings, store, tiny_world) -> None:
    settings = testbed_settings.model_copy(update={"mcp_read_only": True,
                                                   "mcp_exclude_tools": ["get_tags"]})
    async with Client(build_server(settings, store)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == READ_ONLY_TOOLS - {"get_tags"}
        assert error_of(await client.call_tool("get_tags", {"url": tiny_world.moved_from})
                        )["code"] == "tool_disabled"


async def test_channel_resources(mcp_server, store) -> None:
    """A channel's watches and its digests' weekly counts, as the Slack digest left them."""
    from pagetrail.store.digests import add_run
    from pagetrail.tools.recovery.memory import add_watch
    from pagetrail.tools.scan.digest import ChannelDigest, ScanDigest

    target = "https://www.news.example/"
    add_watch(store, "C42", target)
    for period, ok, confirmed in (("2030-W10", 5, 1), ("2030-W11", 4, 2)):
        scan = ScanDigest(target=target, scan_id=period, started_at="2030-03-10T00:00:00Z",
                          seconds=1.0, pages_crawled=1, links_found=ok + confirmed,
                          urls_checked=ok + confirmed, requests=ok + confirmed,
                          states={"ok": ok, "confirmed": confirmed})
        digest = ChannelDigest(channel="C42", period=period, scans=[scan])
        add_run(store, "C42", period, at=datetime(2030, 3, 10, tzinfo=UTC), status="posted",
                summary=digest.model_dump(mode="json"))
    async with Client(mcp_server) as client:
        listed = json.loads((await client.read_resource("pagetrail://channels")).contents[0].text)
        assert listed == {"channels": [{"channel": "C42", "targets": [target]}]}
        one = json.loads((await client.read_resource("pagetrail://channel/C42")).contents[0].text)
        assert one["targets"] == [target] and one["weeks"] == ["2030-W10", "2030-W11"]
        assert one["series"]["confirmed"] == [1, 2]
        assert one["latest"]["period"] == "2030-W11" and one["latest"]["alive"] == 4
        with pytest.raises(MCPError) as refused:
            await client.read_resource("pagetrail://channel/C0NOBODY")
        assert refused.value.error.data["code"] == "not_found"
