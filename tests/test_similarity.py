"""Text similarity measures: hand-computed values and properties on real page text."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest

from pagetrail.tools.content.similarity import (
    ReferenceModel,
    Smoothing,
    clean_title,
    collection_background,
    cosine,
    cosine_text,
    dice,
    jaccard,
    kl_divergence,
    overlap,
    profile_text,
    resemblance,
    shingle_resemblance,
    shingle_set,
    slug_tokens,
    terms,
    title_similarity,
    url_similarity,
    url_tokens,
    wordfreq_background,
)
from pagetrail.tools.content.text import content_terms
from pagetrail.tools.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures" / "rank"


def page_text(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text(encoding="utf-8").split("\n", 4)[4]


def lightly_edited(text: str, seed: int = 7, drop: float = 0.05) -> str:
    """The text with ~5 % of its words dropped and a boilerplate line added (a moved page)."""
    rnd = random.Random(seed)
    words = [w for w in text.split() if rnd.random() > drop]
    return " ".join(words) + "\nSubscribe to our newsletter. Share this story on social media."


# ---------------------------------------------------------------- vector space


def test_cosine_of_two_tiny_texts_by_hand():
    # terms: [apple, banana, apple] and [apple, cherry] → (2, 1, 0)·(1, 0, 1) = 2, |a|=√5, |b|=√2
    assert cosine_text("apple banana apple", "apple cherry") == pytest.approx(2 / math.sqrt(10))


def test_cosine_ignores_stop_words_and_numbers():
    assert cosine_text("the apple of 2019", "an apple") == pytest.approx(1.0)


def test_cosine_with_idf_weights_by_hand():
    idf = {"apple": 0.5, "banana": 2.0, "cherry": 2.0}
    # (2·.5, 1·2, 0)·(.5, 0, 2) = 0.5 ; |a| = √5, |b| = √4.25
    assert cosine_text("apple banana apple", "apple cherry", idf=idf) == pytest.approx(
        0.5 / math.sqrt(5 * 4.25))


def test_cosine_edge_cases():
    assert cosine({}, {"a": 1.0}) == 0.0
    assert cosine_text("", "") == 0.0
    assert cosine({"a": 3.0}, {"a": 1.0}) == pytest.approx(1.0)


def test_identical_texts_have_cosine_one():
    text = page_text("wework_venturebeat")
    assert cosine_text(text, text) == pytest.approx(1.0)


def test_moved_page_with_small_edits_is_above_the_validity_threshold():
    for name in ("wework_venturebeat", "titan_map", "meth_thehill"):
        text = page_text(name)
        assert cosine_text(text, lightly_edited(text)) > 0.9, name


def test_unrelated_pages_are_below_0_3():
    assert cosine_text(page_text("wework_venturebeat"), page_text("titan_map")) < 0.3
    assert cosine_text(page_text("meth_thehill"), page_text("titan_map")) < 0.3


def test_same_story_by_another_outlet_lies_between():
    same_story = cosine_text(page_text("wework_venturebeat"), page_text("wework_techcrunch"))
    unrelated = cosine_text(page_text("wework_venturebeat"), page_text("meth_njcom"))
    assert unrelated < same_story < 0.9


def test_fast_tokenizer_gives_the_shared_content_terms():
    for name in ("wework_venturebeat", "titan_map", "meth_njcom"):
        text = page_text(name)
        assert jaccard(terms(text), content_terms(text)) > 0.98, name


# ---------------------------------------------------------------- language models


def test_kld_with_jelinek_mercer_smoothing_by_hand():
    # p_ref = {a: .5, b: .5}; candidate {a: 2}, λ = .5, p_bg = .1:
    # p_c(a) = .5·1 + .5·.1 = .55, p_c(b) = .5·0 + .05 = .05
    expected = 0.5 * math.log(0.5 / 0.55) + 0.5 * math.log(0.5 / 0.05)
    kld = kl_divergence({"a": 1, "b": 1}, {"a": 2}, lambda _t: 0.1,
                        Smoothing("jelinek-mercer", lam=0.5))
    assert kld == pytest.approx(expected)
    assert kld == pytest.approx(1.1036, abs=1e-4)


def test_kld_with_dirichlet_smoothing_by_hand():
    # μ = 2, |c| = 2: p_c(a) = (2 + 2·.1)/4 = .55, p_c(b) = (0 + .2)/4 = .05
    expected = 0.5 * math.log(0.5 / 0.55) + 0.5 * math.log(0.5 / 0.05)
    kld = kl_divergence({"a": 1, "b": 1}, {"a": 2}, lambda _t: 0.1, Smoothing("dirichlet", mu=2))
    assert kld == pytest.approx(expected)


@pytest.mark.parametrize("smoothing", [Smoothing("jelinek-mercer", lam=0.2),
                                       Smoothing("dirichlet", mu=50)])
def test_kld_shortcut_equals_the_full_sum(smoothing):
    """The one-pass-over-shared-terms formula equals Σ p log(p/q) over all reference terms."""
    rnd = random.Random(3)
    vocabulary = [f"w{i}" for i in range(40)]
    ref = Counter(rnd.choices(vocabulary[:25], k=120))
    cand = Counter(rnd.choices(vocabulary[10:], k=90))
    background = {t: (i + 1) / 900 for i, t in enumerate(vocabulary)}
    length = sum(cand.values())
    full = sum(
        (c / 120) * math.log((c / 120) / smoothing.probability(cand.get(t, 0), length, background[t]))
        for t, c in ref.items())
    assert kl_divergence(ref, cand, background.__getitem__, smoothing) == pytest.approx(full)


def test_kld_is_lower_for_closer_pages_and_similarity_in_unit_range():
    reference = profile_text(page_text("wework_venturebeat"))
    model = ReferenceModel(reference.counts, wordfreq_background("en"))
    moved = profile_text(lightly_edited(page_text("wework_venturebeat")))
    related = profile_text(page_text("wework_techcrunch"))
    unrelated = profile_text(page_text("titan_map"))
    kld_moved, sim_moved = model.similarity(moved.counts)
    kld_related, sim_related = model.similarity(related.counts)
    kld_unrelated, sim_unrelated = model.similarity(unrelated.counts)
    assert kld_moved < kld_related < kld_unrelated
    assert 1.0 >= sim_moved > 0.9 > sim_related > sim_unrelated >= 0.0
    assert sim_unrelated < 0.15


def test_self_divergence_is_minus_log_one_minus_lambda():
    counts = Counter({"solar": 3, "farm": 2, "energy": 5})
    model = ReferenceModel(counts, lambda _t: 1e-6, Smoothing(lam=0.1))
    # p_c = .9·p + .1·1e-6 ≈ .9·p for every term
    assert model.divergence(counts) == pytest.approx(-math.log(0.9), abs=1e-4)


def test_smoothing_parameters_are_checked():
    with pytest.raises(ConfigError):
        Smoothing("jelinek-mercer", lam=0.0)
    with pytest.raises(ConfigError):
        Smoothing("dirichlet", mu=-1)
    with pytest.raises(ConfigError):
        Smoothing("laplace")  # type: ignore[arg-type]


def test_collection_background_is_a_distribution_with_a_floor():
    background = collection_background([{"a": 3}, {"a": 1, "b": 4}])
    assert background("a") == pytest.approx(0.5)
    assert background("b") == pytest.approx(0.5)
    assert 0 < background("unseen") < 1e-6


# ---------------------------------------------------------------- sets and shingles


def test_dice_jaccard_overlap_by_hand():
    assert dice({"a", "b"}, {"b", "c"}) == pytest.approx(0.5)
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert overlap({"a", "b"}, {"a", "b", "c", "d"}) == pytest.approx(1.0)
    assert dice([], []) == 0.0 and jaccard([], []) == 0.0 and overlap(["a"], []) == 0.0


def test_shingles_of_width_four():
    assert shingle_set(["a", "b", "c", "d", "e"]) == {("a", "b", "c", "d"), ("b", "c", "d", "e")}
    assert shingle_set(["a", "b"]) == {("a", "b")}
    a = shingle_set(list("abcdef"))  # 3 shingles
    b = shingle_set(list("abcdeg"))  # shares abcd, bcde
    assert resemblance(a, b) == pytest.approx(2 / 4)


def test_shingle_resemblance_separates_near_duplicates_from_related_pages():
    text = page_text("wework_venturebeat")
    assert shingle_resemblance(text, text) == pytest.approx(1.0)
    assert shingle_resemblance(text, lightly_edited(text)) > 0.5
    assert shingle_resemblance(text, page_text("wework_techcrunch")) < 0.1


# ---------------------------------------------------------------- titles


@pytest.mark.parametrize(("title", "site", "url", "expected"), [
    ("Solar farms double | The Guardian", "", "https://www.theguardian.com/x", "Solar farms double"),
    ("Example News - Solar farms double", "", "https://example-news.com/x", "Solar farms double"),
    ("Solar farms double – Daily Planet", "Daily Planet", "", "Solar farms double"),
    ("PEP 8 – Style Guide for Python Code | peps.python.org", "", "https://peps.python.org/pep-0008/",
     "PEP 8 Style Guide for Python Code"),
    ("Solar farms - a review", "", "https://example.org/x", "Solar farms a review"),
    ("The Guardian", "", "https://www.theguardian.com/", "The Guardian"),  # nothing else left
])
def test_clean_title_drops_site_segments_only(title, site, url, expected):
    assert clean_title(title, site, url) == expected


def test_title_similarity():
    assert title_similarity("Solar farms double | The Guardian", "Solar farms double - Guardian News",
                            url_a="https://theguardian.com/a", url_b="https://guardian.news/b") == 1.0
    assert title_similarity("Solar farms double", "Solar farms double in Texas") == pytest.approx(
        2 * 3 / (3 + 4))  # {solar, farms, double} vs {solar, farms, double, texas}
    assert title_similarity("Solar farms", "Wind turbines") == 0.0
    assert title_similarity("", "Wind turbines") == 0.0


# ---------------------------------------------------------------- URLs


def test_url_tokens_and_slug():
    assert url_tokens("https://www.python.org/dev/peps/pep-0008/") == ["dev", "peps", "pep", "8"]
    assert url_tokens("http://x.org/a/index.html?id=007") == ["a", "id", "7"]
    assert slug_tokens("https://x.org/2019/06/solar-farms.html") == ["solar", "farms"]
    assert slug_tokens("https://x.org/news/2019/") == ["news"]
    assert slug_tokens("https://x.org/") == []


def test_url_similarity_by_hand():
    similarity = url_similarity("https://www.example-news.com/2019/06/solar-farms",
                                "https://example-news.com/energy/solar-farms-double")
    # tokens {2019, 6, solar, farms} vs {energy, solar, farms, double}: 2 / 6
    assert similarity.jaccard == pytest.approx(1 / 3)
    assert similarity.slug_overlap == pytest.approx(1.0)
    assert similarity.same_site is True
    assert similarity.score == pytest.approx(0.5 * (1 / 3) + 0.5)
    other = url_similarity("https://a.example/x/solar", "https://b.example/y/wind")
    assert other.same_site is False and other.score == 0.0
