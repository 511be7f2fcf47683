"""Lexical signatures of real pages (Klein & Nelson): LS5/LS7, KLD and URL terms."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pagetrail.tools.content.document import parse_document
from pagetrail.tools.content.signature import document_tokens, extract_signature
from pagetrail.tools.content.terms import WordfreqBackground
from pagetrail.tools.content.text import stopwords, tokenize
from pagetrail.tools.models import Document

PAGES = Path(__file__).parent / "fixtures" / "pages"
INDEX = [json.loads(line) for line in (PAGES / "index.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module", params=[row["id"] for row in INDEX])
def document(request) -> Document:
    row = next(r for r in INDEX if r["id"] == request.param)
    html = gzip.decompress((PAGES / f"{row['id']}.html.gz").read_bytes())
    return parse_document(html, row["url"])


def test_signature_terms_come_from_page_and_are_not_stop_words(document):
    signature = extract_signature(document)
    page_words = set(tokenize(document.title + " " + document.text, document.lang))
    stop = stopwords(document.lang) | stopwords("en")
    assert len(signature.ls7) == 7
    for term in signature.ls7:
        assert term in page_words
        assert term not in stop
        assert not term.isdigit()
    assert [t.term for t in signature.kld_terms[:5]]
    assert all(t.term in page_words for t in signature.kld_terms)


def test_ls5_is_prefix_of_ls7_and_terms_ordered(document):
    signature = extract_signature(document)
    assert signature.ls5 == signature.ls7[:5]
    assert signature.ls7 == [t.term for t in signature.terms[:7]]
    scores = [t.score for t in signature.terms]
    assert scores == sorted(scores, reverse=True)


def test_signature_of_known_pages_is_topical():
    row = next(r for r in INDEX if r["id"] == "tf-8f470b6ae7")
    html = gzip.decompress((PAGES / f"{row['id']}.html.gz").read_bytes())
    signature = extract_signature(parse_document(html, row["url"]))
    assert "cdpath" in signature.ls5
    assert signature.title == "CDPATH replacements"
    assert "cdpath" in signature.url_terms


def test_german_page_gets_german_background():
    row = next(r for r in INDEX if r["id"] == "tf-19f9f175fc")
    html = gzip.decompress((PAGES / f"{row['id']}.html.gz").read_bytes())
    document = parse_document(html, row["url"])
    signature = extract_signature(document)
    assert signature.lang == "de"
    assert set(tokenize(document.title, "de")) & set(signature.ls7)
    assert not set(signature.ls7) & (stopwords("de") | {"wir", "ich", "uns"})
    assert "bun" not in signature.url_terms  # 'bunten' is a German word, not 'bun ten'
    assert {"schablonen", "malerrolle"} <= set(signature.url_terms)


def test_idf_shapes_the_ranking():
    # Every term equally frequent: TF alone cannot separate them, IDF must.
    doc = Document(url="https://e.example/p", lang="en",
                   text="zzyzx photovoltaic panel " * 3)
    signature = extract_signature(doc, WordfreqBackground("en"))
    assert signature.ls5[0] == "zzyzx"
    assert signature.ls5 == ["zzyzx", "photovoltaic", "panel"]


def test_short_page_uses_description():
    doc = Document(url="https://e.example/p", lang="en", title="Heat pumps",
                   description="Grants for heat pump installations announced", text="Menu")
    assert "grants" in document_tokens(doc)


@pytest.mark.testbed
def test_cli_signature_and_tags(tiny_world, testbed_env, capsys):
    from pagetrail.cli.main import main

    assert main(["signature", tiny_world.moved_from, "--json"]) == 0
    signature = json.loads(capsys.readouterr().out)
    assert signature["title"] == tiny_world.social_title
    assert "solar" in signature["ls7"] and len(signature["ls5"]) == 5
    assert main(["tags", tiny_world.moved_from]) == 0
    assert "solar  (hn)" in capsys.readouterr().out
