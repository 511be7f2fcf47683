"""Benchmark: checks of many links on 1, 2, 4, 8 Celery workers against in-process.

A generated loopback world: `--hosts` hosts (distinct loopback addresses 127.0.x.y, one
asyncio server listening on all of them) answering every request after 100–300 ms (fixed
per URL), 404 or 200 text/plain (a HEAD settles either: one request per link). `--links`
URLs spread over the hosts, shuffled. Throw-away PostgreSQL and Redis (scripts/postgres.sh,
scripts/redis.sh). Each run checks every link once (a new batch id: no job is skipped),
politely: the per-host limits (Redis) hold across workers.

Reports links/s, speed-up over one worker, CPU per link (user + system from /proc) split by
part: this process (the dispatcher), the world server, the workers' main processes (broker
I/O) and pool processes (the jobs), PostgreSQL (postmaster and backends) and Redis — all of
it is the run's, since both servers are throw-away; Redis commands per link; the highest
per-host request rate observed at the server (most requests of one host within any 1 s)
against the limit; the dispatcher's overhead (in-process running `--in-process-jobs` jobs at
once against as many workers: the same work); and jobs lost (links without a stored answer).
The load average at start and end (the machine may be shared). The last line is one JSON
object.

  python bench/scale_workers.py [--links 20000] [--hosts 300] [--workers 1,2,4,8]
                                [--profile DIR]

`--profile DIR` runs every worker's pool process (PAGETRAIL_PROFILE_DIR, tools.workers.celery_app)
and the in-process leg under cProfile and writes DIR/*.prof.

Latency-bound on purpose: each worker checks `--chunk` links at once (one job), so a worker
waits on the network, not the CPU; on a 2-core machine keep chunk × workers × CPU/link under
the cores.
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
from dataclasses import dataclass
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

@dataclass(frozen=True)
class Meter:
    """Who is measured: sessions (the world server, each worker and its pool: live processes
    in those session ids), process trees (PostgreSQL's postmaster and its backends, Redis),
    and this process."""

    world: int
    workers: frozenset[int]
    trees: dict[str, int]  # name → root pid


def _proc_table() -> dict[int, tuple[int, int, float]]:
    """pid → (parent pid, session id, CPU seconds: user + system, its own and its reaped
    children's), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended while we looked
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # stat fields 4 ppid, 6 session, 14-17 utime stime cutime cstime (1-based)
        cpu = sum(int(v) for v in fields[11:15]) / tick
        table[int(entry.name)] = (int(fields[1]), int(fields[3]), cpu)
    return table


def cpu_seconds(meter: Meter) -> dict[str, float]:
    """CPU seconds so far of each measured part. A live process's reaped children are in its
    own counters (cutime, cstime) and a live child is not yet, so nothing counts twice.
    PostgreSQL's backends and Redis serve only this run (their own throw-away servers)."""
    table = _proc_table()
    me = os.getpid()
    times = os.times()
    parts = {"bench": times.user + times.system + times.children_user
             + times.children_system}
    parts["world"] = sum(c for pid, (_, sid, c) in table.items()
                         if sid == meter.world and pid != me)
    # A worker is its main process (broker I/O, acks) and its pool process (the jobs).
    parts["worker-main"] = sum(c for pid, (_, sid, c) in table.items()
                               if sid in meter.workers and pid == sid)
    parts["worker-pool"] = sum(c for pid, (_, sid, c) in table.items()
                               if sid in meter.workers and pid not in (sid, me))
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    for name, root in meter.trees.items():
        total, stack = 0.0, [root]
        while stack:
            pid = stack.pop()
            if pid in table:
                total += table[pid][2]
                stack.extend(children.get(pid, []))
        parts[name] = total
    return parts


def redis_calls(url: str) -> tuple[int, int]:
    """(commands, script calls) the Redis server has run so far (broker and limiter
    together; a script's own commands count among the commands)."""
    from redis import Redis

    client = Redis.from_url(url)
    try:
        stats = client.info("commandstats")
        scripts = sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
                      for name in ("eval", "evalsha"))
        return int(client.info("stats")["total_commands_processed"]), scripts
    finally:
        client.close()


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
                  else CeleryDispatcher(settings, store))
    started = time.monotonic()
    records = await dispatcher.run("check", items)
    seconds = time.monotonic() - started
    return seconds, sum(1 for r in records if r.status != "done")


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def run_leg(mode: str, n: int, urls: list[str], settings, store,  # type: ignore[no-untyped-def]
            profile: Path | None) -> tuple[float, int]:
    """One leg's batch: (seconds, jobs not done). In-process under cProfile with --profile
    (the workers profile themselves: PAGETRAIL_PROFILE_DIR)."""
    batch = f"{mode}-{n}-{time.time()}"
    if profile is None or mode != "in-process":
        return asyncio.run(run_batch(mode, urls, batch, settings, store, n))
    import cProfile

    profiler = cProfile.Profile()
    try:
        return profiler.runcall(asyncio.run, run_batch(mode, urls, batch, settings, store, n))
    finally:
        profiler.dump_stats(profile / "in-process.prof")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--in-process-jobs", type=int, default=2,
                        help="jobs the in-process leg runs at once; its links/s is compared "
                             "with the leg of as many workers (the same work); 0: no "
                             "in-process leg")
    parser.add_argument("--chunk", type=int, default=8, help="links per job (checked at once)")
    parser.add_argument("--rps", type=float, default=2.0, help="per-host limit")
    parser.add_argument("--latency", default="0.1,0.3")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", type=Path, default=None,
                        help="write cProfile stats of every worker process and of the "
                             "in-process leg into this directory")
    args = parser.parse_args()
    low, high = (float(v) for v in args.latency.split(","))
    counts = [int(v) for v in args.workers.split(",")] if args.workers else []
    print(f"start {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load average "
          f"{load_average()} on {os.cpu_count()} CPUs (shared with other work)", flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="pagetrail-scale-"))
    tmp.chmod(0o755)  # PostgreSQL runs as its own user when we are root
    pg_dir, redis_dir = tmp / "pg", tmp / "redis"
    pg_url = subprocess.run(["bash", str(REPO / "scripts/postgres.sh"), "start", str(pg_dir),
                             str(free_port())], check=True, capture_output=True,
                            text=True).stdout.strip()
    redis_url = subprocess.run(["bash", str(REPO / "scripts/redis.sh"), "start",
                                str(redis_dir), str(free_port())], check=True,
                               capture_output=True, text=True).stdout.strip()
    trees = {"postgres": int((pg_dir / "data/postmaster.pid").read_text().split()[0]),
             "redis": int((redis_dir / "pid").read_text().strip())}
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
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        env["PAGETRAIL_PROFILE_DIR"] = str(args.profile.resolve())
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
        runs = ([("in-process", args.in_process_jobs)] if args.in_process_jobs else []) + \
            [("celery", n) for n in counts]
        for mode, n in runs:
            procs = []
            if mode == "celery":
                procs = start_workers(n, env, tmp)
                wait_workers(env, n)
            parent.send("reset")
            parent.recv()
            meter = Meter(server.pid, frozenset(p.pid for p in procs), trees)
            cpu_before = cpu_seconds(meter)
            calls_before = redis_calls(redis_url)
            in_process_settings = settings.model_copy(update={"broker_url": None,
                                                              "redis_url": redis_url})
            seconds, failed = run_leg(
                mode, n, urls, in_process_settings if mode == "in-process" else settings,
                store, args.profile)
            cpu_after = cpu_seconds(meter)
            calls = [b - a for a, b in zip(calls_before, redis_calls(redis_url), strict=True)]
            used = {k: cpu_after[k] - cpu_before[k] for k in cpu_after}
            total = sum(used.values())
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
            ms = 1000 * total / args.links
            label = f"in-process {n}" if mode == "in-process" else f"{n} workers"
            parts = " ".join(f"{k} {1000 * v / args.links:.2f}" for k, v in used.items())
            print(f"{label:>12}: {rate:7.1f} links/s  {seconds:7.1f} s  CPU {ms:5.2f} ms/link "
                  f"({parts})  Redis commands/link {calls[0] / args.links:.1f} (scripts "
                  f"{calls[1] / args.links:.1f})  per-host max "
                  f"{per_host}/s  requests {requests}  failed {failed}  load {load_average()}",
                  flush=True)
            if mode == "in-process":
                results["in_process_links_per_s"] = round(rate, 1)
                results["in_process_cpu_ms_per_link"] = round(ms, 2)
            else:
                rates.append(rate)
                cpu.append(round(ms, 2))
    finally:
        stop_workers(procs)
        parent.send("stop")
        server.join(5)
        store.dispose()
        subprocess.run(["bash", str(REPO / "scripts/redis.sh"), "stop", str(redis_dir)])
        subprocess.run(["bash", str(REPO / "scripts/postgres.sh"), "stop", str(pg_dir)])
    print(f"end {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load average "
          f"{load_average()}", flush=True)
    one = rates[0] if rates else 0.0
    in_process = results.get("in_process_links_per_s")
    # The dispatcher's overhead: in-process running k jobs at once against k workers.
    same = (rates[counts.index(args.in_process_jobs)]
            if args.in_process_jobs in counts[:len(rates)] else 0.0)
    print(json.dumps({
        "workers": counts, "links": args.links, "hosts": args.hosts,
        "links_per_s": [round(r, 1) for r in rates],
        "speedup": [round(r / one, 2) for r in rates],
        "cpu_ms_per_link": cpu,
        "in_process_links_per_s": in_process,
        "in_process_cpu_ms_per_link": results.get("in_process_cpu_ms_per_link"),
        "in_process_jobs_at_once": args.in_process_jobs,
        "dispatcher_overhead": (round(float(in_process) / same - 1, 3)  # type: ignore[arg-type]
                                if same and in_process else None),
        "per_host_max_rps": peak_rps, "per_host_limit_rps": args.rps,
        "per_host_min_gap_s": round(min_gap, 3),
        "lost_jobs": lost,
    }))


if __name__ == "__main__":
    main()
