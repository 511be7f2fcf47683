"""A page that is a list of links (tag, section, category pages; roundups) is recognised from
its structure and only wins when nothing else does. Hand-made pages, no testbed cases."""

from __future__ import annotations

from pathlib import Path

from pagetrail.tools import policy
from pagetrail.tools.content.document import extract_links, link_share, parse_document
from pagetrail.tools.models import Document, Link, Scores
from pagetrail.tools.ranking.after import AfterFactors
from pagetrail.tools.ranking.rank import CandidateEvidence, Reference, rank_candidates

FIXTURES = Path(__file__).parent / "fixtures" / "rank"
SITE = "https://news.example.org"
HEADLINES = [
    "Attorney general opens an inquiry into the office landlord",
    "City council votes on the new tram line after long debate",
    "Local bakery wins the regional bread prize for a third year",
    "Storm closes two schools and the harbour for a whole day",
    "University researchers map the river's ancient course again",
    "Museum reopens its modern wing after a two year renovation",
    "Football club signs a young striker from the second division",
    "Hospital extends its opening hours for the winter season",
]
PARAGRAPH = ("The inquiry looks at how the company reported its leases and whether investors "
             "were told about the risks of its fast growth. Officials declined to say when the "
             "review would end, but several former employees have been asked to testify. ")


def tag_page() -> str:
    items = "".join(f'<li><h2><a href="{SITE}/2019/11/story-{i}">{h}</a></h2>'
                    f"<p>Nov {i + 1}, 2019</p></li>" for i, h in enumerate(HEADLINES))
    return (f"<html><head><title>Topic: inquiry - Example News</title></head><body>"
            f'<nav><a href="{SITE}/">Home</a> <a href="{SITE}/about">About us</a></nav>'
            f"<main><h1>Topic: inquiry</h1><ul>{items}</ul></main></body></html>")


def article_page() -> str:
    related = "".join(f'<li><a href="{SITE}/2019/11/story-{i}">{h}</a></li>'
                      for i, h in enumerate(HEADLINES[1:3]))
    body = "".join(f"<p>{PARAGRAPH}</p>" for _ in range(6))
    return (f"<html><head><title>Attorney general opens an inquiry - Example News</title></head>"
            f"<body><main><article><h1>Attorney general opens an inquiry into the office "
            f'landlord</h1>{body}<p>Read also <a href="{SITE}/2019/10/earlier">the earlier '
            f"report on the leases</a>.</p></article><aside><ul>{related}</ul></aside></main>"
            f"</body></html>")


def degree(html: str, url: str) -> float:
    document = parse_document(html, url, links=False)
    share = link_share(document.text, extract_links(html, url))
    return policy.listing_degree(share.share, share.items)


def test_a_tag_page_is_a_list_of_links_and_an_article_is_not():
    tag_url, article_url = f"{SITE}/tag/inquiry/", f"{SITE}/2019/11/inquiry-landlord"
    tag = link_share(parse_document(tag_page(), tag_url, links=False).text,
                     extract_links(tag_page(), tag_url))
    assert tag.items >= len(HEADLINES) - 1 and tag.share > 0.5
    assert degree(tag_page(), tag_url) == 1.0
    # an article with an inline link and a related-links box is mostly running text
    assert degree(article_page(), article_url) == 0.0


def test_link_share_counts_each_headline_once_and_ignores_short_menu_links():
    text = "Home About us " + " ".join(HEADLINES[:2])
    links = [parse_link(h) for h in [*HEADLINES[:2], HEADLINES[0], "Home", "About us"]]
    share = link_share(text, links)
    assert share.items == 2
    assert share.share == sum(len(h.split()) for h in HEADLINES[:2]) / len(text.split())
    assert link_share("", links).share == 0.0


def parse_link(anchor: str) -> Link:
    return Link(url=f"{SITE}/x", anchor=anchor, context="")


def test_listing_degree_needs_several_items_and_rises_with_the_share():
    assert policy.listing_degree(0.9, policy.LISTING_ITEMS - 1) == 0.0
    assert policy.listing_degree(policy.LISTING_SHARE_FROM, 20) == 0.0
    assert 0.0 < policy.listing_degree(0.18, 20) < 1.0
    assert policy.listing_degree(policy.LISTING_SHARE_FULL, 20) == 1.0
    weighed = [AfterFactors().apply(0.5, Scores(listing=degree)) for degree in (1.0, 0.5)]
    assert weighed[0] < weighed[1] < 0.5


def _two_equal_pages() -> tuple[Reference, CandidateEvidence, CandidateEvidence]:
    """The same text at two same-site URLs; the tag page was returned higher by the search,
    so without knowing what it is it ranks first."""
    text = (FIXTURES / "wework_techcrunch.txt").read_text(encoding="utf-8").split("\n", 4)[4]
    listing_url, article_url = f"{SITE}/tag/wework/", f"{SITE}/2019/11/wework-inquiry"
    reference = Reference(dead_url=f"{SITE}/2019/11/wework-under-investigation",
                          anchor="WeWork under investigation",
                          context_terms=["wework", "attorney", "investigation"])
    title = "WeWork under investigation"
    listing = CandidateEvidence(listing_url, Document(url=listing_url, title=title, text=text,
                                                      lang="en"), [("LS5", "searxng", 1)])
    article = CandidateEvidence(article_url, Document(url=article_url, title=title, text=text,
                                                      lang="en"), [("LS5", "searxng", 3)])
    return reference, listing, article


def test_a_listing_page_does_not_win_over_an_article_as_good():
    reference, listing, article = _two_equal_pages()
    unknown = rank_candidates(reference, [listing, article])
    assert unknown[0].url == listing.url  # the control: structure unknown, the tag page wins
    listing.listing = 1.0
    ranked = rank_candidates(reference, [listing, article])
    assert [c.url for c in ranked] == [article.url, listing.url]
    assert "a list of links" in ranked[1].evidence


def test_a_listing_page_still_wins_when_nothing_else_is_there():
    reference, listing, _article = _two_equal_pages()
    plain = rank_candidates(reference, [listing])[0].confidence
    listing.listing = 1.0
    ranked = rank_candidates(reference, [listing])
    assert [c.url for c in ranked] == [listing.url]
    assert ranked[0].confidence < plain
