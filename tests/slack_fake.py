"""A loopback stand-in for Slack: the Web API (/api/<method>) and response_url (/response/<id>)
answered by a real HTTP server on 127.0.0.1 that records everything posted to it; plus the
signing helper and a thread that serves the bot's ASGI app under uvicorn.

    fake = FakeSlack().start()
    fake.api_url            # PAGETRAIL_SLACK_API_URL for the app
    fake.response_url("c1") # a response_url to put in a command
    fake.fail("chat.postMessage", status=429, retry_after=1)   # the next call answers 429
    fake.wait_for(lambda: fake.posts("/response/c1"))
    fake.uploads            # file id → bytes received through files upload v2
    fake.install("T2", code="c-2", token="xoxb-t2")  # oauth.v2.access answers the code
    record.token            # the bearer token of a Web API call (auth.test answers its team)
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

import httpx
from loopback import Loopback, QuietHandler
from slack_sdk.signature import SignatureVerifier

BOT_USER = "UBOT"


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    at: float
    status: int
    failed: bool = False  # answered by an injected failure
    token: str = ""  # the Web API call's bearer token, or "basic:<id>:<secret>"


@dataclass
class Failure:
    path_suffix: str
    status: int
    retry_after: int | None
    body: dict[str, Any] | None
    times: int


@dataclass
class FakeSlack:
    records: list[Recorded] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    # Files upload v2: files.getUploadURLExternal hands out /upload/<id> on this server, the
    # bytes posted there land here, files.completeUploadExternal shares them.
    uploads: dict[str, bytes] = field(default_factory=dict)
    # OAuth: the codes oauth.v2.access exchanges (code → team, token) for this app's
    # client credentials, and each bot token's workspace (auth.test answers it).
    client_id: str = "client-1"
    client_secret: str = "client-secret-1"
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)
    teams: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: int = 0
    _server: Loopback | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeSlack:
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data_in = self.rfile.read(length)
                if self.path.startswith("/upload/"):
                    status, headers, payload = fake._receive_upload(self.path, data_in)
                else:
                    status, headers, payload = fake._answer(
                        self.path, data_in.decode("utf-8", "replace"),
                        self.headers.get("content-type", ""),
                        _credentials(self.headers.get("authorization", "")))
                data = payload.encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = Loopback(Handler)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    @property
    def base(self) -> str:
        assert self._server is not None
        return self._server.base

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.base}/response/{name}"

    # ------------------------------------------------------------------ behaviour

    def fail(self, path_suffix: str, *, status: int = 429, retry_after: int | None = 1,
             body: dict[str, Any] | None = None, times: int = 1) -> None:
        """The next `times` requests whose path ends with `path_suffix` fail this way."""
        with self._lock:
            self.failures.append(Failure(path_suffix, status, retry_after, body, times))

    def install(self, team: str, *, code: str, token: str) -> None:
        """oauth.v2.access exchanges `code` for bot token `token` of workspace `team`."""
        with self._lock:
            self.codes[code] = (team, token)
            self.teams[token] = team

    def _answer(self, path: str, raw: str, content_type: str,
                token: str = "") -> tuple[int, dict[str, str], str]:
        body = _decode(raw, content_type)
        if "?" in path and path.startswith("/api/"):  # slack_sdk sends some arguments there
            query = {k: v[-1] for k, v in parse_qs(path.split("?", 1)[1]).items()}
            body = {**query, **body}
        with self._lock:
            failure = next((f for f in self.failures if path.endswith(f.path_suffix)
                            and f.times > 0), None)
            if failure is not None:
                failure.times -= 1
                self.records.append(Recorded(path, body, time.monotonic(), failure.status, True,
                                             token))
                headers = {"content-type": "application/json"}
                if failure.retry_after is not None:
                    headers["retry-after"] = str(failure.retry_after)
                answer = failure.body or {"ok": False, "error": "ratelimited"}
                return failure.status, headers, json.dumps(answer)
            self.records.append(Recorded(path, body, time.monotonic(), 200, token=token))
            if path.startswith("/response/"):
                return 200, {"content-type": "text/html"}, "ok"
            method = path.removeprefix("/api/").split("?")[0]
            answer: dict[str, Any] = {"ok": True}
            if method == "auth.test":
                bearer = token.removeprefix("bearer:")
                if bearer not in self.teams and self.codes:  # installs known: others refused
                    answer = {"ok": False, "error": "invalid_auth"}
                else:
                    team = self.teams.get(bearer, "T1")
                    answer.update(url="https://fake.slack/", team="Fake", user="pagetrail",
                                  team_id=team, user_id=BOT_USER, bot_id=f"B-{team}",
                                  is_enterprise_install=False)
            elif method == "oauth.v2.access":
                granted = self.codes.get(str(body.get("code", "")))
                if token != f"basic:{self.client_id}:{self.client_secret}" or granted is None:
                    answer = {"ok": False, "error": "invalid_code"}
                else:
                    answer.update(access_token=granted[1], token_type="bot",
                                  scope="commands,chat:write", bot_user_id=BOT_USER,
                                  app_id="A1", team={"id": granted[0], "name": f"Team {granted[0]}"},
                                  enterprise=None, is_enterprise_install=False,
                                  authed_user={"id": "U-installer"})
            elif method == "conversations.open":
                answer.update(channel={"id": f"D-{body.get('users', '')}"})
            elif method == "chat.postEphemeral":
                answer.update(message_ts="1700000000.999999")
            elif method == "files.getUploadURLExternal":
                self._ts += 1
                file_id = f"F{self._ts:06d}"
                answer.update(upload_url=f"{self.base}/upload/{file_id}", file_id=file_id)
            elif method == "files.completeUploadExternal":
                files = body.get("files")
                files = json.loads(files) if isinstance(files, str) else files or []
                answer.update(files=[{"id": f.get("id"), "title": f.get("title", "")}
                                     for f in files])
            elif method == "chat.postMessage":
                self._ts += 1
                answer.update(channel=body.get("channel"), ts=f"1700000000.{self._ts:06d}",
                              message={"text": body.get("text", "")})
            return 200, {"content-type": "application/json"}, json.dumps(answer)

    def _receive_upload(self, path: str, data: bytes) -> tuple[int, dict[str, str], str]:
        file_id = path.removeprefix("/upload/").split("?")[0]
        with self._lock:
            self.uploads[file_id] = data
            self.records.append(Recorded(path, {"bytes": len(data)}, time.monotonic(), 200))
        return 200, {"content-type": "text/plain"}, f"OK - {len(data)}"

    # ------------------------------------------------------------------ inspection

    def posts(self, path_prefix: str, *, ok_only: bool = True) -> list[Recorded]:
        with self._lock:
            return [r for r in self.records if r.path.startswith(path_prefix)
                    and (not r.failed or not ok_only)]

    def messages(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Bodies of successful chat.postMessage calls (to `channel`)."""
        return [r.body for r in self.posts("/api/chat.postMessage")
                if channel is None or r.body.get("channel") == channel]

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout} s; recorded: "
                             f"{[(r.path, r.status) for r in self.records]}")


def _credentials(authorization: str) -> str:
    """"bearer:<token>" or "basic:<id>:<secret>" (what the client authenticated with)."""
    kind, _, value = authorization.partition(" ")
    if kind.lower() == "bearer":
        return f"bearer:{value.strip()}"
    if kind.lower() == "basic":
        try:
            return "basic:" + base64.b64decode(value.strip()).decode()
        except (ValueError, UnicodeDecodeError):
            return "basic:?"
    return ""


def _decode(raw: str, content_type: str) -> dict[str, Any]:
    if "json" in content_type:
        try:
            value = json.loads(raw or "{}")
        except json.JSONDecodeError:
            return {"_raw": raw}
        return value if isinstance(value, dict) else {"_raw": value}
    form = {k: v[0] for k, v in parse_qs(raw).items()}
    for key in ("blocks", "payload"):
        if key in form:
            with contextlib.suppress(json.JSONDecodeError):
                form[key] = json.loads(form[key])
    return form


# ---------------------------------------------------------------------- signed requests


def signed_headers(secret: str, body: str, *, timestamp: int | None = None,
                   content_type: str = "application/x-www-form-urlencoded") -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {"x-slack-request-timestamp": ts, "x-slack-signature": signature,
            "content-type": content_type}


def command_body(command: str, text: str, *, response_url: str, user: str = "U1",
                 channel: str = "C1") -> str:
    return urlencode({
        "token": "legacy", "team_id": "T1", "team_domain": "fake", "channel_id": channel,
        "channel_name": "general", "user_id": user, "user_name": user.lower(),
        "command": command, "text": text, "api_app_id": "A1", "response_url": response_url,
        "trigger_id": "1.2.3",
    })


def action_body(action_id: str, value: str, *, response_url: str, user: str = "U1",
                channel: str = "C1") -> str:
    payload = {
        "type": "block_actions", "team": {"id": "T1", "domain": "fake"},
        "user": {"id": user, "username": user.lower(), "team_id": "T1"},
        "api_app_id": "A1", "token": "legacy", "trigger_id": "1.2.3",
        "container": {"type": "message", "message_ts": "1700000000.000001",
                      "channel_id": channel, "is_ephemeral": False},
        "channel": {"id": channel, "name": "general"},
        "response_url": response_url,
        "actions": [{"action_id": action_id, "block_id": "b", "type": "button",
                     "value": value, "action_ts": "1700000001.000001",
                     "text": {"type": "plain_text", "text": "x"}}],
    }
    return urlencode({"payload": json.dumps(payload)})


def post_signed(url: str, secret: str, body: str, *, timestamp: int | None = None,
                signature: str | None = None, timeout: float = 10.0) -> httpx.Response:
    headers = signed_headers(secret, body, timestamp=timestamp)
    if signature is not None:
        headers["x-slack-signature"] = signature
    return httpx.post(url, content=body.encode(), headers=headers, timeout=timeout)


# ---------------------------------------------------------------------- app under uvicorn


class ServerThread:
    """Serve an ASGI app with uvicorn on 127.0.0.1 in a thread of its own (its own loop)."""

    def __init__(self, asgi: Any) -> None:
        import uvicorn

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(asgi, lifespan="off", log_level="warning")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run,
                                        kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    def start(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
