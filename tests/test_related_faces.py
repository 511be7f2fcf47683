"""Related archived pages in both faces: the MCP tool through the SDK's real client
(in-process) and `/fixlink related URL` through signed requests to the running Slack app.

The tiny world archives no site's home page, and related pages are home pages of sites of
the lost URL's topic, so this module builds its own small world: sites of two topics (made-up
names), some of them with archived home pages, served by a testbed of its own. Each test that
needs a classifier writes a url<TAB>category file into PAGETRAIL_DATA_DIR and trains on it
with tools.learning.classify.train, as a user would with `pagetrail classify train --data PATH`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp import Client
from slack_fake import FakeSlack, ServerThread, command_body, post_signed

from pagetrail.bot import blocks
from pagetrail.bot.app import BotApp, build_app
from pagetrail.bot.ratelimit import KeyedLimiter, Limit
from pagetrail.bot.server import asgi_app
from pagetrail.server.app import build_server
from pagetrail.store import Store
from pagetrail.tools.learning.classify import train
from pagetrail.tools.settings import data_dir
from pagetrail.tools.testbed.runner import TestbedThread, start_in_thread
from pagetrail.tools.testbed.worldgen import WorldBuilder

pytestmark = pytest.mark.testbed

SECRET = "related-signing-secret"
ACK_LIMIT = 3.0

# Two topics; a site's name is two of its topic's words. The first ARCHIVED_PER_TOPIC sites
# of each topic get archived home pages, the others exist only in the training data.
TOPIC_WORDS = {
    "science": ["solar", "energy", "wind", "physics", "research", "climate", "battery", "power"],
    "home": ["bread", "recipe", "kitchen", "garden", "baking", "cooking", "pantry", "soup"],
}
ARCHIVED_PER_TOPIC = 3
# Capture times of each archived site's home page (the first site has two captures).
CAPTURES = [["20120105000000", "20200310000000"], ["20150601000000"], ["20180920000000"]]
LOST_URL = "https://www.solar-energy-blog.example/2019/05/panels-on-every-roof"


def topic_sites() -> dict[str, list[str]]:
    sites: dict[str, list[str]] = {}
    for topic, words in TOPIC_WORDS.items():
        pairs = [f"{a}-{b}.example" for a in words for b in words if a < b]
        sites[topic] = pairs[::3]  # a spread of pairs, ~9 sites per topic
    return sites


def archived_sites(topic: str) -> list[str]:
    return topic_sites()[topic][:ARCHIVED_PER_TOPIC]


def build_related_world(root: Path) -> Path:
    builder = WorldBuilder(root, name="related")
    for topic in TOPIC_WORDS:
        for site, stamps in zip(archived_sites(topic), CAPTURES, strict=True):
            words = site.removesuffix(".example").replace("-", " ")
            html = (f"<!DOCTYPE html><html><head><title>{words.title()}</title></head>"
                    f"<body><h1>{words.title()}</h1><p>All about {words}.</p></body></html>")
            for stamp in stamps:
                builder.capture(f"http://{site}/", stamp, html=html)
    return builder.write()


def train_classifier() -> dict[str, int]:
    """What a user does: a url<TAB>category file in the data directory, then train."""
    lines = ["# url\tcategory"]
    for topic, sites in topic_sites().items():
        lines += [f"https://www.{site}/privacy\tTop/{topic.title()}/Misc" for site in sites]
    data = data_dir() / "sites.tsv"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("\n".join(lines) + "\n")
    return train(data).categories


@pytest.fixture(scope="module")
def related_testbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestbedThread]:
    world = build_related_world(tmp_path_factory.mktemp("related-world") / "related")
    handle = start_in_thread(world)
    try:
        yield handle
    finally:
        handle.stop()


def host(url: str) -> str:
    return (urlsplit(url).hostname or "").removeprefix("www.")


def assert_related_answer(answer: dict[str, Any], archive_url: str) -> None:
    """The shape both faces promise: the lost URL's topic, related pages of that topic only,
    archived ones only, best first, each marked related, with the not-a-replacement note."""
    assert answer["category"] == "science"
    assert "not replacements" in answer["note"]
    items = answer["items"]
    assert {host(i["url"]) for i in items} == set(archived_sites("science"))
    assert answer["archived"] == ARCHIVED_PER_TOPIC
    assert answer["candidates_in_category"] == len(topic_sites()["science"])
    assert all(i["kind"] == "related" for i in items)
    assert all(i["memento_url"].startswith(archive_url) for i in items)
    scores = [i["score"] for i in items]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)


# --------------------------------------------------------------------------- MCP


@pytest.fixture
def mcp_server(related_testbed, store):
    return build_server(related_testbed.settings(), store)


async def test_mcp_lists_recommend_archived_as_read_only(mcp_server) -> None:
    async with Client(mcp_server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["recommend_archived"]
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.open_world_hint is True
    assert tool.annotations.destructive_hint is False
    description = tool.description or ""
    for promise in ("Cost", "never replacements", "untrusted", "pagetrail classify train"):
        assert promise in description
    assert tool.output_schema and tool.output_schema["type"] == "object"
    assert {"items", "note", "category"} <= set(tool.output_schema["properties"])
    assert tool.input_schema["required"] == ["url"]
    assert tool.input_schema["properties"]["limit"]["maximum"] == 20


async def test_mcp_without_a_classifier_is_a_clean_tool_error(mcp_server) -> None:
    async with Client(mcp_server) as client:
        result = await client.call_tool("recommend_archived", {"url": LOST_URL})
        assert result.is_error
        text = result.content[0].text
        assert "model_missing: no classifier trained" in text
        assert "pagetrail classify train --data PATH" in text
        assert str(data_dir()) not in text  # no server path leaks to the client
        bad = await client.call_tool("recommend_archived", {"url": "ftp://example.org/x"})
        assert bad.is_error and "invalid_url" in bad.content[0].text
        # The session survives both.
        assert (await client.list_tools()).tools


async def test_mcp_recommends_archived_pages_of_the_same_topic(mcp_server,
                                                               related_testbed) -> None:
    assert train_classifier() == {"home": len(topic_sites()["home"]),
                                  "science": len(topic_sites()["science"])}
    async with Client(mcp_server) as client:
        result = await client.call_tool("recommend_archived",
                                        {"url": LOST_URL, "at": "2013-01-01", "limit": 5})
    assert not result.is_error, result.content[0].text
    answer = result.structured_content
    assert_related_answer(answer, related_testbed.archive_url)
    assert answer["category_source"] == "classifier"  # the lost site is not in the data
    assert answer["at"].startswith("2013-01-01")
    # `at` picks each site's capture closest to it: 2012 rather than 2020 for the first.
    twice = next(i for i in answer["items"] if host(i["url"]) == archived_sites("science")[0])
    assert twice["datetime"].startswith("2012-01-05") and twice["captures"] == 2


async def test_mcp_limit_bounds_the_answer(mcp_server) -> None:
    train_classifier()
    async with Client(mcp_server) as client:
        result = await client.call_tool("recommend_archived", {"url": LOST_URL, "limit": 1})
        answer = result.structured_content
        assert len(answer["items"]) == 1
        assert host(answer["items"][0]["url"]) in archived_sites("science")
        # A small answer looks up fewer sites (the cost bound of the description).
        assert answer["looked_up"] < answer["candidates_in_category"]
        too_many = await client.call_tool("recommend_archived", {"url": LOST_URL, "limit": 99})
        assert too_many.is_error


# --------------------------------------------------------------------------- Slack


@dataclass
class Running:
    fake: FakeSlack
    server: ServerThread
    bot_app: BotApp
    archive_url: str
    counter: int = 0

    def command(self, text: str, user: str) -> tuple[Any, str, float]:
        self.counter += 1
        name = f"related{self.counter}"
        body = command_body("/fixlink", text, response_url=self.fake.response_url(name),
                            user=user, channel="C-related")
        started = time.monotonic()
        response = post_signed(self.server.url, SECRET, body)
        return response, name, time.monotonic() - started

    def answer(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        return self.fake.wait_for(lambda: self.fake.posts(f"/response/{name}"), timeout)[0].body


@pytest.fixture(scope="module")
def running(related_testbed, tmp_path_factory) -> Iterator[Running]:
    fake = FakeSlack().start()
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('related-bot') / 'bot.db'}")
    settings = related_testbed.settings(
        slack_api_url=fake.api_url, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
        database_url=store.url, read_timeout=4.0, total_timeout=5.0, retries=0,
    )
    limiter = KeyedLimiter({"user": Limit(rate=5.0, burst=5), "channel": Limit(rate=50, burst=50)})
    bot_app = build_app(settings, store, limiter=limiter)
    server = ServerThread(asgi_app(bot_app)).start()
    try:
        yield Running(fake, server, bot_app, related_testbed.archive_url)
    finally:
        server.stop()
        fake.stop()
        store.dispose()


def all_text(payload: dict[str, Any]) -> str:
    return json.dumps(payload.get("blocks", []), ensure_ascii=False) + payload.get("text", "")


def linked_urls(payload: dict[str, Any]) -> list[str]:
    """The link targets of `<url|label>` in the answer's mrkdwn."""
    import re

    return re.findall(r"<(https?://[^|>]+)\|", all_text(payload).replace("\\n", "\n"))


def test_slack_related_without_a_classifier_says_how_to_train(running: Running) -> None:
    response, name, seconds = running.command(f"related {LOST_URL}", user="U-nomodel")
    assert response.status_code == 200 and seconds < ACK_LIMIT
    assert "Looking for related archived pages" in response.json()["text"]
    answer = running.answer(name)
    assert answer["response_type"] == "ephemeral"  # only the asker sees the admin's to-do
    assert blocks.validate_blocks(answer["blocks"]) == []
    text = all_text(answer)
    assert "no classifier trained" in text and "pagetrail classify train --data PATH" in text
    assert "model_missing" in text


def test_slack_related_lists_archived_pages_marked_as_related(running: Running) -> None:
    train_classifier()
    response, name, seconds = running.command(f"related <{LOST_URL}>", user="U-related")
    assert response.status_code == 200 and seconds < ACK_LIMIT
    answer = running.answer(name)
    assert answer["response_type"] == "in_channel"
    assert blocks.validate_blocks(answer["blocks"]) == []
    text = all_text(answer)
    assert "Related archived pages — not replacements" in text
    assert "not replacements" in answer["text"]  # the notification says it too
    assert "science" in text
    mementos = [u for u in linked_urls(answer) if u.startswith(running.archive_url)]
    every_site = [s for sites in topic_sites().values() for s in sites]
    shown = {site for site in every_site if any(f"//{site}/" in u for u in mementos)}
    assert shown == set(archived_sites("science"))  # same topic, archived, nothing else
    # Related pages are not replacements: nothing to "Use this" for.
    assert blocks.ACTION_PICK not in text and blocks.ACTION_REJECT not in text


# --------------------------------------------------------------------------- formatting


def test_a_recovery_shows_related_pages_apart_and_escaped() -> None:
    """recover_link adds related pages to a lost, never-archived link's answer: the Slack
    answer lists them apart from the candidates, marked related, without buttons, and text
    from the training data cannot become markup or a link to anything but http(s)."""
    from pagetrail.tools.models import Recovery

    items = [
        {"kind": "related", "url": "http://solar-wind.example/",
         "memento_url": "http://127.0.0.1:1/world/20150601000000/http://solar-wind.example/",
         "datetime": "2015-06-01T00:00:00+00:00", "captures": 3, "score": 0.5},
        {"kind": "related", "url": "http://evil.example/<!channel>",
         "memento_url": "javascript:alert(1)", "datetime": "2016-01-01T00:00:00+00:00",
         "captures": 1, "score": 0.4},
    ]
    recovery = Recovery(url="https://gone.example/a", answer="none", related_archived=items)
    payload = blocks.recovery_blocks(recovery)
    assert blocks.validate_blocks(payload["blocks"]) == []
    related = next(b for b in payload["blocks"] if b.get("block_id") == "related")
    text = related["text"]["text"]
    assert "not replacements" in text
    assert "<http://127.0.0.1:1/world/20150601000000/http://solar-wind.example/|" \
           "solar-wind.example>" in text
    assert "<!channel>" not in text and "<javascript:" not in text
    assert "accessory" not in related
    without = blocks.recovery_blocks(Recovery(url="https://gone.example/a", answer="none"))
    assert all(b.get("block_id") != "related" for b in without["blocks"])
