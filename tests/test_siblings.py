"""The dead page's slug under the folders its live siblings use now (tools.recovery.siblings)."""

from __future__ import annotations

from pagetrail.tools.recovery.siblings import new_homes, transplants


def test_slug_goes_under_the_most_populated_sibling_folder_in_its_style():
    siblings = ["https://www.science.example/read/stars-are-born.html",
                "https://www.science.example/read/black-holes.html",
                "https://www.science.example/tag/physics/",
                "https://other.example/read/elsewhere.html"]  # another site: not a sibling
    assert transplants("https://www.science.example/universe-simulation.html", siblings) == [
        "https://www.science.example/read/universe-simulation.html",
        "https://www.science.example/tag/universe-simulation/",
    ]


def test_a_new_date_folder_and_a_dropped_extension():
    assert transplants("https://code.example/acme/yapapi",
                       ["https://code.example/acme/2022/05/other-project"]) == [
        "https://code.example/acme/2022/05/yapapi"]
    assert transplants("https://cook.example/2020/09/okra-stir-fry.html",
                       ["https://cook.example/lentil-soup"]) == ["https://cook.example/okra-stir-fry"]


def test_nothing_to_transplant():
    siblings = ["https://www.science.example/read/stars.html"]
    # A number or a generic word names no page; the dead page's own folder is not new.
    assert transplants("https://www.science.example/1927", siblings) == []
    assert transplants("https://www.science.example/news/index.html", siblings) == []
    assert transplants("https://www.science.example/read/old-article.html", siblings) == []
    assert transplants("https://www.science.example/page?id=3", siblings) == []
    assert transplants("not a url", siblings) == []


def test_a_number_part_goes_where_the_folders_siblings_have_none():
    siblings = ["https://film.example/2019/11/about-bugs/",
                "https://film.example/2019/11/winda-w-chmurach/",
                "https://film.example/2019/04/best-films-1202126991/"]
    # the dead page's own folder, restyled like its siblings: no number part
    assert transplants("https://film.example/2019/11/wild-rose-best-song-1202189233/",
                       siblings) == ["https://film.example/2019/11/wild-rose-best-song/",
                                     "https://film.example/2019/04/wild-rose-best-song-1202189233/"]
    # one sibling shows no style; a folder whose siblings carry numbers keeps them
    assert transplants("https://film.example/2019/04/wild-rose-best-song-1202189233/",
                       siblings[:1] + siblings[2:]) == [
        "https://film.example/2019/11/wild-rose-best-song-1202189233/"]


NAME_CHARS = 4  # policy.MOVED_HOST_NAME_CHARS


def test_the_dead_path_on_hosts_that_hold_its_folder():
    dead = "https://www.daily.example/news/city/harbour/bridge-reopens.html?src=rss"
    pages = [
        "https://www.daily-online.example/news/city/harbour/bridge-tolls.html",
        "https://www.daily-online.example/news/city/harbour/ferry-returns.html",
        "https://mirror.example/news/city/harbour/other.html",  # the site's own folder
        "https://www.daily.example/news/city/harbour/still-here.html",  # the dead host
        "https://deep.example/news/city/harbour/2020/story.html",  # a subfolder only
    ]
    assert new_homes(dead, pages, name_chars=NAME_CHARS) == [
        "https://www.daily-online.example/news/city/harbour/bridge-reopens.html?src=rss",
        "https://mirror.example/news/city/harbour/bridge-reopens.html?src=rss"]
    assert new_homes(dead, pages, name_chars=NAME_CHARS, limit=1) == [
        "https://www.daily-online.example/news/city/harbour/bridge-reopens.html?src=rss"]


def test_a_folder_many_sites_share_counts_only_on_the_sites_own_hosts():
    dead = "https://www.daily.example/2019/07/bridge-reopens/"
    pages = ["https://blog.other.example/2019/07/weekly-links/",  # /2019/07/: everyone's
             "https://news.daily.example/2019/07/ferry-returns/",  # a subdomain: named after it
             "https://dailyarchive.example/2019/07/tolls/"]  # named after the site
    assert new_homes(dead, pages, name_chars=NAME_CHARS) == [
        "https://news.daily.example/2019/07/bridge-reopens/",
        "https://dailyarchive.example/2019/07/bridge-reopens/"]
    assert new_homes("https://www.daily.example/news/bridge", ["https://x.example/news/a"],
                     name_chars=NAME_CHARS) == []


def test_no_new_home_for_a_root_page_or_a_malformed_url():
    pages = ["https://www.daily-online.example/x", "https://www.daily-online.example/"]
    assert new_homes("https://www.daily.example/", pages, name_chars=NAME_CHARS) == []
    assert new_homes("https://www.daily.example/bridge", pages, name_chars=NAME_CHARS) == []
    assert new_homes("http://[::1/x/y", pages, name_chars=NAME_CHARS) == []
    assert new_homes("https://www.daily.example/a/b/c", ["http://[::1/a/b/x", "mailto:x@y"],
                     name_chars=NAME_CHARS) == []


def test_a_page_address_with_credentials_is_never_copied():
    dead = "https://www.daily.example/news/city/harbour/bridge.html"
    pages = ["https://user:secret@www.daily-online.example/news/city/harbour/tolls.html",
             "https://www.daily-online.example:8443/news/city/harbour/ferry.html"]
    assert new_homes(dead, pages, name_chars=NAME_CHARS) == [
        "https://www.daily-online.example:8443/news/city/harbour/bridge.html"]


def test_the_word_separator_of_the_folders_siblings():
    siblings = ["https://org.example/about_the_team/", "https://org.example/contact_us/",
                "https://org.example/news/"]  # one word: no separator to read
    # the dead page's own folder, restyled: its siblings separate words by '_'
    assert transplants("https://org.example/about-us/", siblings) == [
        "https://org.example/about_us/"]
    # one sibling shows no style, and mixed separators show none
    assert transplants("https://org.example/about-us/", siblings[:1]) == []
    assert transplants("https://org.example/about-us/",
                       [*siblings, "https://org.example/our-story/"]) == []
