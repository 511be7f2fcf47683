"""The archive: the world's WARCs replayed by pywb, a real Memento/CDX server.

pywb's dependency pins clash with pagetrail's, so it lives in its own virtualenv
(`$PAGETRAIL_PYWB_VENV`, default `<user cache>/pagetrail/pywb-venv`), built on first use
under a file lock. Each run gets a fresh working directory: the collection's archive/ holds
symlinks to the world's WARCs, `wb-manager reindex` writes the CDXJ index, and `wayback`
serves it on 127.0.0.1 in its own process group (so stopping it leaves nothing behind).

config.yaml turns on Memento and turns off framing, and `redirect_to_exact` makes the
TimeGate answer with a redirect to the chosen memento (RFC 7089 pattern 2.1), as the
Internet Archive does.

Recording (the testbed's Save Page Now, tools/testbed/spn.py): pywb's own recorder is on —
`GET {collection}/record/id_/{url}` fetches the URL from the `live` collection and writes the
exchange as a WARC into the world's collection (`rollover_size: 1` closes the file after each
capture, so every capture is a file of its own), and `autoindex` adds new WARCs to
`autoindex.cdxj` within a second, so a later Memento look-up finds the capture. pywb reaches
upstream only through a SOCKS proxy (`SOCKS_HOST`/`SOCKS_PORT`; PySocks is installed in its
venv): the testbed's live web answers there too (proxy.LiveSocks).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import platformdirs

from pagetrail.tools.errors import ArchiveUnavailable
from pagetrail.tools.testbed.world import World

log = logging.getLogger(__name__)

PYWB_REQUIREMENT = "pywb==2.10.0"
# Installed beside pywb (urllib3's SOCKS support, for recording through the testbed's web);
# added to a venv built before it without rebuilding that venv.
PYWB_EXTRAS = ("PySocks==1.7.1",)
READY_MARKER = ".pagetrail-ready"
STARTUP_SECONDS = 60.0
# A port chosen free may be bound by another process before pywb binds it (parallel test
# workers, evaluations): tried again on another port this many times.
PORT_ATTEMPTS = 3
# How long after its first answer pywb must still be running for the answer to be its own.
BIND_GRACE_SECONDS = 0.3
CONFIG_YAML = """\
# written by pagetrail's testbed runner
enable_memento: true
framed_replay: false
redirect_to_exact: true
collections:
  live: $live
recorder:
  source_coll: live
  rollover_size: 1
autoindex: 1
"""
AUTOINDEX = "autoindex.cdxj"


def pywb_venv_path() -> Path:
    """Where the testbed's pywb virtualenv lives."""
    explicit = os.environ.get("PAGETRAIL_PYWB_VENV")
    if explicit:
        return Path(explicit).expanduser()
    return Path(platformdirs.user_cache_dir("pagetrail")) / "pywb-venv"


def _ready(venv: Path) -> bool:
    """Built by us for the current requirement (a changed pin rebuilds a cached venv)."""
    marker = venv / READY_MARKER
    return (marker.is_file() and marker.read_text().strip() == PYWB_REQUIREMENT
            and (venv / "bin" / "wayback").is_file())


def _has_extras(venv: Path) -> bool:
    return any(venv.glob("lib/python*/site-packages/socks.py"))


def _install(venv: Path, requirements: tuple[str, ...], output: int | None) -> None:
    try:
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install",
                        "--disable-pip-version-check", "-q", *requirements],
                       check=True, stdout=output, stderr=output)
    except (subprocess.CalledProcessError, OSError) as exc:
        raise ArchiveUnavailable(f"could not install {' '.join(requirements)} into the pywb "
                                 f"virtualenv at {venv}: {exc}") from exc


def ensure_pywb_venv(venv: Path | None = None, *, quiet: bool = True) -> Path:
    """Build the pywb virtualenv unless it is there; safe to call from concurrent processes."""
    venv = venv or pywb_venv_path()
    if _ready(venv) and _has_extras(venv):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / (venv.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second builder waits here, then finds it ready
        try:
            output = subprocess.DEVNULL if quiet else None
            if _ready(venv):
                if not _has_extras(venv):
                    _install(venv, PYWB_EXTRAS, output)
                return venv
            log.warning("building the pywb virtualenv at %s (first use; takes a minute)", venv)
            if venv.exists():
                shutil.rmtree(venv)  # a half-built one from an interrupted run
            base_python = getattr(sys, "_base_executable", None) or sys.executable
            try:
                subprocess.run([base_python, "-m", "venv", str(venv)], check=True,
                               stdout=output, stderr=output)
            except (subprocess.CalledProcessError, OSError) as exc:
                raise ArchiveUnavailable(f"could not build the pywb virtualenv at {venv}: "
                                         f"{exc}") from exc
            _install(venv, (PYWB_REQUIREMENT, *PYWB_EXTRAS), output)
            (venv / READY_MARKER).write_text(PYWB_REQUIREMENT + "\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return venv


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it if the testbed process dies (Linux), so even a
    killed runner leaves no pywb behind."""
    with contextlib.suppress(OSError, AttributeError):  # no libc.so.6 or no prctl: not Linux
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def prepare_collection(world: World, workdir: Path) -> Path:
    """Lay out a pywb root in `workdir` for the world's collection; return the archive dir."""
    collection = workdir / "collections" / world.archive_collection
    archive_dir = collection / "archive"
    (collection / "indexes").mkdir(parents=True, exist_ok=True)
    archive_dir.mkdir(parents=True, exist_ok=True)
    for warc in world.warcs:
        (archive_dir / warc.name).symlink_to(warc.resolve())
    (workdir / "config.yaml").write_text(CONFIG_YAML)
    return archive_dir


def mark_indexed(world: World, workdir: Path) -> None:
    """An empty autoindex.cdxj newer than the world's WARCs: pywb's auto-indexer then indexes
    only WARCs written later (recordings), not the world's again (duplicate captures)."""
    indexes = workdir / "collections" / world.archive_collection / "indexes"
    (indexes / AUTOINDEX).write_bytes(b"")


class PywbArchive:
    def __init__(self, world: World, workdir: Path, *, host: str = "127.0.0.1",
                 port: int | None = None, venv: Path | None = None,
                 socks_port: int | None = None) -> None:
        self.world = world
        self.socks_port = socks_port  # the live web as SOCKS5, for recording
        self.workdir = Path(workdir)
        self.host = host
        self.port = port or 0
        self.venv = venv
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = self.workdir / "wayback.log"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def collection_url(self) -> str:
        return f"{self.base_url}/{self.world.archive_collection}"

    @property
    def running(self) -> bool:
        """pywb was started and its process has not exited."""
        return self._process is not None and self._process.poll() is None

    def record_url(self, url: str) -> str:
        """pywb's recording route: fetch `url` live, write it into the collection (raw)."""
        return f"{self.collection_url}/record/id_/{url}"

    async def start(self) -> None:
        venv = await asyncio.to_thread(ensure_pywb_venv, self.venv)
        await asyncio.to_thread(prepare_collection, self.world, self.workdir)
        if self.world.warcs:
            await self._run_tool(venv / "bin" / "wb-manager", "reindex",
                                 self.world.archive_collection)
        await asyncio.to_thread(mark_indexed, self.world, self.workdir)
        env = dict(os.environ)
        if self.socks_port:
            env.update(SOCKS_HOST=self.host, SOCKS_PORT=str(self.socks_port))
        chosen = not self.port  # a port of our own choosing may be taken meanwhile: retried
        for attempt in range(PORT_ATTEMPTS if chosen else 1):
            if chosen:
                self.port = free_port(self.host)
            with open(self._log_path, "wb") as log_file:
                self._process = subprocess.Popen(
                    [str(venv / "bin" / "wayback"), "-b", self.host, "-p", str(self.port),
                     "-d", str(self.workdir)],
                    cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=log_file,
                    stderr=subprocess.STDOUT, start_new_session=True, env=env,
                    preexec_fn=_die_with_parent,
                )
            try:
                await self._wait_until_answering()
            except ArchiveUnavailable:
                if attempt + 1 < (PORT_ATTEMPTS if chosen else 1) and self._port_taken():
                    log.warning("pywb: port %s was taken meanwhile; another port", self.port)
                    continue
                raise
            return

    def _port_taken(self) -> bool:
        return "Address already in use" in self._log_tail()

    async def _run_tool(self, *command: str | Path) -> None:
        process = await asyncio.create_subprocess_exec(
            *map(str, command), cwd=self.workdir, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        output, _ = await process.communicate()
        if process.returncode != 0:
            raise ArchiveUnavailable(f"{Path(command[0]).name} failed: "
                                     f"{output.decode(errors='replace')[-500:]}")

    async def _wait_until_answering(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        probe = f"{self.collection_url}/cdx?url=example.invalid/&output=json"
        async with httpx.AsyncClient(trust_env=False, timeout=2) as client:
            while time.monotonic() < deadline:
                if self._process is not None and self._process.poll() is not None:
                    raise ArchiveUnavailable(f"pywb exited: {self._log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    response = await client.get(probe)
                    if response.status_code < 500 and await self._still_ours():
                        return
                await asyncio.sleep(0.1)
        self.stop()
        raise ArchiveUnavailable(f"pywb did not answer within {STARTUP_SECONDS:.0f}s: "
                                 f"{self._log_tail()}")

    async def _still_ours(self) -> bool:
        """The answer came from our pywb, not from another process's on a port taken
        meanwhile: ours has not exited (a failed bind ends it at once) a moment later."""
        await asyncio.sleep(BIND_GRACE_SECONDS)
        if self._process is not None and self._process.poll() is not None:
            raise ArchiveUnavailable(f"pywb exited: {self._log_tail()}")
        return True

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self._log_path.read_text(errors="replace")[-500:].strip()
        return ""

    def stop(self) -> None:
        """Kill pywb's whole process group (gevent workers included) and reap it."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue


def main(argv: list[str] | None = None) -> int:
    """`python -m pagetrail.tools.testbed.archive` builds the pywb venv (for CI caches)."""
    venv = Path(argv[0]) if argv else None
    print(ensure_pywb_venv(venv, quiet=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
