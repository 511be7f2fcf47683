"""The dead URL's name found wherever a candidate URL carries it (proposal 4 of #27):
hand-made URLs only, no shape named by the matcher."""

from __future__ import annotations

import pytest

from pagetrail.tools.content.similarity import (
    longest_run,
    name_match,
    slug_match,
    url_carriers,
    url_name,
    url_similarity,
)
from pagetrail.tools.engines.overlap import rank_by_url

DEAD = "https://news.example/a/my-long-story"


@pytest.mark.parametrize("candidate", [
    "https://news.example/a/index.php?p=15691-my-long-story",   # into a query value, behind an id
    "https://news.example/81406-my-long-story/",                # an id glued before it
    "https://news.example/archive/my-long-story.html",          # another folder, an extension
    "https://news.example/a/view;id=my-long-story",             # a path parameter
    "https://other.example/2024/05/17/my-long-story/",          # a date-prefixed folder, new host
])
def test_the_name_is_found_wherever_it_went(candidate: str) -> None:
    similarity = url_similarity(DEAD, candidate)
    assert similarity.slug_overlap == pytest.approx(1.0)
    assert similarity.slug_run == 3


def test_a_slug_moved_into_a_query_beats_a_folder_named_like_it() -> None:
    dead = "https://wiki.example/guide/Setup/Download"
    right = url_similarity(dead, "https://wiki.example/guide/Setup/?page=Download")
    folder = url_similarity(dead, "https://wiki.example/guide/Setup/")
    assert right.slug_overlap == 1.0 and right.score > folder.score


def test_numbers_are_dropped_on_both_sides_unless_the_name_is_an_id() -> None:
    assert name_match(("my", "long", "story", "1202189233"), ("my", "long", "story")) == (1.0, 3)
    # 'd-161500790' is only an id: its number is what names it
    assert url_name("https://paper.example/print/d-161500790.html") == ("d", "161500790")
    assert url_similarity("https://paper.example/print/d-161500790.html",
                          "https://paperhq.example/print/article.php?beitrag=d-161500790"
                          ).slug_overlap == 1.0
    assert name_match(("d", "161500790"), ("d", "2")) == (0.5, 1)


def test_a_truncated_slug_is_a_prefix_run_and_may_cut_a_word() -> None:
    name = url_name("https://tv.example/news/hearings-key-moments-from-kurt-volkers-and-tim/")
    assert longest_run(name, ("hearings", "key", "moments", "from", "kurt", "volker")) == (6, 6, 6)
    truncated = url_similarity("https://tv.example/news/hearings-key-moments-from-kurt-volkers-and-tim/",
                               "https://tv.example/news/hearings-key-moments-from-kurt-volker/")
    assert truncated.slug_overlap == 1.0
    # a look-alike of the truncated slug is not a truncation: it goes on with other words
    lookalike = url_similarity("https://tv.example/news/hearings-key-moments-from-kurt-volkers-and-tim/",
                               "https://tv.example/news/hearings-key-moments-from-kurt-volker-second-look/")
    assert lookalike.slug_overlap < truncated.slug_overlap


def test_a_short_prefix_or_a_cut_inside_a_run_is_no_truncation() -> None:
    name = ("how", "to", "bake", "bread", "at", "home")
    assert name_match(name, ("how", "to"))[0] == pytest.approx(2 / 6)
    # a cut word only ends a run
    assert longest_run(("bread", "bakers", "guide"), ("bread", "baker", "guide"))[0] == 1


def test_a_folder_named_like_the_dead_page_carries_no_name() -> None:
    carriers = url_carriers("https://news.example/my-story/page-61537.html")
    assert carriers == ((("my", "story"), True), (("page", "61537"), False))
    assert slug_match(("my", "story"), carriers) == (0.0, 0)
    # a trailing stop word or number is no page of its own: the folder is the name
    assert slug_match(("my", "story"), url_carriers("https://n.example/my-story/index.html"))[0] == 1.0


def test_listing_ranked_by_url_prefers_the_moved_name() -> None:
    ranked = rank_by_url(DEAD, [
        ("https://news.example/a/stories/", ""),
        ("https://news.example/a/index.php?p=15691-my-long-story", ""),
        ("https://news.example/a/long-weekend", ""),
    ])
    assert ranked[0][0] == "https://news.example/a/index.php?p=15691-my-long-story"
