"""Ranking candidates: scores, order, kind and confidence, calibration, junk filtering."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pagetrail.tools import policy
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.models import Document, Hit, Query, Scores
from pagetrail.tools.ranking.rank import (
    CANDIDATE_FEATURES,
    DEFAULT_CALIBRATION,
    FEATURES,
    Calibration,
    CandidateEvidence,
    Reference,
    decide,
    evidence_from_queries,
    features,
    fit_calibration,
    is_junk_candidate,
    rank_candidates,
    ranking_features,
    reciprocal_rank_fusion,
    score_candidate,
)

FIXTURES = Path(__file__).parent / "fixtures" / "rank"
DEAD = "https://venturebeat.com/2019/11/18/new-york-state-attorney-general-investigating-wework/"
MOVED = "https://venturebeat.com/business/ny-attorney-general-investigating-wework"


def page(name: str, url: str | None = None) -> Document:
    source_url, title, site, _blank, text = (FIXTURES / f"{name}.txt").read_text(
        encoding="utf-8").split("\n", 4)
    return Document(url=url or source_url, title=title, site_name=site, text=text, lang="en")


def moved_copy(document: Document, url: str, seed: int = 11) -> Document:
    """The same page at a new URL: ~5 % of the words gone, new boilerplate, same title."""
    rnd = random.Random(seed)
    words = [w for w in document.text.split() if rnd.random() > 0.05]
    text = " ".join(words) + "\nSign up for our newsletter. Follow us."
    return document.model_copy(update={"url": url, "text": text})


@pytest.fixture
def memento() -> Document:
    return page("wework_venturebeat", url=DEAD)


@pytest.fixture
def candidates(memento) -> list[CandidateEvidence]:
    return [
        CandidateEvidence(page("titan_map").url, page("titan_map"), [("LS5", "searxng", 1)]),
        CandidateEvidence(page("wework_techcrunch").url, page("wework_techcrunch"),
                          [("TI", "searxng", 1), ("LS5", "searxng", 2)]),
        CandidateEvidence(MOVED, moved_copy(memento, MOVED), [("TI", "searxng", 4)]),
        CandidateEvidence(page("meth_thehill").url, page("meth_thehill"), [("LS7", "searxng", 2)]),
    ]


# ---------------------------------------------------------------- fusion


def test_reciprocal_rank_fusion_by_hand():
    assert reciprocal_rank_fusion([1, 3]) == pytest.approx(1 / 61 + 1 / 63)
    assert reciprocal_rank_fusion([2], k=10) == pytest.approx(1 / 12)
    assert reciprocal_rank_fusion([]) == 0.0
    assert reciprocal_rank_fusion([0]) == pytest.approx(1 / 61)  # unknown rank counts as first


def test_votes_and_best_rank_are_reported(memento, candidates):
    scores = score_candidate(Reference(dead_url=DEAD, memento=memento), candidates[1])
    assert scores.query_votes == 2
    assert scores.best_rank == 1
    assert scores.rrf == pytest.approx(1 / 61 + 1 / 62)


def test_evidence_from_queries_groups_hits_by_url():
    queries = [
        Query(text="t", method="TI", engine="searxng", hits=[
            Hit(url="https://a.example/x", title="X", rank=1), Hit(url="https://b.example/y", rank=2)]),
        Query(text="l", method="LS5", engine="searxng", hits=[
            Hit(url="http://www.a.example/x/", rank=3)]),
    ]
    grouped = evidence_from_queries(queries)
    assert [e.url for e in grouped] == ["https://a.example/x", "https://b.example/y"]
    assert grouped[0].hits == [("TI", "searxng", 1), ("LS5", "searxng", 3)]
    assert grouped[0].title == "X"
    assert grouped[0].methods == ["TI", "LS5"]


# ---------------------------------------------------------------- ranking with an archived copy


def test_moved_page_ranks_first_then_the_same_story_elsewhere(memento, candidates):
    reference = Reference(dead_url=DEAD, memento=memento,
                          memento_date=datetime(2019, 11, 20, tzinfo=UTC),
                          anchor="WeWork investigation", context_terms=["attorney", "neumann"])
    ranked = rank_candidates(reference, candidates)
    assert [c.url for c in ranked[:2]] == [MOVED, page("wework_techcrunch").url]
    first, second = ranked[0], ranked[1]
    assert first.kind == "moved" and first.scores.content_cosine >= policy.MOVED_COSINE
    assert first.confidence > 0.5
    assert second.kind == "replacement"
    assert second.confidence < first.confidence
    assert all(c.confidence < 0.3 for c in ranked[2:])
    # every component is reported
    assert first.scores.content_kld is not None and first.scores.content_lm > 0.9
    assert first.scores.content_resemblance > 0.5
    assert first.scores.title_similarity == 1.0 and first.scores.same_site
    assert first.evidence.startswith("same title, 0.9")
    assert "content match to 2019 archived copy" in first.evidence
    assert first.evidence.endswith("found by TI")
    assert second.evidence.endswith("found by TI and LS5")
    assert first.methods == ["TI"]


def test_kld_orders_candidates_like_cosine(memento, candidates):
    reference = Reference(dead_url=DEAD, memento=memento)
    scored = [score_candidate(reference, c) for c in candidates]
    by_kld = sorted(range(len(scored)), key=lambda i: scored[i].content_kld)
    by_cosine = sorted(range(len(scored)), key=lambda i: -scored[i].content_cosine)
    assert by_kld[:2] == by_cosine[:2] == [2, 1]


def test_dirichlet_smoothing_is_a_parameter(memento, candidates):
    from pagetrail.tools.content.similarity import Smoothing

    reference = Reference(dead_url=DEAD, memento=memento, smoothing=Smoothing("dirichlet", mu=500))
    ranked = rank_candidates(reference, candidates)
    assert ranked[0].url == MOVED
    assert ranked[0].scores.content_kld > 0


def test_reference_from_plain_text_ranks_like_an_archived_copy(memento, candidates):
    reference = Reference.from_text(memento.text)
    ranked = rank_candidates(reference, candidates)
    assert ranked[0].url == MOVED and ranked[0].kind == "moved"
    assert ranked[0].scores.url_similarity == 0.0  # no dead URL to compare with
    assert ranked[1].url == page("wework_techcrunch").url


def test_an_archived_error_page_is_no_reference(memento, candidates):
    error_copy = Document(url=DEAD, title="Seite nicht gefunden", text="Leider nichts. " * 10)
    reference = Reference(dead_url=DEAD, memento=error_copy, anchor="WeWork attorney general")
    assert not reference.has_memento
    ranked = rank_candidates(reference, candidates)
    assert all(c.scores.title_similarity is None for c in ranked)
    assert ranked[0].url in (MOVED, page("wework_techcrunch").url)


def test_a_tiny_archived_copy_does_not_vouch_for_content(candidates):
    reference = Reference(dead_url=DEAD, memento=Document(url=DEAD, title="WeWork", text="Error"),
                          anchor="WeWork attorney general investigation")
    assert not reference.has_memento
    ranked = rank_candidates(reference, candidates)
    assert all(c.scores.content_cosine is None for c in ranked)
    assert ranked[0].kind == "replacement"


# ---------------------------------------------------------------- ranking without an archived copy


def test_without_archived_copy_anchor_and_context_rank(candidates):
    reference = Reference(
        dead_url="https://example-blog.org/2019/11/wework-under-investigation",
        anchor="New York attorney general investigating WeWork",
        context_terms=["wework", "neumann", "investigation", "attorney"])
    ranked = rank_candidates(reference, candidates)
    assert {ranked[0].url, ranked[1].url} == {MOVED, page("wework_techcrunch").url}
    assert ranked[0].scores.anchor_dice > 0.5
    assert ranked[0].scores.content_cosine is None
    assert all(c.kind == "replacement" for c in ranked)  # nothing verifies a move
    assert ranked[-1].scores.final < 0.15
    assert "title shares words with the anchor" in ranked[0].evidence


def test_unusable_anchor_is_not_scored(candidates):
    reference = Reference(dead_url=DEAD, anchor="here", anchor_usable=False, context_terms=["wework"])
    scores = score_candidate(reference, candidates[1])
    assert scores.anchor_dice is None
    assert scores.context_similarity is not None and scores.context_similarity > 0


def test_past_pick_lifts_a_candidate(candidates):
    plain = Reference(dead_url=DEAD, anchor="WeWork")
    picked = Reference(dead_url=DEAD, anchor="WeWork", picks={page("titan_map").url: 1.0})
    assert score_candidate(picked, candidates[0]).final > score_candidate(plain, candidates[0]).final
    assert "picked by a person before" in rank_candidates(picked, candidates[:1])[0].evidence


def test_candidate_not_fetched_is_scored_from_its_search_hit(memento):
    reference = Reference(dead_url=DEAD, memento=memento, anchor="WeWork investigation")
    hit_only = CandidateEvidence(MOVED, None, [("TI", "searxng", 1)],
                                 title=memento.title, snippet="WeWork attorney general")
    scores = score_candidate(reference, hit_only)
    assert scores.content_cosine is None
    assert scores.title_similarity == 1.0
    kind, confidence = decide(scores, has_memento=True)
    assert kind == "moved"  # same title on the same site
    assert confidence > 0


def test_duplicates_are_merged(memento):
    reference = Reference(dead_url=DEAD, memento=memento)
    twin = moved_copy(memento, MOVED)
    ranked = rank_candidates(reference, [
        CandidateEvidence(MOVED, twin, [("TI", "searxng", 1)]),
        CandidateEvidence(MOVED.replace("https://", "http://www.") + "/", None, [("LS5", "bing", 3)]),
    ])
    assert len(ranked) == 1
    assert ranked[0].scores.query_votes == 2 and ranked[0].methods == ["TI", "LS5"]


# ---------------------------------------------------------------- decide


def test_decide_moved_threshold():
    assert decide(Scores(content_cosine=0.91, final=0.6), has_memento=True)[0] == "moved"
    assert decide(Scores(content_cosine=0.89, final=0.6), has_memento=True)[0] == "replacement"
    # without an archived copy a cosine means nothing
    assert decide(Scores(content_cosine=0.95, final=0.6), has_memento=False)[0] == "replacement"


def test_decide_same_title_same_site_is_moved():
    assert decide(Scores(title_similarity=1.0, same_site=True), has_memento=True)[0] == "moved"
    assert decide(Scores(title_similarity=1.0, same_site=False), has_memento=True)[0] == "replacement"
    assert decide(Scores(title_similarity=0.8, same_site=True), has_memento=True)[0] == "replacement"


def test_decide_rewrite_rule_without_archived_copy():
    assert decide(Scores(rule_support=0.8, same_site=True), has_memento=False)[0] == "moved"
    assert decide(Scores(rule_support=0.8, same_site=False), has_memento=False)[0] == "replacement"


def test_confidence_grows_with_the_final_score_and_junk_gets_none():
    hand_set = DEFAULT_CALIBRATION
    low = decide(Scores(final=0.2), has_memento=False, calibration=hand_set)[1]
    mid = decide(Scores(final=0.5), has_memento=False, calibration=hand_set)[1]
    high = decide(Scores(final=0.8), has_memento=False, calibration=hand_set)[1]
    assert 0 < low < 0.5 <= mid < high < 1
    shipped = [decide(Scores(final=f), has_memento=False)[1] for f in (0.2, 0.5, 0.8)]
    assert shipped == sorted(shipped) and shipped[0] < shipped[-1]
    assert decide(Scores(content_cosine=0.99, final=0.9, junk="dead_url"), True) == ("replacement", 0.0)
    assert decide(Scores(title_similarity=1.0, same_site=True, junk="site_root"), True)[0] == "replacement"


# ---------------------------------------------------------------- calibration


def _synthetic_samples(n: int = 400, seed: int = 5) -> list[tuple[dict[str, float], bool]]:
    rnd = random.Random(seed)
    samples = []
    for _ in range(n):
        final = rnd.random()
        values = {name: 0.0 for name in FEATURES}
        values["final"] = final
        values["content_cosine"] = min(1.0, max(0.0, final + rnd.gauss(0, 0.1)))
        values["has_memento"] = 1.0
        samples.append((values, rnd.random() < final ** 2))  # correct more often when high
    return samples


def test_fit_calibration_round_trips_through_json(tmp_path):
    calibration = fit_calibration(_synthetic_samples())
    assert set(calibration.coefficients) == set(FEATURES)
    assert calibration.coefficients["final"] > 0
    path = tmp_path / "calibration.json"
    calibration.save(path)
    data = json.loads(path.read_text())
    assert set(data) == {"format", "intercept", "coefficients"}
    loaded = Calibration.load(path)
    probe = {name: 0.3 for name in FEATURES}
    assert loaded.confidence(probe) == pytest.approx(calibration.confidence(probe))
    low, high = dict(probe, final=0.1), dict(probe, final=0.9)
    assert loaded.confidence(low) < loaded.confidence(high)


def test_fit_calibration_matches_observed_rates():
    calibration = fit_calibration(_synthetic_samples(2000))
    values = {name: 0.0 for name in FEATURES}
    values.update(final=0.9, content_cosine=0.9, has_memento=1.0)
    assert calibration.confidence(values) == pytest.approx(0.81, abs=0.12)  # P = 0.9²


def test_fit_calibration_accepts_scores():
    samples = [(Scores(content_cosine=c, final=c), c > 0.5) for c in (0.1, 0.2, 0.3, 0.7, 0.8, 0.9)]
    calibration = fit_calibration(samples)
    kind, confidence = decide(Scores(content_cosine=0.85, final=0.85), True, calibration)
    assert kind == "replacement"
    assert confidence > decide(Scores(content_cosine=0.15, final=0.15), True, calibration)[1]


def test_calibration_errors_are_named(tmp_path):
    with pytest.raises(ConfigError):
        fit_calibration([({"final": 0.4}, True), ({"final": 0.9}, True)])
    with pytest.raises(ConfigError):
        Calibration.from_json('{"intercept": 0, "coefficients": {"no_such_feature": 1}}')
    with pytest.raises(ConfigError):
        Calibration.from_json("not json")
    with pytest.raises(ConfigError):
        Calibration.load(tmp_path / "missing.json")


def test_features_are_complete_and_bounded():
    values = features(Scores(content_cosine=0.9, rrf=1 / 61, same_site=True, final=0.7), True)
    assert tuple(values) == CANDIDATE_FEATURES
    assert all(0.0 <= v <= 1.0 for v in values.values())
    assert values["moved"] == 1.0 and values["fusion"] == pytest.approx(0.632, abs=1e-3)
    assert DEFAULT_CALIBRATION.confidence(values) > 0.9


def test_content_lead_is_the_margin_over_the_best_other_candidate():
    rows = ranking_features([
        features(Scores(content_cosine=0.8, content_lm=0.6), True),  # content 0.7
        features(Scores(content_cosine=0.4, content_lm=0.2), True),  # content 0.3
        features(Scores(), False),
    ])
    assert [tuple(r) for r in rows] == [FEATURES] * 3
    assert [r["content_lead"] for r in rows] == pytest.approx([0.4, 0.0, 0.0])
    tie = ranking_features([features(Scores(content_cosine=0.5, content_lm=0.5), True)] * 2)
    assert [r["content_lead"] for r in tie] == [0.0, 0.0]  # two equal copies: neither leads
    assert ranking_features([]) == []
    assert ranking_features([features(Scores(), False)])[0]["content_lead"] == 0.0


def test_decide_alone_is_a_ranking_of_one():
    scores = Scores(content_cosine=0.6, content_lm=0.4, final=0.5)
    calibration = Calibration(-1.0, {"content_lead": 4.0})
    alone = decide(scores, True, calibration)
    assert alone == decide(scores, True, calibration,
                           values=ranking_features([features(scores, True)])[0])
    assert alone[1] == pytest.approx(1 / (1 + math.exp(-1.0)), abs=1e-4)  # leads by all 0.5


def test_a_calibration_on_content_lead_ranks_the_better_content_above_a_url_lookalike(memento):
    """The dead site's look-alike URL with less of the archived text against a page elsewhere
    with more of it: content_lead (computed over the ranking) decides, not the URL."""
    # The dead slug under another date: a look-alike, not an offshoot of the dead address
    # (those are weighed down on structure alone: tests/test_rank_offshoots.py).
    lookalike_url = DEAD.replace("/2019/11/18/", "/2019/11/19/")
    half = memento.text[: len(memento.text) // 3]
    lookalike = memento.model_copy(update={"url": lookalike_url, "text": half + " " + page(
        "titan_map").text})
    elsewhere_url = "https://aggregator.example/news/wework-inquiry"
    elsewhere = moved_copy(memento, elsewhere_url, seed=3)
    reference = Reference(dead_url=DEAD, memento=memento)
    candidates = [CandidateEvidence(lookalike_url, lookalike, [("TI", "searxng", 1)]),
                  CandidateEvidence(elsewhere_url, elsewhere, [("TI", "searxng", 2)])]
    by_url = Calibration(-3.0, {"url_similarity": 6.0})
    by_lead = Calibration(-3.0, {"url_similarity": 2.0, "content_lead": 12.0})
    assert rank_candidates(reference, candidates, calibration=by_url)[0].url == lookalike_url
    ranked = rank_candidates(reference, candidates, calibration=by_lead)
    assert ranked[0].url == elsewhere_url
    assert ranked[0].scores.url_similarity < ranked[1].scores.url_similarity


# ---------------------------------------------------------------- junk


def test_junk_dead_url_itself():
    assert is_junk_candidate(DEAD, DEAD.replace("venturebeat.com", "VentureBeat.com:443") + "#top") \
        == "dead_url"
    # the same path on www. or over another scheme is another URL: it may well be alive, and
    # is ranked once read (unread, it is the dead URL written otherwise: test_rank_textref)
    page = Document(url="", title="x", text="y " * 500)
    assert is_junk_candidate(DEAD, DEAD.replace("https://", "https://www."), page) is None
    assert is_junk_candidate(DEAD, DEAD.replace("https://", "http://"), page) is None
    assert is_junk_candidate(DEAD, DEAD.replace("https://", "http://")) == "dead_url"
    redirected = Document(url=DEAD, title="x", text="y " * 500)
    assert is_junk_candidate(DEAD, "https://venturebeat.com/go?id=1", redirected) == "dead_url"


def test_junk_site_root_only_for_deep_dead_urls():
    assert is_junk_candidate(DEAD, "https://venturebeat.com/") == "site_root"
    assert is_junk_candidate(DEAD, "https://www.venturebeat.com/index.html") == "site_root"
    assert is_junk_candidate(DEAD, "https://venturebeat.com/en/") == "site_root"
    assert is_junk_candidate("https://old-name.example/", "https://new-name.example/") is None
    assert is_junk_candidate(DEAD, "https://venturebeat.com/business/") is None


def test_junk_error_and_parking_pages():
    not_found = Document(url="https://x.example/a", title="404 Not Found", text="Sorry.")
    assert is_junk_candidate(DEAD, not_found.url, not_found) == "error_page"
    german = Document(url="https://x.example/a", title="Beispiel",
                      text="Die Seite wurde leider nicht gefunden. Zur Startseite.")
    assert is_junk_candidate(DEAD, german.url, german) == "error_page"
    parked = Document(url="https://x.example/a", title="x.example", text="This domain is for sale!")
    assert is_junk_candidate(DEAD, parked.url, parked) == "parked"
    # a long article that happens to say "not found" is not an error page
    article = page("wework_techcrunch")
    article = article.model_copy(update={"text": article.text + " The documents were not found."})
    assert is_junk_candidate(DEAD, article.url, article) is None


def test_junk_archive_replay():
    replay = "https://web.archive.org/web/20191120000000/" + DEAD
    assert is_junk_candidate(DEAD, replay) == "archive_copy"


def test_rank_drops_junk_or_lists_it_last(memento, candidates):
    reference = Reference(dead_url=DEAD, memento=memento)
    error_page = Document(url="https://venturebeat.com/missing", title="Page not found", text="Oops")
    junk = [
        CandidateEvidence(DEAD, memento, [("TI", "searxng", 1)]),
        CandidateEvidence(error_page.url, error_page, [("TI", "searxng", 2)]),
        CandidateEvidence("https://venturebeat.com/", page("meth_njcom", "https://venturebeat.com/"),
                          [("TI", "searxng", 3)]),
    ]
    ranked = rank_candidates(reference, junk + candidates)
    urls = [c.url for c in ranked]
    assert DEAD not in urls and error_page.url not in urls
    root = next(c for c in ranked if c.url == "https://venturebeat.com/")
    assert root.scores.junk == "site_root" and root.kind == "replacement"
    assert "penalised: site root" in root.evidence
    kept = rank_candidates(reference, junk + candidates, keep_junk=True)
    assert [c.confidence for c in kept[-2:]] == [0.0, 0.0]
    assert {c.scores.junk for c in kept[-2:]} == {"dead_url", "error_page"}
    assert len(rank_candidates(reference, junk + candidates, limit=2)) == 2


def test_same_title_with_different_content_is_not_moved():
    """With an archived copy to compare, a same-titled page of other content is no move."""
    scores = Scores(title_similarity=1.0, same_site=True, content_cosine=0.6)
    assert decide(scores, has_memento=True)[0] == "replacement"


def test_quoting_page_with_unrelated_title_is_not_moved():
    """A tag/listing page quoting the article reaches the cosine but not the title."""
    scores = Scores(title_similarity=0.2, same_site=True, content_cosine=0.96)
    assert decide(scores, has_memento=True)[0] == "replacement"
    scores.title_similarity = 0.7
    assert decide(scores, has_memento=True)[0] == "moved"

