"""A twin of the dead URL (other escaping, scheme, www., trailing slash, case) is the dead URL
written otherwise: checked (fetched) with the direct evidence, ranked on its page once read,
never on its URL alone (docs/evaluation.md, proposal 2). Hand-made inputs, no testbed cases."""

from __future__ import annotations

from pagetrail.tools.models import Document, Hit
from pagetrail.tools.ranking.rank import CandidateEvidence, Reference, rank_candidates, twin_key
from pagetrail.tools.recovery.candidates import fetch_order
from pagetrail.tools.recovery.context import Budget, Findings

DEAD = "https://river.example.org/news/2019/harbour-dredging-plan-approved"
ANCHOR = "Harbour dredging plan approved"
STORY = ("The council approved the plan to dredge the harbour channel so that larger shipping "
         "can reach the quays again. ") * 8
ELSEWHERE = "https://wire.example.net/a/8812-port-works"


def reference() -> Reference:
    return Reference(dead_url=DEAD, anchor=ANCHOR, lang="en")


def page(url: str, title: str, text: str) -> CandidateEvidence:
    return CandidateEvidence(url=url, document=Document(url=url, title=title, text=text),
                             hits=[("ANC", "web", 1)])


def test_twins_of_a_url_share_a_key_and_other_urls_do_not():
    dead = "https://blog.example.org/2020/01/mercurial%27s-journey/"
    for twin in ("http://blog.example.org/2020/01/mercurial's-journey",
                 "https://www.blog.example.org/2020/01/Mercurial%27s-Journey/",
                 "https://blog.example.org/2020/01/mercurial's-journey/"):
        assert twin_key(twin) == twin_key(dead)
    assert twin_key("https://blog.example.org/2020/01/mercurial%27s-journey-2024-rev/") \
        != twin_key(dead)
    assert twin_key("https://blog.example.org/2020/01/other") != twin_key(dead)


def test_an_unread_twin_is_the_dead_url_and_a_read_one_is_ranked_on_its_page():
    twin = f"http://{DEAD.removeprefix('https://')}/"
    unread = CandidateEvidence(url=twin, hits=[("LINKS", "links", 1)])
    ranked = rank_candidates(reference(), [unread, page(ELSEWHERE, "Port works to begin", STORY)])
    assert [c.url for c in ranked] == [ELSEWHERE]
    read = page(twin, ANCHOR, STORY)  # the server answers the twin with the page: an answer
    assert rank_candidates(reference(), [read])[0].url == twin


def test_a_twin_of_the_dead_url_is_checked_with_the_direct_evidence():
    found = Findings.start(DEAD, Budget())
    found.add_hit("TI", Hit(url="https://a.example/1", rank=1, engine="web"))
    found.add_hit("LINKS", Hit(url=DEAD.upper().replace("HTTPS://", "http://"), rank=40,
                               engine="links"))
    order = [e.url for e in fetch_order(found, DEAD, depth=2)]
    assert order[0].startswith("http://") and order[1] == "https://a.example/1"
    assert [e.url for e in fetch_order(found, "", depth=2)] == ["https://a.example/1"]  # deep: not fetched
