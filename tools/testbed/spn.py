"""The testbed's Save Page Now: SPN2's API shape, captures made by pywb's own recorder.

`POST /save` (form `url=…`, header `Authorization: LOW <access>:<secret>`) starts a job and
answers `{"url", "job_id"}`; `GET /save/status/<job_id>` answers `pending`, then `success`
(with `timestamp`, `original_url`) once the capture is in the collection's index, or `error`
(with `status_ext`). The capture itself is `GET {collection}/record/id_/{url}` on pywb: pywb
fetches the page from the live web (through the testbed's SOCKS proxy) and writes the WARC
into the world's collection, and its auto-indexer makes it visible to Memento look-ups.

IA's limits are played too, so that clients can be tested against them: wrong or missing
keys get 401; more than `max_active` jobs at once get `error:user-session-limit`;
`throttle(n, retry_after)` answers the next n requests 429 with Retry-After. `received`
keeps every request (method, path, form, whether the keys were right) for tests to read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import parse_qs, quote

import httpx

from pagetrail.tools.testbed.archive import PywbArchive
from pagetrail.tools.testbed.httpio import Reply, Request, json_response

log = logging.getLogger(__name__)

TESTBED_KEYS = ("testbed-access", "testbed-secret")
INDEX_SECONDS = 20.0  # how long a job waits for pywb's auto-indexer before giving up


@dataclass
class Job:
    job_id: str
    url: str
    started: str  # 14-digit timestamp: the capture must be at least this new
    status: str = "pending"
    timestamp: str = ""
    status_ext: str = ""
    message: str = ""


@dataclass
class Received:
    method: str
    path: str
    form: dict[str, str]
    authorized: bool


@dataclass
class SpnService:
    archive: PywbArchive
    keys: tuple[str, str] = TESTBED_KEYS
    max_active: int = 4
    jobs: dict[str, Job] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    active: int = 0
    peak_active: int = 0
    _throttled: int = 0
    _retry_after: str = "1"
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def throttle(self, count: int, retry_after: float | str = 1) -> None:
        """Answer the next `count` requests with 429 and this Retry-After."""
        self._throttled = count
        self._retry_after = str(retry_after)

    async def answer(self, request: Request) -> Reply:
        path = request.target.split("?", 1)[0]
        form = {k: v[-1] for k, v in parse_qs(request.body.decode("utf-8", "replace")).items()}
        authorized = request.header("authorization") == f"LOW {self.keys[0]}:{self.keys[1]}"
        self.received.append(Received(request.method, path, form, authorized))
        if self._throttled > 0:
            self._throttled -= 1
            return Reply(429, [("Retry-After", self._retry_after),
                                  ("Content-Type", "text/html")], b"Too Many Requests")
        if not authorized:
            return _json({"status": "error", "status_ext": "error:unauthorized",
                          "message": "You need to be logged in to use Save Page Now."}, 401)
        if request.method == "POST" and path.rstrip("/") == "/save":
            return self._start(form)
        if request.method == "GET" and path.startswith("/save/status/"):
            job = self.jobs.get(path[len("/save/status/"):])
            if job is None:
                return _json({"status": "error", "status_ext": "error:not-found",
                              "message": "no such job"}, 404)
            return _json(self._status(job))
        return _json({"status": "error", "message": f"no route {request.method} {path}"}, 404)

    def _start(self, form: dict[str, str]) -> Reply:
        url = form.get("url", "")
        if not url.startswith(("http://", "https://")):
            return _json({"status": "error", "status_ext": "error:invalid-url-syntax",
                          "message": "url is missing or not http(s)"}, 400)
        if self.active >= self.max_active:
            return _json({"status": "error", "status_ext": "error:user-session-limit",
                          "message": f"You have already reached the limit of active "
                                     f"sessions ({self.max_active})."})
        job = Job(job_id="spn2-" + uuid.uuid4().hex, url=url,
                  started=datetime.now(UTC).strftime("%Y%m%d%H%M%S"))
        self.jobs[job.job_id] = job
        self.active += 1
        self.peak_active = max(self.peak_active, self.active)
        task = asyncio.create_task(self._capture(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return _json({"url": url, "job_id": job.job_id})

    @staticmethod
    def _status(job: Job) -> dict[str, object]:
        if job.status == "success":
            return {"status": "success", "job_id": job.job_id, "original_url": job.url,
                    "timestamp": job.timestamp, "duration_sec": 0.0}
        if job.status == "error":
            return {"status": "error", "job_id": job.job_id, "status_ext": job.status_ext,
                    "message": job.message}
        return {"status": "pending", "job_id": job.job_id}

    async def _capture(self, job: Job) -> None:
        try:
            async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
                response = await client.get(self.archive.record_url(job.url))
                if response.status_code >= 400:
                    job.status_ext = "error:not-found" if response.status_code in (404, 410) \
                        else f"error:http-{response.status_code}"
                    job.message = f"the page answered {response.status_code}"
                    job.status = "error"
                    return
                timestamp = await self._indexed(client, job)
            if timestamp:
                job.timestamp, job.status = timestamp, "success"
            else:
                job.status_ext, job.status = "error:indexing-timeout", "error"
                job.message = "the capture did not reach the index in time"
        except httpx.HTTPError as exc:
            job.status_ext, job.status = "error:proxy-error", "error"
            job.message = f"recording failed: {exc}"
        finally:
            self.active -= 1

    async def _indexed(self, client: httpx.AsyncClient, job: Job) -> str:
        """The capture's timestamp once the CDX index lists it (pywb auto-indexes)."""
        query = f"{self.archive.collection_url}/cdx?url={quote(job.url, safe='')}&output=json"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + INDEX_SECONDS
        while loop.time() < deadline:
            response = await client.get(query)
            if response.status_code == 200:
                stamps = [row.get("timestamp", "") for row in _json_lines(response.text)]
                fresh = sorted(s for s in stamps if s >= job.started)
                if fresh:
                    return fresh[-1]
            await asyncio.sleep(0.25)
        return ""

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _json_lines(text: str) -> list[dict[str, str]]:
    rows = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if isinstance(row, dict):
                rows.append(row)
    return rows


def _json(payload: dict[str, object], status: int = 200) -> Reply:
    return json_response(json.dumps(payload).encode(), status)
