"""The MCP face's small parts: call gate, progress relay, bind rules, bearer check, CLI."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from pagetrail.cli.main import main
from pagetrail.server.gate import Busy, CallGate
from pagetrail.server.http import BearerAuth, check_bind, is_loopback
from pagetrail.server.progress import ProgressRelay, progress_message
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
