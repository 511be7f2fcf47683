"""A `Fetcher` that notes who asked for each fetch, for the evaluation's cost breakdown.

`RecordingFetcher` is the fetch layer's `Fetcher` unchanged, plus a `records` list: one
`costs.FetchRecord` per `get`/`head`/`post_form` call with the URL, the HTTP requests it took
(counted where `Fetcher.requests` is counted: each attempt, retries and redirect hops
included), its wall-clock seconds, and the calling pagetrail module and recovery stage (read
from the call stack, so no caller needs to pass a label). Used by the evaluation runner only.
"""

from __future__ import annotations

import contextvars
import sys
import time
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

from pagetrail.tools.eval.costs import FetchRecord
from pagetrail.tools.net.fetch import Fetcher, Response

_PACKAGE = "pagetrail."
# Not the client: the fetch layer, this module, and the engines' shared GET helpers
# (engines.base, engines.failures.fetch_api_json): the engine that called them is.
_SKIP = ("pagetrail.tools.net.", "pagetrail.tools.engines.base",
         "pagetrail.tools.engines.failures", __name__)
_STAGES = "pagetrail.tools.recovery."
_CURRENT: contextvars.ContextVar[FetchRecord | None] = contextvars.ContextVar(
    "pagetrail_eval_fetch", default=None)


def callers(frame: FrameType | None) -> tuple[str, str]:
    """(client, stage) of a fetch called from `frame`: the nearest pagetrail frame outside the
    fetch layer, and the nearest frame of a recovery stage, each as ``module:function`` without
    the ``pagetrail.tools.`` prefix ("" when there is none on the stack)."""
    client = stage = ""
    while frame is not None and not (client and stage):
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith(_PACKAGE) and not module.startswith(_SKIP):
            function = frame.f_code.co_qualname.replace(".<locals>", "")
            name = f"{module.removeprefix('pagetrail.tools.')}:{function}"
            client = client or name
            if module.startswith(_STAGES):
                stage = name
        frame = frame.f_back
    return client, stage


class RecordingFetcher(Fetcher):
    """`Fetcher` + `records` (one `FetchRecord` per fetch; see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.records: list[FetchRecord] = []

    async def _recorded(self, method: str, url: str, frame: FrameType | None,
                        call: Callable[[], Awaitable[Response]]) -> Response:
        client, stage = callers(frame)
        record = FetchRecord(method=method, url=url, client=client, stage=stage)
        self.records.append(record)
        token = _CURRENT.set(record)
        started = time.monotonic()
        try:
            return await call()
        finally:
            record.seconds = round(time.monotonic() - started, 4)
            _CURRENT.reset(token)

    async def get(self, url: str, **kwargs: Any) -> Response:
        return await self._recorded("GET", url, sys._getframe(1),
                                    lambda: super(RecordingFetcher, self).get(url, **kwargs))

    async def head(self, url: str, **kwargs: Any) -> Response:
        return await self._recorded("HEAD", url, sys._getframe(1),
                                    lambda: super(RecordingFetcher, self).head(url, **kwargs))

    async def post_form(self, url: str, form: dict[str, str], **kwargs: Any) -> Response:
        return await self._recorded(
            "POST", url, sys._getframe(1),
            lambda: super(RecordingFetcher, self).post_form(url, form, **kwargs))

    async def _attempt(self, *args: Any, **kwargs: Any) -> Any:
        # Counted here because `Fetcher.requests` is counted here: one per attempt.
        record = _CURRENT.get()
        if record is not None:
            record.requests += 1
        return await super()._attempt(*args, **kwargs)

    async def _proxy_answer(self, *args: Any, **kwargs: Any) -> Any:
        # The proxy probe after a refused CONNECT is one more request (`Fetcher.requests`).
        record = _CURRENT.get()
        if record is not None:
            record.requests += 1
        return await super()._proxy_answer(*args, **kwargs)
