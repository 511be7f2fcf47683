"""Term extraction: smoothed TF, TF-IDF, KLD, frequency, URL terms, background models,
and anchor-text quality (stop anchors, named entities, the one-common-word rule)."""

from __future__ import annotations

import math

import pytest

from pagetrail.tools.content.terms import (
    WordfreqBackground,
    frequency_terms,
    kld_terms,
    normalized_tf,
    tfidf_terms,
    url_terms,
    url_words,
)
from pagetrail.tools.evidence.anchor import anchor_info, is_named_entity, is_stop_anchor


class TableBackground:
    """A hand-made reference collection: N documents, given dfs and probabilities."""

    lang = "en"

    def __init__(self, n_docs: float, dfs: dict[str, float], probs: dict[str, float]):
        self.n_docs, self.dfs, self.probs = n_docs, dfs, probs

    def df(self, term: str) -> float:
        return self.dfs.get(term, 0.0)

    def prob(self, term: str) -> float:
        return self.probs.get(term, 1e-6)


def test_normalized_tf_formula():
    # tf: solar 4 (max), farm 2, boom 1 → 0.4 + 0.6·tf/4
    tf = normalized_tf({"solar": 4, "farm": 2, "boom": 1})
    assert tf == pytest.approx({"solar": 1.0, "farm": 0.7, "boom": 0.55})
    assert normalized_tf({}) == {}


def test_tfidf_hand_computed():
    bg = TableBackground(99, {"solar": 9, "farm": 0, "boom": 49}, {})
    terms = tfidf_terms(["solar"] * 4 + ["farm"] * 2 + ["boom"], bg)
    scores = {t.term: t.score for t in terms}
    # idf = ln((N+1)/(df+1)): solar ln(10), farm ln(100), boom ln(2)
    assert scores["solar"] == pytest.approx(1.0 * math.log(10), abs=1e-5)
    assert scores["farm"] == pytest.approx(0.7 * math.log(100), abs=1e-5)
    assert scores["boom"] == pytest.approx(0.55 * math.log(2), abs=1e-5)
    assert [t.term for t in terms] == ["farm", "solar", "boom"]


def test_kld_hand_computed():
    # p_doc: a 0.5, b 0.25, c 0.25 ; p_bg: a 0.5, b 0.01, c 0.25
    bg = TableBackground(1, {}, {"a": 0.5, "b": 0.01, "c": 0.25})
    terms = kld_terms(["a", "a", "b", "c"], bg)
    scores = {t.term: t.score for t in terms}
    assert scores["a"] == pytest.approx(0.0, abs=1e-9)
    assert scores["b"] == pytest.approx(0.25 * math.log(25), abs=1e-5)
    assert scores["c"] == pytest.approx(0.0, abs=1e-9)
    assert terms[0].term == "b"


def test_frequency_terms_ties_by_first_occurrence():
    terms = frequency_terms(["x", "y", "y", "z", "x", "w"])
    assert [t.term for t in terms] == ["x", "y", "z", "w"]
    assert [t.score for t in terms] == [2, 2, 1, 1]


def test_wordfreq_background_orders_common_to_rare():
    bg = WordfreqBackground("en")
    assert bg.df("the") > bg.df("solar") > bg.df("photovoltaic") > bg.df("xqzzyplonk")
    assert bg.df("the") == pytest.approx(bg.n_docs, rel=1e-3)
    assert bg.prob("xqzzyplonk") > 0
    assert WordfreqBackground("xx").lang == "en"  # unknown language → English


# --- URL terms ------------------------------------------------------------------------------

def test_url_terms_news_slug():
    url = "https://www.example-news.com/2019/06/solar-farms-double-in-a-year.html"
    words = url_words(url)
    assert words[:3] == ["solar", "farms", "double"]
    assert not {"2019", "06", "html", "in", "a"} & set(words)
    assert {t.term for t in url_terms(url)} == {"solar", "farms", "double"}


def test_url_terms_pep():
    terms = [t.term for t in url_terms("https://www.python.org/dev/peps/pep-0008/")]
    assert "pep" in terms and "0008" not in terms
    assert "dev" not in terms[:1]  # a common URL word never outranks the topic


def test_url_terms_concatenated_camel_and_ids():
    assert url_words("https://x.example/solarfarms/pythonProgramming") == [
        "solar", "farms", "python", "programming"]
    # Unknown names are not cut into pieces; ids, hex and numbers go.
    words = url_words("https://x.example/stunnel_rsync/a1b2c3d4e5/14848164/deadbeef99")
    assert words == ["stunnel", "rsync"]


def test_url_terms_common_url_words_rank_last():
    terms = [t.term for t in url_terms("https://x.example/news/article/heat-pump-grants/index.php")]
    assert set(terms[:3]) == {"heat", "pump", "grants"}
    assert terms.index("news") > 2 and "index" not in terms[:3]


# --- anchors --------------------------------------------------------------------------------

@pytest.mark.parametrize(("anchor", "lang"), [
    ("click here", "en"), ("Here", "en"), ("read more »", "en"), ("mehr", "de"),
    ("Hier klicken", "de"), ("lire la suite", "fr"), ("https://www.example.com/page", "en"),
    ("www.example.com", "en"), ("2019", "en"), ("", "en"), ("  ", "en"),
])
def test_stop_anchors(anchor, lang):
    info = anchor_info(anchor, lang)
    assert info.is_stop_anchor and not info.usable_alone and info.terms == []


def test_one_common_word_is_not_usable_alone():
    info = anchor_info("solar", "en")
    assert not info.is_stop_anchor and info.terms == ["solar"]
    assert info.named_entities == [] and not info.usable_alone


def test_named_entity_makes_one_word_usable():
    info = anchor_info("CDPATH", "en")
    assert info.named_entities == ["CDPATH"] and info.usable_alone
    assert anchor_info("Schwarzenmatt", "de").usable_alone


def test_several_terms_are_usable():
    info = anchor_info("solar farm boom", "en")
    assert info.terms == ["solar", "farm", "boom"] and info.usable_alone
    assert not is_stop_anchor("solar farm boom")


def test_named_entity_heuristic():
    assert is_named_entity("iPhone") and is_named_entity("Stunnel") and is_named_entity("MP3")
    assert not is_named_entity("1984") and not is_named_entity("water")
    assert not is_named_entity("the")
