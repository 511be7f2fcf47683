"""A page of the dead page's site whose address is the dead address plus words (an edition, a
follow-up, a page under it) is another page: its look-alike address must not beat a copy of
the page elsewhere. Hand-made URLs and pages, no testbed cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagetrail.tools.models import Document
from pagetrail.tools.ranking.offshoots import cut_short, grown_out, is_offshoot
from pagetrail.tools.ranking.rank import CandidateEvidence, Reference, rank_candidates

FIXTURES = Path(__file__).parent / "fixtures" / "rank"
DEAD = "https://news.example.org/2019/11/solar-farms-double-in-a-year/"


@pytest.mark.parametrize("url", [
    "https://news.example.org/2019/11/solar-farms-double-in-a-year-second-look/",
    "https://www.news.example.org/2019/11/solar-farms-double-in-a-year-update-2024/",
    "https://news.example.org/2019/11/solar-farms-double-in-a-year/comments/",
    "https://news.example.org/2019/11/solar-farms-double-in-a-year-2024/",  # an edition
    "http://news.example.org/2019/11/solar-farms-double-in-a-year_nachtrag.html",
])
def test_the_dead_address_plus_words_on_its_site_is_an_offshoot(url):
    assert is_offshoot(DEAD, url)


@pytest.mark.parametrize("url", [
    "https://news.example.org/2019/11/solar-farms-double-in-a-year-2/",  # a slug taken twice
    "https://news.example.org/2019/11/solar-farms-double-in-a-year-12.html",
    "https://news.example.org/2019/11/solar-farms-double-in-a-year.html",  # an extension
    "https://news.example.org/2019/11/solar-farms-double-in-a-years/",  # another slug
    "https://news.example.org/energy/solar-farms-double/",  # moved and shortened
    "https://copies.example.net/2019/11/solar-farms-double-in-a-year-summary/",  # elsewhere
    "https://news.example.org/2019/11/solar-farms-double-in-a-year/",  # itself
    "not a url",
])
def test_other_addresses_are_not_offshoots(url):
    assert not is_offshoot(DEAD, url)


def test_a_site_root_grows_no_offshoots():
    assert not is_offshoot("https://news.example.org/", "https://news.example.org/about-us")
    assert not is_offshoot("https://news.example.org/a/", "https://news.example.org/a/b-c")
    assert not is_offshoot("https://news.example.org/faq", "https://news.example.org/faq-2024")


def test_a_page_number_after_the_story_name_is_a_page_address():
    paged = "https://news.example.org/celebs/fans-fear-for-the-singer/21/"
    assert is_offshoot(paged,
                       "https://news.example.org/celebs/fans-fear-for-the-singer/21-second-look/")
    assert not is_offshoot(paged, "https://news.example.org/celebs/fans-fear-for-the-singer/22/")
    assert not is_offshoot("https://news.example.org/a/21/", "https://news.example.org/a/21-more/")


def _text() -> str:
    return (FIXTURES / "wework_techcrunch.txt").read_text(encoding="utf-8").split("\n", 4)[4]


def _lookalike_and_copy() -> tuple[Reference, CandidateEvidence, CandidateEvidence]:
    """No archived copy, only the URL: the same text on the dead site under the dead address
    plus words, and on a republisher under a shortened slug with an id."""
    dead = "https://news.example.org/2019/11/wework-under-investigation/"
    lookalike_url = "https://news.example.org/2019/11/wework-under-investigation-second-look/"
    copy_url = "https://copies.example.net/read/wework-under-investigation-48213"
    reference = Reference(dead_url=dead)
    title = "WeWork under investigation"
    lookalike = CandidateEvidence(lookalike_url, Document(url=lookalike_url, title=title,
                                                          text=_text(), lang="en"),
                                  [("URL", "site", 1)])
    copy = CandidateEvidence(copy_url, Document(url=copy_url, title=title, text=_text(),
                                                lang="en"), [("ELSEWHERE", "elsewhere", 1)])
    return reference, lookalike, copy


def test_a_lookalike_address_loses_to_a_copy_elsewhere():
    reference, lookalike, copy = _lookalike_and_copy()
    ranked = rank_candidates(reference, [lookalike, copy])
    assert [c.url for c in ranked] == [copy.url, lookalike.url]
    assert "the dead address plus words" in ranked[1].evidence


def test_an_offshoot_still_wins_alone_and_direct_evidence_lifts_the_penalty():
    reference, lookalike, _copy = _lookalike_and_copy()
    alone = rank_candidates(reference, [lookalike])
    assert [c.url for c in alone] == [lookalike.url]
    named = Reference(dead_url=reference.dead_url, rule_support={lookalike.url: 1.0})
    ruled = rank_candidates(named, [lookalike])[0]
    assert "the dead address plus words" not in ruled.evidence
    assert ruled.confidence > alone[0].confidence


def test_the_dead_address_cut_short_grows_offshoots_too():
    dead = "https://news.example.org/article/1649/activist-says-all-conditions-are-met-for-revolt"
    short = "https://news.example.org/article/1649/activist-says-all-conditions-are-met"
    edition = "https://news.example.org/article/1649/activist-says-all-conditions-are-met-new-edition"
    assert cut_short(dead, [short, edition, "https://other.example.org/article/1649/activist",
                            "https://news.example.org/article/1649/activist-says-al",
                            "http://[::1/article/1649/activist"]) == [short]  # malformed: skipped
    assert cut_short("http://[::1/article", [short]) == []
    assert not is_offshoot(dead, edition)  # not the dead address plus words …
    assert grown_out(dead, edition, [short])  # … but the short one's
    assert not grown_out(dead, short, [short])
    assert not grown_out(dead, edition, [])


def test_an_edition_of_the_shortened_page_ranks_below_it():
    """URL only, the same text: the page under the shortened slug beats its edition, whose
    address looks more like the dead one; without the short page the edition is not weighed
    down."""
    dead = "https://news.example.org/2019/11/wework-under-investigation-by-regulators/"
    short = "https://news.example.org/2019/11/wework-under-investigation/"
    edition = "https://news.example.org/2019/11/wework-under-investigation-new-edition/"
    reference = Reference(dead_url=dead)

    def page(url: str) -> CandidateEvidence:
        return CandidateEvidence(url, Document(url=url, title="WeWork under investigation",
                                               text=_text(), lang="en"), [("URL", "site", 1)])

    ranked = rank_candidates(reference, [page(edition), page(short)])
    assert [c.url for c in ranked] == [short, edition]
    assert "plus words" in ranked[1].evidence
    assert "plus words" not in rank_candidates(reference, [page(edition)])[0].evidence
