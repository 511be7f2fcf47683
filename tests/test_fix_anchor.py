"""`pagetrail fix` asks each recovery with the link's anchor text and the words a reader reads
around it: each format's extractor says what the link's text is (Markdown, HTML, reST,
AsciiDoc; none for a bare URL), the context has no markup and no URL, a hostile anchor is
bounded and clean, the recovery jobs carry the anchor, and a rerun asks the same jobs (an
interrupted run resumes)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.fix.run import _recover_items, fix_paths
from pagetrail.tools.fix.spans import ANCHOR_CHARS, CONTEXT_CHARS, LinkSpan
from pagetrail.tools.models import Recovery
from pagetrail.tools.workers.jobs import job_key

PICKLE = "https://docs.python.org/3/library/pickle.html#data-stream-format"
# What no context may hold: markup of any of the formats, and URLs.
MARKUP = ("<", ">", "href", "](", "][", "`", "_`", "`_", "link:", "[", "]", "&amp;", "://")


def links(text: str, fmt: str) -> dict[str, LinkSpan]:
    return {span.url: span for span in extract_links(text, fmt)}


def anchors(text: str, fmt: str) -> dict[str, str]:
    return {url: span.anchor for url, span in links(text, fmt).items()}


def assert_reader_text(context: str, *words: str) -> None:
    assert context, "no context"
    for mark in MARKUP:
        assert mark not in context, (mark, context)
    for word in words:
        assert word in context, (word, context)
    assert len(context) <= CONTEXT_CHARS and context == " ".join(context.split())


# ------------------------------------------------------------------ anchors, per format


MARKDOWN = """# Guide

Read [the *guide*](https://a.example/guide "A title") and [`pip` &amp; you](https://b.example/pip).
Old FAQ: <https://c.example/faq>. Notes: [the release notes][notes], see https://d.example/bare.
[![Project logo](https://img.example/logo.png)](https://e.example/home) and
<a href="https://f.example/raw">raw <b>HTML</b> link</a> here.

<div><p>A block: <a href="https://g.example/block">the block link</a>.</p></div>

[notes]: https://h.example/notes
[unused]: https://i.example/unused
"""


def test_markdown_anchor_of_each_link_form():
    assert anchors(MARKDOWN, "markdown") == {
        "https://a.example/guide": "the guide",  # emphasis is markup, the title is not text
        "https://b.example/pip": "pip & you",  # code's text, an entity decoded
        "https://c.example/faq": "",  # an autolink's text is its URL: no anchor
        "https://d.example/bare": "",
        "https://e.example/home": "Project logo",  # an image's alt text
        "https://f.example/raw": "raw HTML link",
        "https://g.example/block": "the block link",
        "https://h.example/notes": "the release notes",  # the definition: its use's text
        "https://i.example/unused": "",  # a definition nothing uses
    }


def test_markdown_a_definition_takes_its_first_use_and_each_link_its_own_text():
    text = ("First [the spec][s] then [another name][s].\n\n"
            "[same](https://x.example/a) and [different](https://x.example/a).\n\n"
            "[s]: https://s.example/spec\n")
    spans = extract_links(text, "markdown")
    assert [(s.url, s.anchor) for s in spans] == [
        ("https://x.example/a", "same"), ("https://x.example/a", "different"),
        ("https://s.example/spec", "the spec")]


HTML = ('<!DOCTYPE html>\n<html><body>\n'
        f'<p>Interesting: <a class="x" href="{PICKLE}">Pickle\n   protocol <b>version</b></a>'
        ' &mdash; the format of the stream, <a href="https://a.example/">https://a.example/</a>.'
        '</p>\n'
        '<p><a href="https://b.example/logo"><img src="l.png" alt="The &quot;B&quot; logo">'
        '</a> <a href="https://c.example/">caf&eacute; &amp; <i>bar</i>'
        '<script>var x = "no";</script></a></p>\n</body></html>\n')


def test_html_anchor_is_the_elements_text():
    assert anchors(HTML, "html") == {
        PICKLE: "Pickle protocol version",  # whitespace collapsed, nested tags read through
        "https://a.example/": "",  # its text is its URL
        "https://b.example/logo": 'The "B" logo',  # an image's alt, entities decoded
        "https://c.example/": "café & bar",  # a script's text is no text
    }


RST = """Notes
=====

See `the setup guide <https://a.example/setup>`_ and https://b.example/gone for more.
Also read `Python docs`_ for *details*, and the `release notes`__.

.. _Python docs: https://docs.example/py
__ https://c.example/anon

.. _unused: https://d.example/unused
"""


def test_rst_anchor_of_each_link_form():
    assert anchors(RST, "rst") == {
        "https://a.example/setup": "the setup guide",
        "https://b.example/gone": "",
        "https://docs.example/py": "Python docs",  # the target: its reference's text
        "https://c.example/anon": "release notes",  # an anonymous target, likewise
        "https://d.example/unused": "",  # a target nothing refers to
    }


ASCIIDOC = """= Manual

Set up https://a.example/srv[the *server*] and link:https://b.example/bench[benchmarks^],
link:https://c.example/x["Hello, world",window=_blank] and https://d.example/bare.
See <https://e.example/angled> and https://f.example/empty[] and
https://g.example/esc[a \\] b] and https://h.example/attrs[window=_blank].
"""


def test_asciidoc_anchor_of_each_link_form():
    assert anchors(ASCIIDOC, "asciidoc") == {
        "https://a.example/srv": "the server",
        "https://b.example/bench": "benchmarks",  # `^` (a new window) is no text
        "https://c.example/x": "Hello, world",  # the first positional attribute
        "https://d.example/bare": "",
        "https://e.example/angled": "",
        "https://f.example/empty": "",  # Asciidoctor shows the URL
        "https://g.example/esc": "a b",
        "https://h.example/attrs": "",  # only named attributes
    }


def test_plain_text_has_no_anchors():
    assert anchors("see https://a.example/x (and https://b.example/y).\n", "text") == {
        "https://a.example/x": "", "https://b.example/y": ""}


# ------------------------------------------------------------------ contexts


def test_html_context_is_the_text_a_reader_reads():
    span = links(HTML, "html")[PICKLE]
    assert_reader_text(span.context, "Interesting:", "Pickle protocol version",
                       "the format of the stream")
    assert "class" not in span.context and "mdash" not in span.context
    assert "—" in span.context  # the entity decoded
    logo = links(HTML, "html")["https://c.example/"]
    assert_reader_text(logo.context, "café & bar")
    assert "var x" not in logo.context


def test_markdown_context_is_the_text_a_reader_reads():
    spans = links(MARKDOWN, "markdown")
    assert_reader_text(spans["https://a.example/guide"].context,
                       "Read the guide", "and pip & you")
    assert_reader_text(spans["https://d.example/bare"].context, "Notes: the release notes")
    assert_reader_text(spans["https://f.example/raw"].context, "raw HTML link here")
    # Another paragraph is not this link's: a blank line ends the context.
    assert "block" not in spans["https://a.example/guide"].context
    assert_reader_text(spans["https://g.example/block"].context, "A block: the block link")
    # A definition's context is the sentence that uses it, not its own line.
    assert_reader_text(spans["https://h.example/notes"].context,
                       "Notes: the release notes, see")


def test_rst_and_asciidoc_contexts_are_the_text_a_reader_reads():
    spans = links(RST, "rst")
    assert_reader_text(spans["https://a.example/setup"].context,
                       "See the setup guide and", "for more")
    assert_reader_text(spans["https://docs.example/py"].context,
                       "Also read Python docs for details")  # the use's sentence
    spans = links(ASCIIDOC, "asciidoc")
    assert_reader_text(spans["https://a.example/srv"].context, "Set up the server and")
    assert "window" not in spans["https://c.example/x"].context


def test_context_of_a_bare_url_in_text_drops_its_brackets_and_keeps_its_words():
    span = links("We moved (https://a.example/x) last year, see https://b.example/.\n",
                 "text")["https://a.example/x"]
    assert span.context == "We moved last year, see ."


def test_context_is_bounded_and_read_around_the_link():
    words = " ".join(f"w{i}" for i in range(400))
    text = f"{words} [the link](https://a.example/x) {words}\n"
    context = links(text, "markdown")["https://a.example/x"].context
    assert len(context) <= CONTEXT_CHARS
    assert "w399 the link w0 w1" in context  # the words right before and after it


# ------------------------------------------------------------------ hostile anchors


def test_a_hostile_anchor_is_bounded_and_clean():
    long = "word " * 10_000
    control = "evil\x00\x1b[31mred\u202egnp.exe\u200b"
    nested = "<b>deep <i>nested <span>tags</span></i></b>" * 3
    text = ('<p><a href="https://a.example/long">' + long + '</a>'
            f'<a href="https://b.example/ctl">{control}</a>'
            f'<a href="https://c.example/nest">{nested}</a>'
            '<a href="https://d.example/open">never closed ' + "x" * 100_000 + "</p>\n")
    found = anchors(text, "html")
    assert all(len(anchor) <= ANCHOR_CHARS for anchor in found.values())
    assert found["https://a.example/long"].startswith("word word")
    assert found["https://b.example/ctl"] == "evil [31mredgnp.exe"
    assert found["https://c.example/nest"] == "deep nested tagsdeep nested tagsdeep nested tags"
    assert found["https://d.example/open"] == "never closed"  # the run of x: one long word
    for anchor in found.values():
        assert anchor.isprintable() and anchor == anchor.strip()
    md = "[" + "a " * 5_000 + "\x07](https://e.example/md)\n"
    assert len(anchors(md, "markdown")["https://e.example/md"]) <= ANCHOR_CHARS


def test_an_asciidoc_label_is_looked_for_a_bounded_way():
    # A `]` farther than a long title's length is no label's end: never looked for, so a
    # line of thousands of `URL[` never closed is not read again for each of its URLs.
    far = "https://a.example/x[" + "word " * 1000 + "] tail\n"
    assert anchors(far, "asciidoc") == {"https://a.example/x": ""}
    line = " ".join(f"https://a.example/{i}[" + "label " * 50 for i in range(2_000))
    started = time.process_time()
    spans = extract_links(line + "\n", "asciidoc")
    assert time.process_time() - started < 10
    assert len(spans) == 2_000 and all(span.anchor == "" for span in spans)


# ------------------------------------------------------------------ the recovery jobs


def test_recover_items_carry_the_anchor_when_there_is_one():
    from pagetrail.tools.fix.run import Wanted

    when = datetime(2019, 6, 1, tzinfo=UTC)
    items = _recover_items({"https://a.example/": Wanted(when, "words around", "the text"),
                            "https://b.example/": Wanted(when, "bare", "")})
    assert items == [
        {"url": "https://a.example/", "date": when.isoformat(), "context": "words around",
         "anchor": "the text"},
        {"url": "https://b.example/", "date": when.isoformat(), "context": "bare"}]


def test_one_anchor_per_url_chosen_by_date_then_order():
    from pagetrail.tools.fix.run import Wanted, want

    def span(anchor: str, context: str) -> LinkSpan:
        return LinkSpan(0, 1, "https://a.example/", 1, "inline", context, anchor=anchor)

    early, late = datetime(2018, 1, 1, tzinfo=UTC), datetime(2020, 1, 1, tzinfo=UTC)
    wanted: dict[str, Wanted] = {}
    want(wanted, span("", "a bare mention"), late)
    want(wanted, span("first text", "later"), late)
    want(wanted, span("second text", "later still"), late)
    assert wanted["https://a.example/"] == Wanted(late, "a bare mention", "first text")
    want(wanted, span("", "the earliest"), early)  # the earliest has none: the first met
    assert wanted["https://a.example/"] == Wanted(early, "the earliest", "first text")
    want(wanted, span("its own", "earlier yet"), datetime(2017, 1, 1, tzinfo=UTC))
    assert wanted["https://a.example/"].anchor == "its own"


def _tree(root: Path) -> None:
    root.mkdir()
    (root / "a.md").write_text(
        "Read [the old guide](https://dead.example/guide) and "
        "[the notes](https://dead.example/notes).\n")
    (root / "b.html").write_text(
        '<p>See <a href="https://dead.example/guide">Guide, second name</a> and '
        '<a href="https://dead.example/page">a <b>page</b></a>.</p>\n')
    (root / "c.rst").write_text("Also `the spec <https://dead.example/spec>`_ here.\n")
    (root / "d.adoc").write_text("Set up https://dead.example/setup[the server].\n")
    (root / "e.txt").write_text("Plain https://dead.example/plain mention.\n")


@pytest.fixture
def recoveries(monkeypatch) -> list[dict[str, Any]]:
    """Each recovery asked (through the real jobs and store), answered with no answer."""
    asked: list[dict[str, Any]] = []

    async def recover_link(url: str, **kwargs: Any) -> Recovery:
        asked.append({"url": url, **kwargs})
        return Recovery(url=url, answer="none", reason="a fake recovery")

    # pagetrail.tools.api binds route's recover_link when it is first imported: patched (and
    # so imported) first, with the real one, so the undo puts the real one back for the
    # tests after this one
    monkeypatch.setattr("pagetrail.tools.api.recover_link", recover_link)
    monkeypatch.setattr("pagetrail.tools.recovery.route.recover_link", recover_link)
    return asked


def test_fix_asks_each_recovery_with_its_anchor(tmp_path, store, recoveries):
    root = tmp_path / "docs"
    _tree(root)
    report = asyncio.run(fix_paths([str(root)], store=store))
    assert report.distinct_urls == 6
    by_url = {item["url"]: item for item in recoveries}
    assert {url: item.get("anchor") for url, item in by_url.items()} == {
        "https://dead.example/guide": "the old guide",  # a.md comes first
        "https://dead.example/notes": "the notes",
        "https://dead.example/page": "a page",
        "https://dead.example/spec": "the spec",
        "https://dead.example/setup": "the server",
        "https://dead.example/plain": None,  # a bare URL: no anchor asked
    }
    for item in recoveries:
        assert "://" not in item["context"] and "<" not in item["context"]
    assert by_url["https://dead.example/page"]["context"] == (
        "See Guide, second name and a page .")


def test_a_rerun_asks_the_same_jobs_and_an_interrupted_run_resumes(tmp_path, store,
                                                                     recoveries, monkeypatch):
    from pagetrail.tools.fix import run

    root = tmp_path / "docs"
    _tree(root)
    planned: list[list[dict[str, Any]]] = []
    plan = run._recover_items

    def recorded(wanted: dict[str, run.Wanted]) -> list[dict[str, Any]]:
        planned.append(plan(wanted))
        return planned[-1]

    monkeypatch.setattr(run, "_recover_items", recorded)

    class Interrupted(Exception):
        pass

    def interrupt(done: int, total: int) -> None:
        if done >= 2:
            raise Interrupted  # the run stops after two recoveries were recorded

    with pytest.raises(Interrupted):
        asyncio.run(fix_paths([str(root)], store=store, progress=interrupt))
    recoveries.clear()
    report = asyncio.run(fix_paths([str(root)], store=store))
    first, second = ([job_key("recover", item) for item in items] for items in planned)
    assert first == second and sum("anchor" in item for item in planned[0]) == 5
    assert 2 <= report.resumed < report.distinct_urls  # what was done is read back
    # … not redone; then each link, answered "none", is asked once more (the revisit job:
    # Dispatcher.recover), the interrupted run having stopped before that second pass
    assert len(recoveries) == (report.distinct_urls - report.resumed) + report.distinct_urls
    assert {r["url"] for r in recoveries[-report.distinct_urls:]} == {
        item["url"] for item in planned[1]}
    recoveries.clear()
    again = asyncio.run(fix_paths([str(root)], store=store))
    assert again.resumed == again.distinct_urls and recoveries == []
