"""Without an archived copy, a candidate's main text is compared with the link's own words
(anchor, context, linking page): a look-alike URL repeating the dead slug does not win on its
address when its text is another story. Hand-made inputs, no testbed cases."""

from __future__ import annotations

import pytest

from pagetrail.tools import policy
from pagetrail.tools.models import Document, Link
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.ranking import textref
from pagetrail.tools.ranking.after import AfterFactors
from pagetrail.tools.ranking.rank import (
    CandidateEvidence,
    Reference,
    rank_candidates,
    text_shortfalls,
)
from pagetrail.tools.recovery.candidates import links_to

DEAD = "https://river.example.org/news/2019/harbour-dredging-plan-approved"
ANCHOR = "Harbour dredging plan approved"
CONTEXT = ["dredging", "harbour", "council", "sediment", "shipping", "channel", "approved"]
STORY = ("The council approved the plan to dredge the harbour channel so that larger shipping "
         "can reach the quays again. Sediment from the river has narrowed the channel for "
         "years; the dredging starts in spring and the spoil goes to a site upstream. ")
OTHER = ("The bakery on the market square won the regional bread prize for the third year. "
         "Its owner thanked the staff and the customers who queue every Saturday morning. ")


def reference(**fields: object) -> Reference:
    values: dict[str, object] = {"dead_url": DEAD, "anchor": ANCHOR, "context_terms": CONTEXT,
                                 "lang": "en"}
    values.update(fields)
    return Reference(**values)  # type: ignore[arg-type]


def page(url: str, title: str, text: str, **fields: object) -> CandidateEvidence:
    evidence = CandidateEvidence(url=url, document=Document(url=url, title=title, text=text * 4),
                                 hits=[("ANC", "web", 1)])
    for name, value in fields.items():
        setattr(evidence, name, value)
    return evidence


def look_alike() -> CandidateEvidence:
    # the dead slug plus an edition suffix, the anchor as its title, another story as its text
    return page(f"{DEAD}-new-edition", ANCHOR + " (new edition)", OTHER)


def right_page() -> CandidateEvidence:
    return page("https://wire.example.net/a/8812-port-works", "Port works to begin", STORY)


def test_a_look_alike_of_the_dead_url_loses_to_a_page_whose_text_is_the_links():
    ranked = rank_candidates(reference(), [look_alike(), right_page()])
    assert ranked[0].url == right_page().url
    assert "text behind another page's" in ranked[1].evidence


def test_without_the_text_comparison_the_look_alike_would_win(monkeypatch: pytest.MonkeyPatch):
    # the method, not the other scores, decides the order above
    from pagetrail.tools.ranking import rank

    monkeypatch.setattr(rank, "SHIPPED_FACTORS", AfterFactors(shortfall_slope=0.0))
    ranked = rank_candidates(reference(), [look_alike(), right_page()])
    assert ranked[0].url == look_alike().url


def test_a_roundup_quoting_the_context_is_ranked_but_not_the_comparison():
    quoted = " ".join([ANCHOR, *CONTEXT, "Links of the week"]) + ". " + OTHER
    roundup = page("https://blog.example.com/links-of-the-week-12", "Links of the week",
                   quoted, cites_dead=True)
    # the right page says less of the link's words than the roundup that quotes them
    thin = page("https://wire.example.net/a/8812-port-works", "Port works to begin",
                "The harbour channel will be dredged from spring. ")
    falls = text_shortfalls(reference(), [roundup, thin])
    assert falls[1] == 0.0  # not compared with the roundup
    assert falls[0] == 0.0
    # the roundup is ranked like any page (compared with the others), only never the yardstick
    assert textref.shortfalls([0.2, 0.9, 0.5], [True, False, True]) == \
        pytest.approx([0.3, 0.0, 0.0])
    assert textref.shortfalls([0.9, 0.5], [False, True]) == [0.0, 0.0]


def test_a_page_of_the_dead_site_linking_to_the_dead_url_is_still_the_comparison():
    # a site's template (or the moved page itself) links to the old address: no quote
    moved = page("https://river.example.org/news/harbour-dredging", ANCHOR, STORY,
                 cites_dead=True)
    falls = text_shortfalls(reference(), [moved, look_alike()])
    assert falls[1] > policy.TEXT_SHORTFALL_FROM


def test_a_list_of_links_quoting_the_headline_is_not_the_comparison():
    section = page("https://river.example.org/section/harbour/", "Harbour",
                   " ".join([ANCHOR, *CONTEXT]) + ". ", listing=1.0)
    thin = page("https://wire.example.net/a/8812-port-works", "Port works to begin",
                "The harbour channel will be dredged from spring. ")
    assert text_shortfalls(reference(), [section, thin])[1] == 0.0


def test_only_when_there_is_no_archived_copy_and_the_link_gave_words():
    candidates = [look_alike(), right_page()]
    url_only = reference(anchor="", context_terms=[])
    assert text_shortfalls(url_only, candidates) == [0.0, 0.0]
    copy = Document(url=DEAD, title=ANCHOR, text=STORY * 3)
    assert text_shortfalls(reference(memento=copy), candidates) == [0.0, 0.0]
    falls = text_shortfalls(reference(), candidates)
    assert falls[0] > policy.TEXT_SHORTFALL_FROM and falls[1] == 0.0


def test_the_site_name_is_no_evidence_for_one_of_its_pages():
    weights = textref.link_words(anchor=["river", "gazette"], context=["dredging"])
    assert textref.text_match(weights, {"river", "gazette", "dredging"},
                              frozenset({"river", "gazette"})) == pytest.approx(1 / 5)


def test_rarer_words_weigh_more_and_the_anchor_more_than_the_url():
    weights = textref.link_words(anchor=["dredging"], url=["news"],
                                 background=lambda t: 1e-8 if t == "dredging" else 1e-3)
    assert weights["dredging"] > 4 * weights["news"]
    assert textref.rarity(1e-2) == 1.0 and textref.rarity(1e-20) == policy.TEXT_RARITY_CAP


def test_the_factor_starts_past_a_margin_and_falls_fast():
    factor = AfterFactors().shortfall_factor
    assert factor(policy.TEXT_SHORTFALL_FROM) == 1.0
    assert factor(0.4) < 0.2 < factor(0.2) < 1.0


def test_a_page_linking_to_the_dead_url_is_recognised_and_bad_links_lead_nowhere():
    links = [Link(url="https://x.example: Der Traum vom Gas/a"), Link(url=DEAD.replace("https://", "http://www.") + "/")]
    assert links_to(normalize_url(DEAD), links)
    assert not links_to(normalize_url(DEAD), links[:1])
