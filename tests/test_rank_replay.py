"""ranking.replay: stored candidates re-ranked as rank_candidates ranks them (hand-made pages)."""

from __future__ import annotations

from dataclasses import replace

from pagetrail.tools.models import Candidate, Document, Scores
from pagetrail.tools.ranking.rank import CandidateEvidence, Reference, rank_candidates
from pagetrail.tools.ranking.rank import default_calibration as shipped_calibration
from pagetrail.tools.ranking.replay import AfterFactors, case_has_memento, rerank, values_of

DEAD = "https://river.example.org/news/2019/harbour-dredging-plan-approved"
STORY = ("The council approved the plan to dredge the harbour channel so that larger shipping "
         "can reach the quays again. Sediment from the river has narrowed the channel for "
         "years; the dredging starts in spring and the spoil goes to a site upstream. ")
OTHER = ("The bakery on the market square won the regional bread prize for the third year. "
         "Its owner thanked the staff and the customers who queue every Saturday morning. ")


def page(url: str, title: str, text: str, listing: float = 0.0) -> CandidateEvidence:
    return CandidateEvidence(url=url, document=Document(url=url, title=title, text=text * 4),
                             hits=[("ANC", "web", 1)], listing=listing)


def ranking() -> list[Candidate]:
    reference = Reference(dead_url=DEAD, anchor="Harbour dredging plan approved",
                          context_terms=["dredging", "harbour", "council", "channel"], lang="en")
    return rank_candidates(reference, [
        page(f"{DEAD}-new-edition", "Harbour dredging plan approved (new edition)", OTHER),
        page("https://wire.example.net/a/8812-port-works", "Port works to begin", STORY),
        page("https://wire.example.net/topics/harbour", "Harbour news", STORY, listing=0.6),
    ])


def test_the_scores_keep_what_is_weighed_after_the_calibration():
    by_url = {c.url: c.scores for c in ranking()}
    lookalike = by_url[f"{DEAD}-new-edition"]
    assert lookalike.offshoot and lookalike.text_shortfall > 0.1
    assert by_url["https://wire.example.net/topics/harbour"].listing == 0.6
    assert not by_url["https://wire.example.net/a/8812-port-works"].offshoot


def test_shipped_values_reproduce_the_pipelines_order_and_confidences():
    ranked = ranking()
    # stored as a report stores them, in another order
    stored = [Candidate.model_validate(c.model_dump(mode="json")) for c in reversed(ranked)]
    replayed = rerank(stored, shipped_calibration())
    assert [c.url for _conf, c in replayed] == [c.url for c in ranked]
    assert [conf for conf, _c in replayed] == [c.confidence for c in ranked]


def test_neutral_factors_leave_the_calibrated_confidence():
    ranked = ranking()
    weighed = dict((c.url, conf) for conf, c in rerank(ranked, shipped_calibration()))
    plain = dict((c.url, conf) for conf, c in rerank(ranked, shipped_calibration(),
                                                      AfterFactors.neutral()))
    lookalike = f"{DEAD}-new-edition"
    assert plain[lookalike] > weighed[lookalike]  # offshoot and text shortfall both weighed
    assert plain["https://wire.example.net/topics/harbour"] > \
        weighed["https://wire.example.net/topics/harbour"]


def test_factor_arithmetic_and_after_features():
    factors = replace(AfterFactors.neutral(), offshoot_factor=0.5, shortfall_from=0.1,
                      shortfall_slope=2.0, listing_penalty=0.5)
    scores = Scores(offshoot=True, text_shortfall=0.6, listing=0.4)
    # 0.8 × (1 − 0.5·0.4) = 0.64 → × 0.5 = 0.32 → × e^(−2·0.5) = 0.1177
    assert factors.apply(0.8, scores) == 0.1177
    assert AfterFactors.neutral().apply(0.8, scores) == 0.8
    candidate = Candidate(url="https://x.example/a", kind="replacement", confidence=0.1,
                          scores=scores)
    row = values_of([candidate], case_has_memento([candidate]))[0]
    assert (row["offshoot"], row["text_shortfall"], row["listing"]) == (1.0, 0.6, 0.4)
    assert row["has_memento"] == 0.0
