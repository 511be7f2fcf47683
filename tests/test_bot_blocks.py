"""Block Kit formatting (pure): escaping of untrusted text, Slack's limits, pagination."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pagetrail.bot import blocks
from pagetrail.bot.blocks import DeadLinkView, DigestView, validate_blocks, validate_message
from pagetrail.tools.models import (
    Candidate,
    CheckResult,
    Document,
    Memento,
    Recovery,
    Signature,
    Term,
)

HOSTILE = "<!channel> *bold* <https://evil.example|click me> & " + "x" * 5000


def recovery(n: int = 12) -> Recovery:
    candidates = [Candidate(url=f"https://site.example/new/{i}?a=1|2", title=HOSTILE,
                            kind="replacement", confidence=0.5, evidence=HOSTILE)
                  for i in range(n)]
    memento = Memento(original_url="https://site.example/old", datetime=datetime(2019, 6, 1,
                      tzinfo=UTC), memento_url="https://archive.example/web/2019/x",
                      raw_url="https://archive.example/web/2019id_/x", archive="archive",
                      document=Document(url="https://site.example/old", title=HOSTILE))
    return Recovery(url="https://site.example/old", answer="replacement", candidates=candidates,
                    check=CheckResult(url="https://site.example/old", verdict="dead", status=404),
                    memento=memento, reason=HOSTILE)


def test_recovery_answer_escapes_untrusted_text_and_fits_limits() -> None:
    payload = blocks.recovery_blocks(recovery())
    validate_message(payload)
    text = json.dumps(payload)
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert "<https://evil.example" not in text
    picks = [e for b in payload["blocks"] if b["type"] == "actions" for e in b["elements"]
             if e["action_id"] == blocks.ACTION_PICK]
    assert len(picks) == blocks.CANDIDATES_PER_PAGE
    assert json.loads(picks[0]["value"])["c"] == "https://site.example/new/0?a=1|2"
    assert "One check only" in text  # a single interactive check says so


def test_show_more_pages_and_stops() -> None:
    second = blocks.recovery_blocks(recovery(5), offset=3)
    validate_message(second)
    assert "candidate-4" in json.dumps(second) and "candidate-1\"" not in json.dumps(second)
    assert not any(b.get("block_id") == "more" for b in second["blocks"])
    first = blocks.recovery_blocks(recovery(5))
    more = [b for b in first["blocks"] if b.get("block_id") == "more"]
    assert json.loads(more[0]["elements"][0]["value"])["o"] == 3


def test_oversized_button_values_are_left_out() -> None:
    long_url = "https://site.example/" + "a" * 2100
    payload = blocks.recovery_blocks(Recovery(url=long_url, answer="moved", candidates=[
        Candidate(url=long_url + "/new", kind="moved", confidence=0.9)]))
    validate_message(payload)
    assert not any(b["type"] == "actions" for b in payload["blocks"])


def test_primitive_formatters_validate() -> None:
    signature = Signature(url="https://x.example/", title=HOSTILE, ls5=["a"] * 5,
                          ls7=["b" * 500] * 7, kld_terms=[Term(term="t" * 400, score=1.0)] * 10)
    for payload in (blocks.signature_blocks(signature), blocks.help_blocks(),
                    blocks.check_blocks(CheckResult(url="https://x.example/", verdict="ok")),
                    blocks.memento_blocks("https://x.example/", None),
                    blocks.error_blocks(HOSTILE, "usage"),
                    blocks.watches_blocks([f"https://s{i}.example/" for i in range(500)])):
        validate_message(payload)


def test_digest_is_paginated_within_limits() -> None:
    dead = [DeadLinkView(url=f"https://site.example/{i}", pages=["https://blog.example/"],
                         suggestion=f"https://site.example/new/{i}", confidence=0.8,
                         kind="moved", confirmed=i % 2 == 0) for i in range(230)]
    view = DigestView(channel="C1", period="2030-W02", targets=["https://site.example/"],
                      checked=900, suspect=115, confirmed_dead=115, dead=dead)
    main = blocks.digest_blocks(view)
    validate_message(main)
    assert "*900* links checked" in json.dumps(main)
    pages = blocks.digest_thread_pages(view)
    assert len(pages) == 12  # 230 links, 20 a message
    listed = []
    for page in pages:
        validate_message(page)
        listed += [b["block_id"] for b in page["blocks"] if b["type"] == "section"]
    assert len(listed) == 230


def test_validator_finds_each_kind_of_violation() -> None:
    too_many = [{"type": "divider"}] * 51
    assert validate_blocks(too_many)
    assert validate_blocks([{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}])
    assert validate_blocks([{"type": "header", "text": {"type": "mrkdwn", "text": "x"}}])
    button = {"type": "button", "text": {"type": "plain_text", "text": "x" * 76},
              "action_id": "a", "value": "v"}
    assert validate_blocks([{"type": "actions", "elements": [button]}])
    assert validate_blocks([{"type": "context", "elements": []}])
    assert validate_blocks([{"type": "section", "block_id": "b", "text": {"type": "mrkdwn",
                            "text": "x"}}] * 2)
    assert validate_blocks([{"type": "section", "text": {"type": "mrkdwn", "text": "ok"}}]) == []


# --- fallback text and broadcast mentions --------------------------------------------------

MENTIONS = ("<!channel>", "<!here>", "<!everyone>", "<@U0ADMIN>", "<http://x|y>", "<#C123>")
BROADCAST = ("@channel", "@here", "@everyone")


def strings(obj: object) -> list[str]:
    """Every string of a payload (all fields, blocks and fallback text alike)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings(v)]
    return []


def assert_no_mentions(payload: dict) -> None:
    """No string Slack parses (mrkdwn text, fallback text) forges a mention or link; button
    values are data, never parsed, and are not checked."""
    parsed = [payload["text"]] + [
        s for block in payload["blocks"]
        for s in strings({k: v for k, v in block.items() if k != "elements"}
                         if block["type"] == "actions" else block)
        if not s.startswith("{")]  # a JSON button value (accessory)
    for text in parsed:
        for mention in MENTIONS:
            assert mention not in text, (mention, text)
        for word in BROADCAST:
            assert word not in text.lower(), (word, text)


def hostile_recovery() -> Recovery:
    candidate = Candidate(url="https://evil.example/x<!channel>|<@U0ADMIN><http://x|y>",
                          title="@here click <!channel> <http://x|y>", kind="moved",
                          confidence=0.9, evidence="@channel urgent <!everyone> @Everyone")
    return Recovery(url="https://dead.example/page?<@U0ADMIN>", answer="moved",
                    candidates=[candidate], reason="<!here> @here")


def test_fallback_text_is_escaped_for_recovery_answers_and_errors() -> None:
    payload = blocks.recovery_blocks(hostile_recovery())
    validate_message(payload)
    assert_no_mentions(payload)
    assert payload["text"] == ("https://dead.example/page?&lt;@U0ADMIN&gt;: moved → "
                               "https://evil.example/x&lt;!channel&gt;|&lt;@U0ADMIN&gt;"
                               "&lt;http://x|y&gt;")
    for error in (blocks.error_blocks("refused to fetch <!channel> <@U0ADMIN> <http://x|y>",
                                      "refused_address"),
                  blocks.error_blocks(HOSTILE + " @here", "usage")):
        validate_message(error)
        assert_no_mentions(error)
        assert "&lt;!channel&gt;" in error["text"]
    memento = Memento(original_url="https://dead.example/", datetime=datetime(2020, 1, 1,
                      tzinfo=UTC), memento_url="https://archive.example/web/2020/x",
                      raw_url="https://archive.example/web/2020id_/x", archive="ia<!here>",
                      document=Document(url="https://dead.example/", title="@channel <!here>",
                                        text="@channel @HERE please log in #general"))
    for payload in (blocks.memento_blocks("https://dead.example/<!channel>", memento),
                    blocks.check_blocks(CheckResult(url="https://x.example/<!here>",
                                                    verdict="dead", reason="@here <!channel>"))):
        validate_message(payload)
        assert_no_mentions(payload)


def test_fallback_text_stays_within_the_limit_once_escaped() -> None:
    payload = blocks.message([blocks.section("x")], "<" * 5000)
    validate_message(payload)
    assert len(payload["text"]) <= blocks.MESSAGE_TEXT and "<" not in payload["text"]
    # Only whole entities, then the ellipsis: no "&l" left where the clip fell.
    assert payload["text"].replace("&lt;", "") == "…"
    assert len(payload["text"]) > blocks.MESSAGE_TEXT - 5


def test_broadcast_words_are_neutralised_and_mrkdwn_is_verbatim() -> None:
    assert blocks.escape("@channel @here @everyone") == (
        "@\u2060channel @\u2060here @\u2060everyone")
    assert blocks.escape("mail a@channels.example or @heretic") == (
        "mail a@channels.example or @heretic")  # only the whole words
    payload = blocks.recovery_blocks(recovery(2))
    texts = [b["text"] for b in payload["blocks"] if b["type"] == "section" and "text" in b]
    texts += [e for b in payload["blocks"] if b["type"] == "context" for e in b["elements"]]
    assert texts and all(t["verbatim"] is True for t in texts if t["type"] == "mrkdwn")
    # Our own explicit mention (who picked) still works: it is markup, not parsed text.
    picked = blocks.pick_confirmation("U123", "https://a.example/", "https://b.example/", False)
    assert picked["blocks"][0]["elements"][0]["text"].startswith("<@U123> picked")
