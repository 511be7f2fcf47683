"""Engine progress → MCP progress notifications.

The engine reports (stage, done, total, message); MCP wants a number that increases with
every notification. We send a step counter as the progress value and put the stage and its
own n/m in the message ("queries 3/7: stage 1"), which is what a person watching wants.
"""

from __future__ import annotations

import logging
from typing import Protocol

import anyio
from mcp.shared.exceptions import MCPError

# A client that stopped listening (closed stream, connection closed): its progress is lost,
# the work goes on. Anything else is a bug and is raised.
CLIENT_GONE = (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError)

log = logging.getLogger(__name__)

MESSAGE_CHARS = 200


class ProgressSink(Protocol):
    async def report_progress(self, progress: float, total: float | None = None,
                              message: str | None = None) -> None: ...


def progress_message(stage: str, done: int, total: int | None, message: str) -> str:
    text = f"{stage} {done}/{total}" if total else stage
    if message:
        text = f"{text}: {' '.join(message.split())[:MESSAGE_CHARS]}"
    return text


class ProgressRelay:
    """Callable handed to the engine as `progress`; forwards to the MCP request context."""

    def __init__(self, sink: ProgressSink) -> None:
        self.sink = sink
        self.step = 0
        # Concurrent reporters (check_links_in_text recovers several links at once) send
        # one at a time, so the values reach the client in increasing order.
        self._sending = anyio.Lock()

    async def __call__(self, stage: str, done: int, total: int | None, message: str) -> None:
        async with self._sending:
            self.step += 1
            try:
                await self.sink.report_progress(self.step, None,
                                                progress_message(stage, done, total, message))
            except CLIENT_GONE:
                log.debug("progress notification not delivered", exc_info=True)
