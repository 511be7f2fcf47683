"""A task's memory of the answers it had (`remembering_answers`), against real HTTP servers on
127.0.0.1: a URL asked twice in one recovery is fetched once, under an HTTP cache's rules."""

from __future__ import annotations

import asyncio
import time
from http.server import BaseHTTPRequestHandler

import httpx
import pytest
from test_fetch import html, loopback_settings, quick_fetcher, redirect, serve

from pagetrail.tools.errors import FetchFailed
from pagetrail.tools.net._memo import AnswerMemo, reusable
from pagetrail.tools.net.fetch import remembering_answers


async def test_a_home_page_every_missing_file_redirects_to_is_fetched_once() -> None:
    routes = {"/": html("<title>Home</title>"), "/robots.txt": redirect("/", 302),
              "/sitemap.xml": redirect("/", 302), "/gone": redirect("/", 302)}
    with serve(routes) as srv:
        async with quick_fetcher() as f:
            with remembering_answers() as memo:
                answers = [await f.get(srv.base + path)
                           for path in ("/gone", "/", "/robots.txt", "/sitemap.xml")]
            assert srv.hits["/"] == 1 and memo.reused == 3
            assert f.requests == 4  # three redirects and the home page once
            # Outside the block nothing is remembered.
            await f.get(srv.base + "/")
    assert srv.hits["/"] == 2 and f.requests == 5
    assert {a.final_url for a in answers} == {srv.base + "/"}
    assert all(a.status == 200 and "Home" in a.text() for a in answers)
    assert [h.url for h in answers[2].chain] == [srv.base + "/robots.txt"]


@pytest.mark.parametrize("headers", [{"Cache-Control": "no-store"},
                                     {"Cache-Control": "private, no-cache"},
                                     {"Vary": "*"}])
async def test_an_answer_that_forbids_reuse_is_fetched_again(headers: dict[str, str]) -> None:
    with serve({"/live": html("<title>Live</title>", **headers)}) as srv:
        async with quick_fetcher() as f:
            with remembering_answers():
                await f.get(srv.base + "/live")
                await f.get(srv.base + "/live")
    assert srv.hits["/live"] == 2


async def test_errors_heads_and_requests_with_headers_are_not_reused() -> None:
    with serve({"/page": html("<title>Page</title>"),
                "/busy": html("busy", 500)}) as srv:
        async with quick_fetcher(loopback_settings(retries=0)) as f:
            with remembering_answers():
                for _ in range(2):
                    assert (await f.get(srv.base + "/busy")).status == 500
                    await f.head(srv.base + "/page")
                    await f.get(srv.base + "/page", headers={"Authorization": "Bearer x"})
                await f.get(srv.base + "/page")
                await f.get(srv.base + "/page")
    assert srv.hits["/busy"] == 2  # a server error is no answer to keep
    methods = [m for m, path in srv.methods if path == "/page"]
    assert methods.count("HEAD") == 2
    assert methods.count("GET") == 2 + 1  # with headers twice, plain once


async def test_a_404_is_remembered_as_http_caches_do() -> None:
    with serve({}) as srv:
        async with quick_fetcher() as f:
            with remembering_answers():
                first = await f.get(srv.base + "/missing")
                second = await f.get(srv.base + "/missing")
    assert first.status == second.status == 404 and srv.hits["/missing"] == 1


def _slow_page(_req: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    time.sleep(0.3)
    return 200, {"Content-Type": "text/html"}, b"<title>Slow</title>"


async def test_the_same_page_asked_at_once_is_requested_once() -> None:
    with serve({"/slow": _slow_page}) as srv:
        async with quick_fetcher() as f:
            with remembering_answers() as memo:
                answers = await asyncio.gather(*(f.get(srv.base + "/slow") for _ in range(3)))
    assert srv.hits["/slow"] == 1 and memo.reused == 2
    assert all("Slow" in a.text() for a in answers)


async def test_each_task_has_its_own_memory() -> None:
    with serve({"/page": html("<title>Page</title>")}) as srv:
        async with quick_fetcher() as f:

            async def one_recovery() -> None:
                with remembering_answers():
                    await f.get(srv.base + "/page")
                    await f.get(srv.base + "/page")

            await asyncio.gather(one_recovery(), one_recovery())
    assert srv.hits["/page"] == 2  # once per recovery, though they share the fetcher


async def test_a_failure_is_not_remembered() -> None:
    with serve({}) as srv:
        port = int(srv.base.rsplit(":", 1)[1])
    # The server is closed: its port refuses connections.
    async with quick_fetcher(loopback_settings(retries=0)) as f:
        with remembering_answers():
            for _ in range(2):
                with pytest.raises(FetchFailed):
                    await f.get(f"http://127.0.0.1:{port}/page")
    assert f.requests == 2


class _Answer:
    def __init__(self, size: int) -> None:
        self.status = 200
        self.headers = httpx.Headers()
        self.content = b"x" * size


async def test_the_memory_is_bounded_and_forgets_the_oldest_first() -> None:
    memo: AnswerMemo[_Answer] = AnswerMemo(max_entries=2, max_bytes=100)
    fetched: list[str] = []

    def fetch(url: str, size: int = 10):  # type: ignore[no-untyped-def]
        async def go() -> _Answer:
            fetched.append(url)
            return _Answer(size)
        return go

    for url in ("a", "b", "c", "a"):
        await memo.answer((url, 1), fetch(url))
    assert fetched == ["a", "b", "c", "a"]  # "a" was forgotten when "c" came
    await memo.answer(("big", 1), fetch("big", 101))  # larger than the memory: not kept
    await memo.answer(("big", 1), fetch("big", 101))
    assert fetched[-2:] == ["big", "big"]
    await memo.answer(("c", 2), fetch("c"))  # another body limit is another request
    assert fetched[-1] == "c"


def test_reusable_follows_the_http_caching_rules() -> None:
    assert reusable(200, httpx.Headers())
    assert reusable(301, httpx.Headers({"Cache-Control": "max-age=0, private"}))
    assert reusable(410, httpx.Headers())
    assert not reusable(302, httpx.Headers())  # not cacheable by default
    assert not reusable(503, httpx.Headers())
    assert not reusable(206, httpx.Headers())
    assert not reusable(200, httpx.Headers({"Cache-Control": "No-Store"}))
    assert not reusable(200, httpx.Headers({"Cache-Control": "no-cache=\"set-cookie\""}))
    assert not reusable(200, httpx.Headers({"Vary": "*"}))
    assert reusable(200, httpx.Headers({"Vary": "Accept-Encoding"}))
