"""Load test of the MCP server over streamable HTTP, on loopback, against the tiny testbed.

    /tmp/venv/bin/python bench/mcp_load.py --calls 50 [--max-concurrent 8] [--max-queue 32]

Starts the testbed (in a thread) and `pagetrail serve mcp --http --port 0` (a subprocess),
then fires `--calls` concurrent recover_link calls, each from its own MCP session (fresh=true,
so every call does the full work). Every call must either complete or be refused cleanly
(a `busy` tool error); anything else is a failure and the exit status is 1.
Prints throughput and p50/p95 latency. Bounded: loopback only, one burst, a hard timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mcp import Client

from pagetrail.tools.testbed.runner import start_in_thread
from pagetrail.tools.testbed.worldgen import TinyWorld, build_tiny_world


@dataclass
class Outcome:
    kind: str  # "ok" | "busy" | "tool_error" | "exception"
    seconds: float
    detail: str = ""


def dead_urls(world: TinyWorld) -> list[str]:
    return [world.moved_from, world.archived_only, world.nxdomain_url, world.error_capture_url]


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def start_server(env: dict[str, str], max_concurrent: int | None, max_queue: int | None,
                 log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The server as a subprocess; its stderr goes to `log` (a pipe nobody drains would
    block it), where the first line names the URL it listens on."""
    command = [sys.executable, "-m", "pagetrail.cli", "serve", "mcp", "--http", "--port", "0"]
    if max_concurrent:
        command += ["--max-concurrent", str(max_concurrent)]
    if max_queue is not None:
        command += ["--max-queue", str(max_queue)]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stderr=sink, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        for line in log.read_text(errors="replace").splitlines():
            if "pagetrail MCP on " in line:
                return process, line.split("pagetrail MCP on ", 1)[1].split()[0]
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the MCP server did not start; see {log}")


async def one_call(url: str, dead_url: str, timeout: float) -> Outcome:
    started = time.monotonic()
    try:
        async with Client(url, read_timeout_seconds=timeout) as client:
            result = await client.call_tool("recover_link", {"url": dead_url, "fresh": True})
    except Exception as exc:
        return Outcome("exception", time.monotonic() - started, repr(exc)[:200])
    seconds = time.monotonic() - started
    if not result.is_error:
        return Outcome("ok", seconds, str((result.structured_content or {}).get("answer")))
    text = result.content[0].text if result.content else ""
    return Outcome("busy" if "busy:" in text else "tool_error", seconds, text[:200])


async def burst(url: str, urls: list[str], calls: int, timeout: float) -> tuple[list[Outcome],
                                                                               float]:
    started = time.monotonic()
    async with asyncio.timeout(timeout * 2):
        outcomes = await asyncio.gather(*(one_call(url, urls[i % len(urls)], timeout)
                                          for i in range(calls)))
    return list(outcomes), time.monotonic() - started


def report(outcomes: list[Outcome], wall: float, args: argparse.Namespace) -> int:
    by_kind: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_kind.setdefault(outcome.kind, []).append(outcome)
    done = [o.seconds for o in by_kind.get("ok", [])]
    refused = [o.seconds for o in by_kind.get("busy", [])]
    print(f"calls {len(outcomes)}  server max_concurrent={args.max_concurrent or 'default'} "
          f"max_queue={args.max_queue if args.max_queue is not None else 'default'}")
    print(f"completed {len(done)}  refused(busy) {len(refused)}  "
          f"tool errors {len(by_kind.get('tool_error', []))}  "
          f"exceptions {len(by_kind.get('exception', []))}")
    print(f"wall {wall:.2f} s  throughput {len(done) / wall:.2f} completed calls/s")
    if done:
        print(f"latency of completed calls: p50 {percentile(done, 0.5):.2f} s  "
              f"p95 {percentile(done, 0.95):.2f} s  max {max(done):.2f} s  "
              f"mean {statistics.mean(done):.2f} s")
    if refused:
        print(f"latency of refusals: p50 {percentile(refused, 0.5):.3f} s  "
              f"p95 {percentile(refused, 0.95):.3f} s")
    answers: dict[str, int] = {}
    for outcome in by_kind.get("ok", []):
        answers[outcome.detail] = answers.get(outcome.detail, 0) + 1
    print(f"answers {answers}")
    for outcome in by_kind.get("tool_error", []) + by_kind.get("exception", []):
        print(f"!! {outcome.kind}: {outcome.detail}")
    return 0 if len(done) + len(refused) == len(outcomes) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--max-concurrent", type=int, default=None)
    parser.add_argument("--max-queue", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=120.0, help="per call, seconds")
    args = parser.parse_args()
    if not 1 <= args.calls <= 500:
        parser.error("--calls must be between 1 and 500 (this is a bounded test)")
    work = Path(tempfile.mkdtemp(prefix="pagetrail-load-"))
    world = build_tiny_world(work / "tiny")
    testbed = start_in_thread(world.path)
    env = {**os.environ, **testbed.env, "PAGETRAIL_DATABASE_URL": f"sqlite:///{work / 'mcp.db'}",
           "PAGETRAIL_DATA_DIR": str(work / "data"), "PAGETRAIL_CONFIG": str(work / "none.toml")}
    server, url = start_server(env, args.max_concurrent, args.max_queue,
                               work / "server.log")
    try:
        outcomes, wall = asyncio.run(burst(url, dead_urls(world), args.calls, args.timeout))
        return report(outcomes, wall, args)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        testbed.stop()


if __name__ == "__main__":
    sys.exit(main())
