"""Document extraction on real pages (tests/fixtures/pages, from shared/data/pages) and
on hostile HTML."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from pagetrail.tools.content.document import (
    MAX_HTML_BYTES,
    decode_html,
    link_context,
    looks_like_error_page,
    main_text,
    parse_document,
    split_title,
)
from pagetrail.tools.models import Document

PAGES = Path(__file__).parent / "fixtures" / "pages"
INDEX = {row["id"]: row for row in map(json.loads, (PAGES / "index.jsonl").read_text().splitlines())}


def page(page_id: str) -> tuple[bytes, str]:
    return gzip.decompress((PAGES / f"{page_id}.html.gz").read_bytes()), INDEX[page_id]["url"]


@pytest.fixture(scope="module")
def docs() -> dict[str, Document]:
    return {pid: parse_document(*page(pid)) for pid in INDEX}


# --- titles -------------------------------------------------------------------------------

def test_title_site_suffix_split_by_host_name(docs):
    doc = docs["tf-8f470b6ae7"]  # "CDPATH replacements - anarcat" on anarc.at
    assert doc.title == "CDPATH replacements"
    assert doc.site_name == "anarcat"
    assert doc.raw_title == "CDPATH replacements - anarcat"


def test_title_site_prefix_and_crumbs_split(docs):
    doc = docs["tf-ff3b3fce89"]  # "Four Years Remaining » Blog Archive » Interning of …"
    assert doc.title == "Interning of Small Integers in Python"
    assert doc.site_name == "Four Years Remaining"


def test_title_split_by_og_site_name(docs):
    doc = docs["aeb-05844573ca"]
    assert doc.title == "New SUVs and electric vehicles highlight L.A. Auto Show"
    assert doc.site_name == "Connecticut Post"


def test_split_title_separators_and_no_evidence():
    assert split_title("Article – Site Name", site_name="Site Name") == ("Article", "Site Name")
    assert split_title("Site Name | Article", site_name="Site Name") == ("Article", "Site Name")
    assert split_title("Example News: Solar farms", url="https://example-news.com/x") == (
        "Solar farms", "Example News")
    # No evidence which part is the site: keep the title whole (a colon is not a separator).
    whole = "Opinion | Republicans Are Following Trump to Nowhere"
    assert split_title(whole, url="https://www.nytimes.com/x") == (whole, "")
    assert split_title("Rsync: a guide", url="https://netbits.us/x")[0] == "Rsync: a guide"


# --- text, meta, language ---------------------------------------------------------------

def test_main_text_present_and_free_of_navigation(docs):
    doc = docs["aeb-05844573ca"]
    assert len(doc.text.split()) > 300
    assert "electric" in doc.text
    nav_anchors = [link.anchor for link in doc.links if link.anchor in ("Newsletters",
                                                                       "Digital edition")]
    assert nav_anchors, "fixture should have navigation links"
    for anchor in nav_anchors:
        assert anchor not in doc.text


def test_script_text_never_in_document():
    html = b"<html><body><p>Visible words here.</p><script>var secretword = 1;</script>" \
           b"<style>.x{color:red}</style></body></html>"
    doc = parse_document(html, "https://example.org/")
    assert "secretword" not in doc.text and "color" not in doc.text
    assert "Visible words" in doc.text


@pytest.mark.parametrize(("page_id", "lang"), [
    ("tf-8f470b6ae7", "en"), ("aeb-05844573ca", "en"), ("tf-19f9f175fc", "de"),
    ("tf-f35f16861c", "de"),
])
def test_language(docs, page_id, lang):
    assert docs[page_id].lang == lang


def test_meta_keywords_canonical_og(docs):
    doc = docs["tf-19f9f175fc"]
    assert "Minions" in doc.keywords
    assert doc.canonical and doc.canonical.startswith("http://papaganda.org/2016/04/02/")
    assert doc.og.get("og:site_name") == "Papaganda"


def test_meta_charset_latin1_decoded():
    html = '<html><head><meta charset="iso-8859-1"><title>Größe - Übersicht</title></head>' \
           '<body><p>Die Größe der Äpfel ist überall gleich groß.</p></body></html>'
    doc = parse_document(html.encode("latin-1"), "https://beispiel.de/x")
    assert doc.raw_title == "Größe - Übersicht"
    assert "Äpfel" in doc.text


# --- links --------------------------------------------------------------------------------

def test_links_resolved_with_anchor_and_block_context():
    html = b"""<html><body><div><ul><li>First item</li></ul>
      <p>Intro sentence. This is a good overview of the <a href="/energy/solar">solar farm
      boom</a> in the midwest, written last year.</p>
      <p>Another paragraph that must not leak into the context.</p>
      <a href="javascript:alert(1)">js</a> <a href="mailto:a@b.c">mail</a> <a href="#top">top</a>
      </div></body></html>"""
    doc = parse_document(html, "https://blog.example.org/post")
    assert [link.url for link in doc.links] == ["https://blog.example.org/energy/solar"]
    link = doc.links[0]
    assert link.anchor == "solar farm boom"
    assert "good overview of the solar farm boom in the midwest" in link.context
    assert "Another paragraph" not in link.context and "First item" not in link.context


def test_context_window_limits_words():
    words = " ".join(f"w{i}" for i in range(100))
    html = f"<p>{words} <a href='https://t.example/x'>target</a> {words}</p>"
    doc = parse_document(html, "https://example.org/", context_words=5)
    assert doc.links[0].context == "w95 w96 w97 w98 w99 target w0 w1 w2 w3 w4"


def test_links_of_real_page_have_context(docs):
    doc = docs["tf-19f9f175fc"]
    tag_links = [link for link in doc.links if "/tag/minions/" in link.url]
    assert tag_links and tag_links[0].anchor == "Minions"
    assert "Schablonen" in tag_links[0].context


def test_link_context_finds_target_in_real_page():
    html, url = page("tf-8f470b6ae7")
    link = link_context(html, "https://github.com/rupa/z", page_url=url)
    assert link is not None
    assert link.anchor == "home page"
    assert link_context(html, "https://nowhere.example/", page_url=url) is None


# --- error pages ----------------------------------------------------------------------------

def test_error_page_detection():
    notfound = parse_document(b"<title>Page not found - Site</title><p>Sorry.</p>",
                              "https://s.example/x")
    german = parse_document("<title>Fehler</title><p>Die Seite wurde nicht gefunden.</p>",
                            "https://s.example/y")
    assert looks_like_error_page(notfound) and looks_like_error_page(german)


@pytest.mark.parametrize(("title", "error"), [
    ("404", True), ("404 | Example News", True), ("Oops – 410", True), ("Page 404", True),
    ("Example - 404 Not Found", True), ("HTTP 410 error", True),
    ("PEP 404 – Python 2.8 Un-release Schedule", False), ("Peugeot 404 for sale", False),
    ("Route 410: a road trip through the valley", False),
])
def test_an_error_code_is_a_whole_title_segment_not_a_number_in_a_name(title, error):
    from pagetrail.tools.content.document import title_says_error
    from pagetrail.tools.ranking.rank import error_page_reason

    assert title_says_error(title) is error
    body = "".join(f"<p>Paragraph {i} of a page about the schedule and its history.</p>"
                   for i in range(40))
    page = parse_document(f"<title>{title}</title><article>{body}</article>",
                          "https://s.example/z")
    assert looks_like_error_page(page) is error
    assert (error_page_reason(page) == "error_page") is error


def test_real_article_is_not_error_page(docs):
    assert not any(looks_like_error_page(doc) for doc in docs.values())


# --- hostile input ------------------------------------------------------------------------

def test_huge_document_is_capped_and_fast():
    paragraph = b"<p>" + b"lorem ipsum dolor sit amet " * 40 + b"</p>\n"
    html = b"<html><head><title>Big</title></head><body>" + paragraph * 20000 + b"</body></html>"
    assert len(html) > 2 * MAX_HTML_BYTES
    started = time.monotonic()
    doc = parse_document(html, "https://big.example/")
    assert time.monotonic() - started < 30
    assert doc.title == "Big"
    assert len(doc.text) <= 200_000


def test_deeply_nested_document():
    html = b"<html><body>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000 + \
           b"<p>tail <a href='/x'>link</a></p></body></html>"
    doc = parse_document(html, "https://deep.example/")
    assert isinstance(doc, Document)


def test_invalid_utf8_and_control_bytes():
    html = b"<html><head><title>Caf\xe9 \xff\xfe broken</title></head><body>\x00\x01<p>Text " \
           b"with bad \xc3\x28 bytes and <a href='/a'>a link</a>.</p></body></html>"
    doc = parse_document(html, "https://bad.example/", content_type="text/html; charset=utf-8")
    assert "broken" in doc.raw_title
    assert doc.links and doc.links[0].url == "https://bad.example/a"


@pytest.mark.parametrize("junk", [b"", b"\x00\x00\x00", b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
                                  "<<<>>><a href=", b"<html>"])
def test_junk_input_gives_empty_document(junk):
    doc = parse_document(junk, "https://junk.example/")
    assert doc.url == "https://junk.example/"


def test_archived_and_live_pages_decode_alike():
    """decode_html (archived captures) and the Fetcher (Response.charset) share one charset
    decision, in the WHATWG order: a BOM beats the header, the header beats <meta>."""
    from pagetrail.tools.net.fetch import detect_charset

    bom = b"\xef\xbb\xbf<p>caf\xc3\xa9</p>"
    assert detect_charset("text/html; charset=iso-8859-1", bom, "text/html") == "utf-8"
    assert decode_html(bom, "text/html; charset=iso-8859-1") == "<p>café</p>"
    labelled = b'<meta charset="utf-8"><p>caf\xe9</p>'
    assert detect_charset("text/html; charset=latin-1", labelled, "text/html") == "iso8859-1"
    assert decode_html(labelled, "text/html; charset=latin-1").endswith("<p>café</p>")


def test_decode_html_prefers_declared_charset():
    assert decode_html("Größe".encode("cp1252"), "text/html; charset=windows-1252") == "Größe"
    assert decode_html("Größe".encode()) == "Größe"
    assert decode_html(b"\xef\xbb\xbfhi") == "hi"


def test_main_text_does_not_depend_on_earlier_pages():
    """The same article seen on several pages keeps its text on every extraction (no
    process-wide deduplication: similarities must not depend on what was parsed before)."""
    paragraphs = "".join(
        f"<p>Paragraph {i} of the quoted article says something long enough to be kept by "
        f"the extractor, about solar farms and their output in the midwest.</p>"
        for i in range(8))
    page = f"<html><head><title>Solar</title></head><body><article>{paragraphs}</article></body></html>"
    texts = [main_text(page, f"https://news.example/copy-{i}") for i in range(5)]
    assert texts[0] and "Paragraph 7" in texts[0]
    assert all(text == texts[0] for text in texts)


def test_parse_without_links_keeps_everything_else(docs):
    for page_id in list(INDEX)[:6]:
        html, url = page(page_id)
        lean = parse_document(html, url, links=False)
        assert lean.links == [] and docs[page_id].links
        assert lean.model_dump(exclude={"links"}) == docs[page_id].model_dump(exclude={"links"})


@pytest.mark.parametrize("html", [
    b"<html><body><nav><a href='/a'>Home</a></nav><p>Only a few words.</p></body></html>",
    b"\x00\xff<<<not html at all>>>\xfe",
    b"",
    b"<a href='javascript:alert(1)'>x</a>" * 200,
])
def test_parse_without_links_on_thin_or_hostile_pages(html, monkeypatch):
    """Junk never raises, and when the extractor finds nothing the fallback (visible words
    outside navigation chrome) is the same with or without links."""
    for extractor_finds_nothing in (False, True):
        if extractor_finds_nothing:
            monkeypatch.setattr("pagetrail.tools.content.document.main_text", lambda *_a, **_k: "")
        full = parse_document(html, "https://example.org/p")
        lean = parse_document(html, "https://example.org/p", links=False)
        assert lean.links == []
        assert lean.model_dump(exclude={"links"}) == full.model_dump(exclude={"links"})
    if html.startswith(b"<html>"):
        assert lean.text == "Only a few words."  # the <nav> link is chrome, left out
