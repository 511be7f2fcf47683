"""Benchmark: checks of many links on 1, 2, 4, 8 Celery workers against in-process.

A generated loopback world: `--hosts` hosts (distinct loopback addresses 127.0.x.y, one
asyncio server listening on all of them) answering every request after 100–300 ms (fixed
per URL), 404 or 200 text/plain (a HEAD settles either: one request per link). `--links`
URLs spread over the hosts, shuffled. Throw-away PostgreSQL and Redis (scripts/postgres.sh,
scripts/redis.sh). Each run checks every link once (a new batch id: no job is skipped),
politely: the per-host limits (Redis) hold across workers.

Reports links/s, speed-up over one worker, CPU seconds per link (workers, the world server
and this process; not PostgreSQL or Redis), the highest per-host request
rate observed at the server (most requests of one host within any 1 s) against the limit,
the dispatcher's overhead (in-process links/s over one worker's, same concurrency), and jobs
lost (links without a stored answer). The last line is one JSON object.

  python bench/scale_workers.py [--links 20000] [--hosts 300] [--workers 1,2,4,8]

Latency-bound on purpose: each worker checks `--chunk` links at once (one job), so a worker
waits on the network, not the CPU; on a 2-core machine keep chunk × workers × CPU/link under
the cores (the default 8 × 8 workers is about 320 links/s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


# --- the world ---------------------------------------------------------------------------------

def host_address(i: int) -> str:
    return f"127.0.{1 + i // 250}.{1 + i % 250}"


def latency(path: str, low: float, high: float) -> float:
    return low + (high - low) * (zlib.crc32(path.encode()) % 1000) / 999


def serve(port: int, hosts: int, low: float, high: float, conn) -> None:  # type: ignore[no-untyped-def]
    """The world's server (its own process). Commands on `conn`: "stats" → per-host arrival
    times since the last "reset"."""
    arrivals: dict[str, list[float]] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host = writer.get_extra_info("sockname")[0]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
                arrivals.setdefault(host, []).append(time.monotonic())
                await asyncio.sleep(latency(host + path, low, high))
                status = b"404 Not Found" if zlib.crc32(path.encode()) % 3 else b"200 OK"
                body = b"" if method == "HEAD" else b"hello"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: 5\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, [host_address(i) for i in range(hosts)],
                                            port, backlog=1024)
        loop = asyncio.get_running_loop()
        conn.send("ready")
        while True:
            command = await loop.run_in_executor(None, conn.recv)
            if command == "stats":
                conn.send(arrivals.copy())
            elif command == "reset":
                arrivals.clear()
                conn.send("ok")
            else:
                server.close()
                return

    os.setsid()  # its own session: the CPU meter finds it by session id
    asyncio.run(main())


def max_per_second(times: list[float]) -> int:
    times = sorted(times)
    best, start = 0, 0
    for end, moment in enumerate(times):
        while moment - times[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


# --- measurement -------------------------------------------------------------------------------

def cpu_seconds(sessions: set[int]) -> float:
    """CPU time (user + system) of this process, its children that have ended, and every live
    process in `sessions` (the world server, each worker and its pool), from /proc. Not
    PostgreSQL or Redis: the machine is shared, so whole-machine counters would measure
    other people's work too."""
    times = os.times()
    total = times.user + times.system
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) in sessions:  # field 6 of stat: the session id
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_workers(n: int, env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
    procs = []
    for i in range(n):
        log = open(logs / f"worker{n}-{i}.log", "wb")  # noqa: SIM115 -- lives with the process
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "pagetrail.tools.workers.celery_app", "worker",
             "--pool=prefork", "--concurrency=1", "--queues=checks", "--loglevel=WARNING",
             f"--hostname=bench{i}@%h", "--without-gossip", "--without-mingle",
             "--without-heartbeat"], env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))
    return procs


def wait_workers(env: dict[str, str], n: int) -> None:
    from celery import Celery

    app = Celery(broker=env["PAGETRAIL_BROKER_URL"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        if len(replies) >= n:
            return
    raise SystemExit(f"only {len(replies)} of {n} workers answered")


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


async def run_batch(kind_dispatcher: str, urls: list[str], batch: str, settings, store,
                    chunk_concurrency: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    from pagetrail.tools.workers.dispatch import CeleryDispatcher, InProcessDispatcher

    items = [{"url": u, "batch": batch} for u in urls]
    dispatcher = (InProcessDispatcher(settings, store, concurrency=chunk_concurrency)
                  if kind_dispatcher == "in-process"
                  else CeleryDispatcher(settings, store, poll_seconds=1.0))
    started = time.monotonic()
    records = await dispatcher.run("check", items)
    seconds = time.monotonic() - started
    return seconds, sum(1 for r in records if r.status != "done")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--chunk", type=int, default=8, help="links per job (checked at once)")
    parser.add_argument("--rps", type=float, default=2.0, help="per-host limit")
    parser.add_argument("--latency", default="0.1,0.3")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    low, high = (float(v) for v in args.latency.split(","))
    counts = [int(v) for v in args.workers.split(",")]

    tmp = Path(tempfile.mkdtemp(prefix="pagetrail-scale-"))
    tmp.chmod(0o755)  # PostgreSQL runs as its own user when we are root
    pg_dir, redis_dir = tmp / "pg", tmp / "redis"
    pg_url = subprocess.run(["bash", str(REPO / "scripts/postgres.sh"), "start", str(pg_dir),
                             str(free_port())], check=True, capture_output=True,
                            text=True).stdout.strip()
    redis_url = subprocess.run(["bash", str(REPO / "scripts/redis.sh"), "start",
                                str(redis_dir), str(free_port())], check=True,
                               capture_output=True, text=True).stdout.strip()
    port = free_port()
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(port, args.hosts, low, high, child),
                                     daemon=True)
    server.start()
    assert parent.recv() == "ready"
    rng = random.Random(args.seed)
    urls = [f"http://{host_address(rng.randrange(args.hosts))}:{port}/l/{i}"
            for i in range(args.links)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")}
    env.update({
        "PAGETRAIL_DATA_DIR": str(tmp / "data"), "PAGETRAIL_CONFIG": str(tmp / "none.toml"),
        "PAGETRAIL_DATABASE_URL": pg_url, "PAGETRAIL_BROKER_URL": redis_url,
        "PAGETRAIL_ALLOW_HOSTS": ",".join(f"{host_address(i)}:{port}"
                                          for i in range(args.hosts)),
        "PAGETRAIL_PER_HOST_RPS": str(args.rps), "PAGETRAIL_PER_HOST_CONCURRENCY": "2",
        "PAGETRAIL_CHECK_CHUNK": str(args.chunk), "PAGETRAIL_RETRIES": "0",
        "PAGETRAIL_DB_POOL_SIZE": "2",
    })
    os.environ.update(env)
    from pagetrail.store import Store
    from pagetrail.tools.settings import Settings

    settings = Settings()
    store = Store(pg_url)  # migrated here, before any worker starts
    results: dict[str, object] = {}
    rates: list[float] = []
    cpu: list[float] = []
    peak_rps = 0
    min_gap = float("inf")
    lost = 0
    procs: list[subprocess.Popen[bytes]] = []
    try:
        runs = [("in-process", 0)] + [("celery", n) for n in counts]
        for mode, n in runs:
            procs = []
            if mode == "celery":
                procs = start_workers(n, env, tmp)
                wait_workers(env, n)
            parent.send("reset")
            parent.recv()
            sessions = {server.pid, *(p.pid for p in procs)}
            cpu_before = cpu_seconds(sessions)
            in_process_settings = settings.model_copy(update={"broker_url": None,
                                                              "redis_url": redis_url})
            seconds, failed = asyncio.run(run_batch(
                mode, urls, f"{mode}-{n}-{time.time()}",
                in_process_settings if mode == "in-process" else settings, store, 1))
            used = cpu_seconds(sessions) - cpu_before
            parent.send("stats")
            arrivals = parent.recv()
            stop_workers(procs)
            procs = []
            gaps = [b - a for t in arrivals.values() for a, b in zip(sorted(t), sorted(t)[1:],
                                                                     strict=False)]
            min_gap = min([min_gap, *gaps])
            per_host = max((max_per_second(t) for t in arrivals.values()), default=0)
            requests = sum(len(t) for t in arrivals.values())
            peak_rps = max(peak_rps, per_host)
            lost += failed + max(0, args.links - requests)
            rate = args.links / seconds
            label = mode if mode == "in-process" else f"{n} workers"
            print(f"{label:>12}: {rate:7.1f} links/s  {seconds:7.1f} s  "
                  f"CPU {1000 * used / args.links:5.2f} ms/link  per-host max "
                  f"{per_host}/s  requests {requests}  failed {failed}", flush=True)
            if mode == "in-process":
                results["in_process_links_per_s"] = round(rate, 1)
                results["in_process_cpu_ms_per_link"] = round(1000 * used / args.links, 2)
            else:
                rates.append(rate)
                cpu.append(round(1000 * used / args.links, 2))
    finally:
        stop_workers(procs)
        parent.send("stop")
        server.join(5)
        store.dispose()
        subprocess.run(["bash", str(REPO / "scripts/redis.sh"), "stop", str(redis_dir)])
        subprocess.run(["bash", str(REPO / "scripts/postgres.sh"), "stop", str(pg_dir)])
    one = rates[0] if rates else 0.0
    in_process = float(results["in_process_links_per_s"])  # type: ignore[arg-type]
    print(json.dumps({
        "workers": counts, "links": args.links, "hosts": args.hosts,
        "links_per_s": [round(r, 1) for r in rates],
        "speedup": [round(r / one, 2) for r in rates],
        "cpu_ms_per_link": cpu,
        "in_process_links_per_s": in_process,
        "in_process_cpu_ms_per_link": results["in_process_cpu_ms_per_link"],
        "dispatcher_overhead": round(in_process / one - 1, 3) if one else None,
        "per_host_max_rps": peak_rps, "per_host_limit_rps": args.rps,
        "per_host_min_gap_s": round(min_gap, 3),
        "lost_jobs": lost,
    }))


if __name__ == "__main__":
    main()
