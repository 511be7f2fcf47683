"""One task's memory of the answers it already had: a URL asked twice in one recovery is
fetched once.

Private to the fetch layer; `tools.net.fetch` is its surface (`remembering_answers`).

A recovery asks for the same URL more than once without meaning to: a site that sends its
unknown URLs (the dead one, /robots.txt, /sitemap.xml) to its home page makes the check, the
site map and the candidate reader each fetch that home page; two stages may read one page.
A browser's memory cache answers such repeats within one page load; this does the same
within one task, under the rules of an HTTP cache (RFC 9111): only a GET, only a status
that is cacheable by default (§4.2.2), never an answer that says `no-store`, `no-cache` or
`Vary: *`. A request already under way is shared, not sent again.

Scope: a context variable (`remembering_answers`), so the memory is one task's — the tasks
it gathers inherit it, another recovery sharing the fetcher does not see it — and it is gone
when the task ends: no answer outlives the task that fetched it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

# RFC 9111 §4.2.2 / RFC 9110 §15.1: statuses "heuristically cacheable" (206 left out: a
# partial body is not the page).
REUSABLE_STATUSES = frozenset({200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501})
MAX_ENTRIES = 256
MAX_BYTES = 64 * 1024 * 1024


class Answer(Protocol):
    status: int
    headers: Mapping[str, str]  # case-insensitive (httpx.Headers)
    content: bytes


A = TypeVar("A", bound=Answer)
Key = tuple[str, int]  # (URL, body limit)


def reusable(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an answer may answer the same request again within the task (pure)."""
    if status not in REUSABLE_STATUSES:
        return False
    directives = {part.strip().split("=", 1)[0].lower()
                  for part in headers.get("cache-control", "").split(",")}
    if directives & {"no-store", "no-cache"}:
        return False
    return headers.get("vary", "").strip() != "*"


class AnswerMemo(Generic[A]):
    """The answers of one task by (URL, body limit), bounded in count and bytes (the oldest
    forgotten first)."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.reused = 0  # requests not sent
        self._answers: OrderedDict[Key, A] = OrderedDict()
        self._bytes = 0
        self._pending: dict[Key, asyncio.Future[A]] = {}

    async def answer(self, key: Key, fetch: Callable[[], Awaitable[A]]) -> A:
        """The remembered answer for `key`, the one under way, or `fetch()`'s."""
        known = self._answers.get(key)
        if known is not None:
            self.reused += 1
            return known
        pending = self._pending.get(key)
        if pending is not None:
            try:
                # A failure is the same failure for every asker of the URL at the same time.
                answer = await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not pending.cancelled() or (task is not None and task.cancelling()):
                    raise  # this asker was cancelled
                return await self.answer(key, fetch)  # the one it waited for was: ask anew
            self.reused += 1
            return answer
        future: asyncio.Future[A] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            answer = await fetch()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: nobody may be waiting
            raise
        finally:
            del self._pending[key]
        future.set_result(answer)
        if reusable(answer.status, answer.headers):
            self._keep(key, answer)
        return answer

    def _keep(self, key: Key, answer: A) -> None:
        size = len(answer.content)
        if size > self.max_bytes:
            return
        self._answers[key] = answer
        self._bytes += size
        while len(self._answers) > self.max_entries or self._bytes > self.max_bytes:
            _key, old = self._answers.popitem(last=False)
            self._bytes -= len(old.content)


_MEMO: contextvars.ContextVar[AnswerMemo | None] = contextvars.ContextVar(
    "pagetrail_answer_memo", default=None)


@contextlib.contextmanager
def remembering_answers() -> Iterator[AnswerMemo]:
    """Within the block (and the tasks it starts), a GET of a URL already answered is not
    sent again. Nested blocks share the outer memory."""
    current = _MEMO.get()
    if current is not None:
        yield current
        return
    memo: AnswerMemo = AnswerMemo()
    token = _MEMO.set(memo)
    try:
        yield memo
    finally:
        _MEMO.reset(token)


def current_memo() -> AnswerMemo | None:
    return _MEMO.get()
