"""Parsing /fixlink and /linkrot (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pagetrail.bot.commands import (
    CommandUsageError,
    parse_fixlink,
    parse_linkrot,
    unwrap_token,
    watch_target,
)
from pagetrail.tools.errors import InvalidURL, RefusedAddress
from pagetrail.tools.settings import Settings


def test_recover_with_anchor_words_and_slack_link_markup() -> None:
    request = parse_fixlink("<https://example.org/a|example.org/a> solar  farm boom")
    assert (request.action, request.url, request.anchor) == \
        ("recover", "https://example.org/a", "solar farm boom")


@pytest.mark.parametrize(("text", "action", "url"), [
    ("check https://example.org/x", "check", "https://example.org/x"),
    ("signature https://example.org/x", "signature", "https://example.org/x"),
    ("tags https://example.org/x", "tags", "https://example.org/x"),
    ("related https://example.org/x", "related", "https://example.org/x"),
    ("HELP", "help", ""),
])
def test_subcommands(text: str, action: str, url: str) -> None:
    request = parse_fixlink(text)
    assert (request.action, request.url) == (action, url)


def test_memento_date_rank_and_search() -> None:
    memento = parse_fixlink("memento https://example.org/x 2019-06-30")
    assert memento.at == datetime(2019, 6, 30, tzinfo=UTC)
    rank = parse_fixlink("rank https://example.org/x https://a.org/ <https://b.org/>")
    assert rank.candidates == ("https://a.org/", "https://b.org/")
    assert parse_fixlink("search solar farms double").words == ("solar", "farms", "double")


@pytest.mark.parametrize(("text", "error"), [
    ("", CommandUsageError),
    ("check", CommandUsageError),
    ("rank https://example.org/x", CommandUsageError),
    ("search", CommandUsageError),
    ("memento https://example.org/x yesterday", CommandUsageError),
    ("bogus", CommandUsageError),
    ("example.org/page", InvalidURL),
    ("javascript:alert(1)", InvalidURL),
    ("http://127.0.0.1/", RefusedAddress),
    ("http://localhost:8080/admin", RefusedAddress),
    ("check http://[::1]/", RefusedAddress),
    ("rank https://example.org/x http://192.168.0.1/", RefusedAddress),
])
def test_mistakes_raise_named_errors(text: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_fixlink(text)


def test_allowed_hosts_are_not_refused() -> None:
    settings = Settings(allow_hosts=["127.0.0.1"])
    assert parse_fixlink("http://127.0.0.1:9/x", settings).url == "http://127.0.0.1:9/x"


def test_linkrot() -> None:
    assert parse_linkrot("watch Example.org").target == "https://example.org/"
    assert parse_linkrot("unwatch https://example.org/page").target == "https://example.org/page"
    assert parse_linkrot("list").action == "list"
    assert parse_linkrot("digest now").action == "digest"
    for text in ("", "watch", "digest", "dance"):
        with pytest.raises(CommandUsageError):
            parse_linkrot(text)
    with pytest.raises(InvalidURL):
        watch_target("not a site")
    with pytest.raises(RefusedAddress):
        watch_target("10.0.0.1")


def test_unwrap_token() -> None:
    assert unwrap_token("<https://x.org/|x.org>") == "https://x.org/"
    assert unwrap_token("<https://x.org/>") == "https://x.org/"
    assert unwrap_token("plain") == "plain"
