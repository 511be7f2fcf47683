"""The MCP face's small parts: call gate, progress relay, bind rules, bearer check, CLI,
tool selection, error codes."""

from __future__ import annotations

import asyncio
import inspect
import re
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, Field, ValidationError

import pagetrail.store.errors
import pagetrail.tools.errors
from pagetrail.cli.main import main
from pagetrail.server.errors import (
    CODES,
    RENAMED,
    code_of,
    error_result,
    from_exception,
    from_validation,
)
from pagetrail.server.gate import Busy, CallGate
from pagetrail.server.http import BearerAuth, check_bind, is_loopback
from pagetrail.server.progress import ProgressRelay, progress_message
from pagetrail.server.selection import ToolSelection
from pagetrail.tools.errors import ConfigError


async def test_gate_runs_queues_and_refuses() -> None:
    gate = CallGate(max_concurrent=2, max_waiting=1)
    release = asyncio.Event()
    queued_at: list[int] = []
    running = 0
    peak = 0

    async def work() -> str:
        nonlocal running, peak

        async def on_queued(position: int) -> None:
            queued_at.append(position)

        try:
            async with gate.slot(on_queued):
                running += 1
                peak = max(peak, running)
                await release.wait()
                running -= 1
        except Busy:
            return "busy"
        return "done"

    tasks = [asyncio.create_task(work()) for _ in range(5)]
    await asyncio.sleep(0.05)
    assert (gate.active, gate.waiting) == (2, 1)
    release.set()
    outcomes = await asyncio.gather(*tasks)
    assert sorted(outcomes) == ["busy", "busy", "done", "done", "done"]
    assert peak == 2 and queued_at == [1] and gate.refused == 2
    assert (gate.active, gate.waiting) == (0, 0)


async def test_gate_cancelled_waiter_leaves_the_queue() -> None:
    gate = CallGate(max_concurrent=1, max_waiting=1)
    hold = asyncio.Event()

    async def holder() -> None:
        async with gate.slot():
            await hold.wait()

    first = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    assert gate.waiting == 1
    waiter.cancel()
    await asyncio.sleep(0.01)
    assert gate.waiting == 0
    hold.set()
    await first
    async with gate.slot():  # the slot was not leaked
        assert gate.active == 1


def test_gate_rejects_nonsense_limits() -> None:
    with pytest.raises(ValueError):
        CallGate(0, 1)


class _Sink:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[float, float | None, str | None]] = []
        self.fail = fail

    async def report_progress(self, progress: float, total: float | None = None,
                              message: str | None = None) -> None:
        if self.fail:
            raise anyio.ClosedResourceError()  # the client went away
        self.calls.append((progress, total, message))


async def test_progress_relay_numbers_steps_and_names_stages() -> None:
    sink = _Sink()
    relay = ProgressRelay(sink)
    await relay("checking", 0, None, "https://example.org/a")
    await relay("queries", 3, 7, "stage 1")
    await relay("ranking", 2, 2, "")
    assert [c[0] for c in sink.calls] == [1, 2, 3]
    assert [c[2] for c in sink.calls] == ["checking: https://example.org/a",
                                          "queries 3/7: stage 1", "ranking 2/2"]
    await ProgressRelay(_Sink(fail=True))("checking", 0, None, "")  # swallowed, not raised


async def test_progress_relay_raises_what_is_not_a_client_gone() -> None:
    class _Broken(_Sink):
        async def report_progress(self, *args, **kwargs) -> None:
            raise TypeError("a bug, not a closed stream")

    with pytest.raises(TypeError):
        await ProgressRelay(_Broken())("checking", 0, None, "")


def test_progress_message_is_one_clipped_line() -> None:
    text = progress_message("archive", 0, None, "line one\nline two " + "x" * 500)
    assert "\n" not in text and len(text) <= len("archive: ") + 200


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("127.0.0.2", True), ("0.0.0.0", False), ("192.168.1.5", False), ("example.org", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_bind_beyond_loopback_needs_a_token() -> None:
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "secret")
    with pytest.raises(ConfigError, match="PAGETRAIL_MCP_TOKEN"):
        check_bind("0.0.0.0", None)


async def _asgi_call(app: BearerAuth, headers: list[tuple[bytes, bytes]],
                     scope_type: str = "http") -> tuple[int | None, bool]:
    sent: list[dict] = []
    reached = False

    async def inner(scope, receive, send) -> None:
        nonlocal reached
        reached = True

    app.app = inner

    async def send(message: dict) -> None:
        sent.append(message)

    await app({"type": scope_type, "headers": headers}, None, send)
    status = sent[0]["status"] if sent else None
    return status, reached


async def test_bearer_auth_checks_the_header() -> None:
    app = BearerAuth(None, "s3cret")
    assert await _asgi_call(app, []) == (401, False)
    assert await _asgi_call(app, [(b"authorization", b"Bearer wrong")]) == (401, False)
    assert await _asgi_call(app, [(b"authorization", b"Basic s3cret")]) == (401, False)
    assert await _asgi_call(app, [(b"authorization", b"Bearer s3cret")]) == (None, True)
    assert await _asgi_call(app, [], scope_type="lifespan") == (None, True)


def test_cli_refuses_public_bind_without_token(capsys) -> None:
    assert main(["serve", "mcp", "--http", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "PAGETRAIL_MCP_TOKEN" in capsys.readouterr().err


def test_cli_serve_without_face_prints_usage(capsys) -> None:
    assert main(["serve"]) == 2
    assert "mcp" in capsys.readouterr().err


TOOLS = {"check_link": True, "recover_link": False, "record_pick": False, "get_tags": True}


def test_selection_says_why_each_tool_is_left_out() -> None:
    assert ToolSelection().withheld(TOOLS) == {}
    read_only = ToolSelection(read_only=True).withheld(TOOLS)
    assert set(read_only) == {"recover_link", "record_pick"}
    assert "read-only" in read_only["recover_link"]
    picked = ToolSelection(tools=("check_link", "recover_link"), exclude=("recover_link",),
                           read_only=True).withheld(TOOLS)
    assert set(picked) == {"recover_link", "record_pick", "get_tags"}
    assert "--exclude-tools" in picked["recover_link"] and "--tools" in picked["get_tags"]


def test_selection_refuses_unknown_names_and_an_empty_server() -> None:
    with pytest.raises(ConfigError, match="--tools: no tool named chek_link"):
        ToolSelection(tools=("chek_link",)).withheld(TOOLS)
    with pytest.raises(ConfigError, match="--exclude-tools: no tool named nope"):
        ToolSelection(exclude=("nope",)).withheld(TOOLS)
    with pytest.raises(ConfigError, match="no tool left"):
        ToolSelection(tools=("recover_link",), read_only=True).withheld(TOOLS)


def test_selection_flags_replace_the_settings() -> None:
    from pagetrail.tools.settings import Settings

    settings = Settings(mcp_read_only=True, mcp_tools="check_link, get_tags",
                        mcp_exclude_tools=["get_tags"])
    assert ToolSelection.from_settings(settings) == ToolSelection(
        read_only=True, tools=("check_link", "get_tags"), exclude=("get_tags",))
    assert ToolSelection.from_settings(settings, read_only=False, exclude=[]) == ToolSelection(
        read_only=False, tools=("check_link", "get_tags"), exclude=())


@pytest.mark.parametrize("argv", [["--tools", "check_link,chek_link"],
                                  ["--exclude-tools", "nope", "--http", "--port", "0"]])
def test_cli_unknown_tool_names_are_one_line_config_errors(argv, capsys, tmp_path,
                                                           monkeypatch) -> None:
    from pagetrail.tools.settings import get_settings

    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'never.db'}")
    get_settings.cache_clear()
    assert main(["serve", "mcp", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "config_error" in err and "no tool named" in err
    assert not (tmp_path / "never.db").exists()  # refused before the store was opened
    get_settings.cache_clear()


def test_cli_tool_names_from_the_environment_are_checked(capsys, monkeypatch,
                                                         tmp_path) -> None:
    from pagetrail.tools.settings import get_settings

    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'never.db'}")
    monkeypatch.setenv("PAGETRAIL_MCP_EXCLUDE_TOOLS", "check_link,bogus")
    get_settings.cache_clear()
    assert main(["serve", "mcp"]) == 2
    assert "--exclude-tools: no tool named bogus" in capsys.readouterr().err
    get_settings.cache_clear()


def _named_errors() -> list[type]:
    return [cls for module in (pagetrail.tools.errors, pagetrail.store.errors)
            for cls in vars(module).values()
            if inspect.isclass(cls) and issubclass(cls, pagetrail.store.errors.PagetrailError)]


def test_every_named_error_has_its_code_in_the_table() -> None:
    named = _named_errors()
    assert len(named) > 20
    for cls in named:
        exc = cls("x") if cls.__init__ is not pagetrail.tools.errors.FetchFailed.__init__ \
            else cls("x", kind="dns")
        assert code_of(exc) == RENAMED.get(cls.code, cls.code), cls


def test_an_unnamed_subclass_takes_its_parents_code() -> None:
    class Odd(pagetrail.tools.errors.NoMemento):
        code = "odd_new_code"

    assert code_of(Odd("x")) == "no_memento"


def test_the_docs_list_exactly_the_codes() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "mcp.md").read_text()
    table = docs.split("## Errors", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", table, flags=re.MULTILINE)
    assert dict(listed) == CODES


def test_error_results_carry_code_message_and_details() -> None:
    from pagetrail.tools.errors import FetchFailed, InvalidArgument, RateLimited

    fetch = from_exception(FetchFailed("timed out\nafter 3 tries", url="https://a.example/",
                                       kind="timeout"))
    assert fetch.is_error and fetch.structured_content == {"error": {
        "code": "fetch_failed", "message": "timed out after 3 tries",
        "url": "https://a.example/", "kind": "timeout"}}
    assert fetch.content[0].text == "fetch_failed: timed out after 3 tries"
    limited = from_exception(RateLimited("slow down", retry_after=30.0))
    assert limited.structured_content["error"]["retry_after"] == 30.0
    assert from_exception(InvalidArgument("empty query")).structured_content["error"][
        "code"] == "invalid_arguments"
    with pytest.raises(ValueError, match="undocumented"):
        error_result("made_up", "x")


def test_validation_errors_are_one_clean_line() -> None:
    class Arguments(BaseModel):
        url: str
        limit: int = Field(default=1, le=5)
        tags: list[int] = []

    try:
        Arguments.model_validate({"limit": 77, "tags": [1, "secret-value"]})
    except ValidationError as exc:
        result = from_validation("a_tool", exc)
    error = result.structured_content["error"]
    assert error["code"] == "invalid_arguments"
    assert error["fields"] == ["limit", "tags.1", "url"]
    assert error["message"].startswith("a_tool: url: required; limit: input should be less")
    text = result.content[0].text
    assert "pydantic" not in text and "http" not in text and "\n" not in text
    assert "secret-value" not in text and "77" not in text  # the caller's values stay out


async def test_a_crash_is_internal_error_with_its_text_only_in_the_log(tmp_path, caplog) -> None:
    from mcp import Client

    from pagetrail.server.app import build_server
    from pagetrail.tools.settings import Settings

    server = build_server(Settings(database_url=f"sqlite:///{tmp_path / 'm.db'}"))

    async def broken_tool() -> dict:
        raise RuntimeError("secret internals /etc/passwd")

    server.add_tool(broken_tool)
    server.served = server.served | {"broken_tool"}
    async with Client(server) as client:
        result = await client.call_tool("broken_tool", {})
    error = result.structured_content["error"]
    assert result.is_error and error["code"] == "internal_error"
    assert "secret" not in result.content[0].text
    assert "secret internals" in caplog.text  # surfaced where the operator looks
