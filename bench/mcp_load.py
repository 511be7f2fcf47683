"""Load test of the MCP server over streamable HTTP, on loopback, against the tiny testbed;
with --slack, of the Slack app under a steady command rate while heavy jobs run.

    /tmp/venv/bin/python bench/mcp_load.py --calls 50 [--max-concurrent 8] [--max-queue 32]
    /tmp/venv/bin/python bench/mcp_load.py --slack [--per-minute 100] [--minutes 2]

Starts the testbed (in a thread) and `pagetrail serve mcp --http --port 0` (a subprocess),
then fires `--calls` concurrent recover_link calls, each from its own MCP session (fresh=true,
so every call does the full work). Every call must either complete or be refused cleanly
(a `busy` tool error); anything else is a failure and the exit status is 1.
Prints throughput and p50/p95 latency. Bounded: loopback only, one burst, a hard timeout.

--slack: `pagetrail serve slack` (a subprocess) with Slack's Web API and response_urls
answered by a loopback recorder (tests/slack_fake.py) and an archive whose captures are a
4.5 MB page of 100,000 links (tests/heavy_archive.py). Signed slash commands arrive at
`--per-minute` for `--minutes`, each from its own user: every tenth a heavy `/fixlink
signature` of the huge page, the rest light (help, `/linkrot list`, a memento of a small
page, a usage error). Every ack must come within 3 s with no 5xx, else exit status 1.
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


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, ten seconds to finish, then SIGKILL."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


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


SLACK_SECRET = "bench-signing-secret"
ACK_LIMIT = 3.0


@dataclass
class Ack:
    kind: str  # "heavy" | "light"
    status: int  # HTTP status, 0 when the request itself failed
    seconds: float
    name: str
    text: str = ""

    @property
    def answers_later(self) -> bool:
        """Posted to the response_url (the others are answered in the ack itself)."""
        return self.kind == "heavy" or self.text.startswith("memento")


def slack_commands(total: int) -> list[tuple[str, str, str]]:
    """(kind, command, text) for each request: a heavy job every tenth, light ones between."""
    light = [("/fixlink", "help"), ("/linkrot", "list"),
             ("/fixlink", "memento https://8.8.8.8/small/{n}"), ("/fixlink", "frobnicate")]
    plan = []
    for n in range(total):
        if n % 10 == 0:
            plan.append(("heavy", "/fixlink", f"signature https://8.8.8.8/big/{n}"))
        else:
            command, text = light[n % len(light)]
            plan.append(("light", command, text.format(n=n)))
    return plan


async def slack_run(url: str, fake: object, per_minute: int, minutes: float) -> list[Ack]:
    import httpx
    from slack_fake import command_body, signed_headers

    total = int(per_minute * minutes)
    interval = 60.0 / per_minute
    acks: list[Ack] = []

    async def send(client: httpx.AsyncClient, n: int, kind: str, command: str,
                   text: str) -> None:
        name = f"c{n}"
        body = command_body(command, text, response_url=fake.response_url(name),  # type: ignore[attr-defined]
                            user=f"U{n}", channel=f"C{n % 7}")
        started = time.monotonic()
        try:
            response = await client.post(url, content=body.encode(),
                                         headers=signed_headers(SLACK_SECRET, body))
            status = response.status_code
        except httpx.HTTPError:
            status = 0
        acks.append(Ack(kind, status, time.monotonic() - started, name, text))

    async with httpx.AsyncClient(timeout=30) as client:
        started = time.monotonic()
        tasks = []
        for n, (kind, command, text) in enumerate(slack_commands(total)):
            await asyncio.sleep(max(0.0, started + n * interval - time.monotonic()))
            tasks.append(asyncio.create_task(send(client, n, kind, command, text)))
        await asyncio.gather(*tasks)
    return acks


def slack_main(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import socket

    from heavy_archive import HeavyArchive
    from slack_fake import FakeSlack

    work = Path(tempfile.mkdtemp(prefix="pagetrail-slack-load-"))
    archive = HeavyArchive().start()
    fake = FakeSlack().start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": SLACK_SECRET,
           "PAGETRAIL_SLACK_API_URL": fake.api_url, "PAGETRAIL_ARCHIVES": archive.prefix,
           "PAGETRAIL_SEARCH_ENGINES": "site", "PAGETRAIL_RETRIES": "0",
           "PAGETRAIL_DATABASE_URL": f"sqlite:///{work / 'slack.db'}",
           "PAGETRAIL_DATA_DIR": str(work / "data"), "PAGETRAIL_CONFIG": str(work / "none.toml")}
    log = work / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([sys.executable, "-m", "pagetrail.cli", "serve", "slack",
                                   "--port", str(port), "--no-digests"], env=env,
                                  stderr=sink, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/slack/events"
    try:
        deadline = time.monotonic() + 60
        while "Uvicorn running" not in log.read_text(errors="replace"):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"the Slack app did not start; see {log}")
            time.sleep(0.1)
        wall = time.monotonic()
        acks = asyncio.run(slack_run(url, fake, args.per_minute, args.minutes))
        wall = time.monotonic() - wall
        answered_by = time.monotonic() + 300
        later = [a for a in acks if a.answers_later]
        while time.monotonic() < answered_by and \
                any(not fake.posts(f"/response/{a.name}") for a in later):
            time.sleep(0.5)
        return slack_report(acks, fake, archive.captures, wall, args)
    finally:
        stop_process(server)
        fake.stop()
        archive.stop()


def slack_report(acks: list[Ack], fake: object, heavy_served: int, wall: float,
                 args: argparse.Namespace) -> int:
    seconds = [a.seconds for a in acks]
    statuses: dict[int, int] = {}
    for ack in acks:
        statuses[ack.status] = statuses.get(ack.status, 0) + 1
    later = [a for a in acks if a.answers_later]
    answered = sum(1 for a in later if fake.posts(f"/response/{a.name}"))  # type: ignore[attr-defined]
    heavy = [a for a in acks if a.kind == "heavy"]
    heavy_answered = sum(1 for a in heavy if fake.posts(f"/response/{a.name}"))  # type: ignore[attr-defined]
    print(f"slack commands {len(acks)} at {args.per_minute}/min over {wall:.1f} s "
          f"({len(heavy)} heavy: a 4.5 MB, 100k-link archived page each; "
          f"{heavy_served} huge captures served)")
    print(f"HTTP statuses {dict(sorted(statuses.items()))}")
    print(f"ack latency: p50 {percentile(seconds, 0.5) * 1000:.0f} ms  "
          f"p95 {percentile(seconds, 0.95) * 1000:.0f} ms  "
          f"p99 {percentile(seconds, 0.99) * 1000:.0f} ms  max {max(seconds) * 1000:.0f} ms")
    light = [a.seconds for a in acks if a.kind == "light"]
    print(f"  light commands: p95 {percentile(light, 0.95) * 1000:.0f} ms  "
          f"max {max(light) * 1000:.0f} ms; heavy: max "
          f"{max(a.seconds for a in heavy) * 1000:.0f} ms")
    print(f"answers posted to response_urls {answered}/{len(later)} (heavy "
          f"{heavy_answered}/{len(heavy)}; the rest answered in the ack)")
    slow = [a for a in acks if a.seconds >= ACK_LIMIT]
    errors = [a for a in acks if a.status >= 500 or a.status == 0]
    print(f"acks >= {ACK_LIMIT:.0f} s: {len(slow)}; 5xx or failed requests: {len(errors)}")
    return 0 if not slow and not errors and answered == len(later) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slack", action="store_true",
                        help="load the Slack app instead of the MCP server")
    parser.add_argument("--per-minute", type=int, default=100, help="--slack: commands/min")
    parser.add_argument("--minutes", type=float, default=2.0, help="--slack: duration")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--max-concurrent", type=int, default=None)
    parser.add_argument("--max-queue", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=120.0, help="per call, seconds")
    args = parser.parse_args()
    if args.slack:
        if not (1 <= args.per_minute <= 600 and 0 < args.minutes <= 10):
            parser.error("--per-minute 1..600 and --minutes up to 10 (a bounded test)")
        return slack_main(args)
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
        stop_process(server)
        testbed.stop()


if __name__ == "__main__":
    sys.exit(main())
