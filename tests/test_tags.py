"""Tags: meta keywords of the memento, Hacker News search (testbed), ghost tags."""

from __future__ import annotations

import socket

import pytest

from pagetrail.tools.archive.memento import fetch_memento
from pagetrail.tools.evidence.tags import get_tags, hn_tags, is_ghost, merge_tags
from pagetrail.tools.models import Document, Memento
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.settings import Settings

URL = "https://www.news.example/2019/06/solar-farms"


def test_hn_tags_keep_matching_hits_and_topical_tags():
    data = {"hits": [
        {"url": "http://news.example/2019/06/solar-farms/", "title": "Solar farms double",
         "_tags": ["story", "author_pg", "story_123", "solar", "energy", "front_page"]},
        {"url": "https://other.example/", "title": "Unrelated", "_tags": ["noise"]},
        {"title": "no url"}, "junk",
    ]}
    assert hn_tags(data, URL) == ["solar", "energy", "Solar farms double"]
    assert hn_tags({"hits": "nope"}, URL) == [] and hn_tags([1, 2], URL) == []


def test_ghost_tags_marked_against_current_page():
    current = Document(url=URL, title="Wind power news", keywords=["wind"],
                       text="Offshore wind turbines are growing. Solar is mentioned once.")
    tags = merge_tags([("wind", "meta"), ("Solar", "meta"), ("heat pumps", "hn"),
                       ("SOLAR", "hn"), ("", "hn"), ("x\x00y", "hn")], current)
    assert [(t.tag, t.source, t.ghost) for t in tags] == [
        ("wind", "meta", False), ("Solar", "meta", False), ("heat pumps", "hn", True),
        ("x y", "hn", True)]
    assert not is_ghost("offshore wind", current) and is_ghost("wind farm", current)


def test_no_current_page_means_no_ghosts():
    assert all(not t.ghost for t in merge_tags([("solar", "meta")], None))


async def test_failing_source_is_skipped_meta_kept():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings(hn_api_url=f"http://127.0.0.1:{port}/api/v1", retries=0,
                        allow_hosts=["127.0.0.1"], no_proxy=["127.0.0.1"], archives=[])
    memento = Memento(original_url=URL, memento_url="http://a/1", raw_url="http://a/1id_",
                      datetime="2019-06-01T00:00:00Z", archive="http://a",
                      document=Document(url=URL, keywords=["solar", "energy"]))
    async with Fetcher(settings) as fetcher:
        tags = await get_tags(URL, fetcher, memento=memento, settings=settings)
    assert [(t.tag, t.source) for t in tags] == [("solar", "meta"), ("energy", "meta")]


@pytest.mark.testbed
async def test_tags_from_testbed_social_and_memento(tiny_world, testbed_settings):
    current = Document(url=tiny_world.moved_to, title="Solar farms double",
                       text="Solar output doubled.")
    async with Fetcher(testbed_settings) as fetcher:
        memento = await fetch_memento(tiny_world.social_url, fetcher, settings=testbed_settings)
        tags = await get_tags(tiny_world.social_url, fetcher, memento=memento, current=current,
                              settings=testbed_settings)
    by_text = {t.tag.lower(): t for t in tags}
    assert by_text["solar"].source == "hn" and not by_text["solar"].ghost
    assert by_text["energy"].ghost  # no longer on the (current) page
    assert tiny_world.social_title.lower() in by_text
