"""The answer step (`recovery.answer`) and the candidates' fetch order, with a fake findings
accumulator: the policy's rules decide, not the ranking alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pagetrail.tools import policy
from pagetrail.tools.errors import RefusedAddress
from pagetrail.tools.evidence.anchor import AnchorInfo
from pagetrail.tools.models import Candidate, CheckResult, Hit, Memento, Scores
from pagetrail.tools.recovery import answer
from pagetrail.tools.recovery.candidates import fetch_order
from pagetrail.tools.recovery.context import Budget, DeadURL, Findings

DEAD = DeadURL("https://old.example/news/solar-farms-double.html")
DEAD_CHECK = CheckResult(url=DEAD, verdict="dead", status=404)
MEMENTO = Memento(original_url=DEAD, memento_url="https://archive.example/2019/x",
                  raw_url="https://archive.example/2019id_/x",
                  datetime=datetime(2019, 6, 1, tzinfo=UTC), archive="archive.example")
WEAK = AnchorInfo(terms=["solar"], is_stop_anchor=False, usable_alone=False)


def _live(confidence: float) -> Candidate:
    return Candidate(url="https://new.example/solar", kind="moved", confidence=confidence,
                     scores=Scores(), evidence="same title")


def _answer(ranked, memento=None, anchor_facts=None):
    return answer.for_dead(DEAD, Findings.start(DEAD, Budget()), DEAD_CHECK, memento, ranked,
                           anchor_facts, {})


def test_a_sure_live_candidate_is_the_answer_and_the_archived_copy_a_fallback(
        monkeypatch: pytest.MonkeyPatch):
    # the ranked line: the learned answer would decide on these empty scores
    # (the learned path: tests/test_learned_ranking.py, with a model made by hand)
    monkeypatch.setattr(policy, "LEARNED_ANSWER", False)
    recovery = _answer([_live(0.8)], MEMENTO)
    assert recovery.answer == "moved"
    assert [c.kind for c in recovery.candidates] == ["moved", "archived"]
    assert recovery.candidates[-1].confidence == policy.ARCHIVED_AS_FALLBACK


def test_below_the_line_the_archived_copy_is_the_answer(monkeypatch: pytest.MonkeyPatch):
    # the ranked line (the learned one decides on its own features: test_learned_confidence)
    monkeypatch.setattr(policy, "LEARNED_ANSWER", False)
    recovery = _answer([_live(policy.RECOMMEND_AT - 0.01)], MEMENTO)
    assert recovery.answer == "archived"
    assert recovery.candidates[-1].confidence == policy.ARCHIVED_AS_ANSWER


def test_a_weak_anchor_without_an_archived_copy_recommends_nothing_by_hand(
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(policy, "LEARNED_ANSWER", False)
    recovery = _answer([_live(0.99)], None, WEAK)
    assert recovery.answer == "none" and "too weak" in recovery.reason
    assert recovery.evidence["weak_anchor"] is True
    assert recovery.candidates[0].confidence == policy.WEAK_ANCHOR_CLAMP
    # with an archived copy to verify against, the same anchor is no reason to clamp
    assert _answer([_live(0.99)], MEMENTO, WEAK).answer == "moved"


def test_the_learned_answer_decides_a_weak_anchor_from_the_clamped_list(
        monkeypatch: pytest.MonkeyPatch):
    seen: list[float] = []

    def learned(url, ranked, archived_copy):
        seen.extend(c.confidence for c in ranked)
        return [ranked[0].model_copy(update={"confidence": 0.97})], 0.97, 0.9

    monkeypatch.setattr(answer, "learned_ranking", learned)
    recovery = _answer([_live(0.99)], None, WEAK)
    assert seen == [policy.WEAK_ANCHOR_CLAMP]  # the hand list as the training rows have it
    assert recovery.evidence["weak_anchor"] is True
    assert recovery.evidence["answer_probability"] == 0.97
    assert recovery.answer == "moved"


def test_live_answers_come_from_the_check():
    redirected = CheckResult(url=DEAD, verdict="redirected", status=301,
                             final_url="https://old.example/energy/solar")
    recovery = answer.for_live(DEAD, redirected)
    assert recovery is not None and recovery.answer == "redirected"
    assert recovery.candidates[0].confidence == policy.LIVE_REDIRECT
    assert answer.for_live(DEAD, DEAD_CHECK) is None
    with pytest.raises(RefusedAddress):
        answer.for_live(DEAD, CheckResult(url=DEAD, verdict="refused", reason="private"))


def test_a_silent_host_is_gone_but_one_that_answers_5xx_is_not():
    silent = CheckResult(url=DEAD, verdict="transient",
                         evidence={"error": {"kind": "timeout"}})
    assert answer.silent(silent) and answer.site_gone(silent)
    assert answer.for_live(DEAD, silent) is None  # recovered, not "unverified"
    erring = CheckResult(url=DEAD, verdict="transient", status=503)
    assert not answer.silent(erring) and not answer.site_gone(erring)
    assert answer.for_live(DEAD, erring).answer == "unverified"  # type: ignore[union-attr]


def test_direct_evidence_is_fetched_first_then_the_best_ranked_hits():
    found = Findings.start(DEAD, Budget())
    found.add_hit("TI", Hit(url="https://a.example/1", rank=1, engine="web"))
    found.add_hit("TI", Hit(url="https://a.example/3", rank=3, engine="web"))  # too deep
    found.add_hit("INFER", Hit(url="https://old.example/rule", rank=1, engine="rules"))
    found.add_hit("PICK", Hit(url="https://old.example/pick", rank=1, engine="store"))
    assert [e.url for e in fetch_order(found, DEAD, depth=2)] == [
        "https://old.example/pick", "https://old.example/rule", "https://a.example/1"]
    assert found.add_hit("TI", Hit(url=DEAD, rank=1, engine="web")) is None  # the dead URL
