"""Alias inference: rules learned from known moves on hand-made sites; store of moves;
verification of proposals against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest
from loopback import Loopback, QuietHandler

from pagetrail.store import Store
from pagetrail.tools.errors import InvalidURL
from pagetrail.tools.learning.aliases import (
    KnownMove,
    Style,
    Thresholds,
    depth_free,
    explain_move,
    infer_aliases,
    learn_rules,
    propose,
    render,
    render_tail,
    structural,
    verify_proposals,
)
from pagetrail.tools.net.urls import same_url
from pagetrail.tools.recovery.memory import moves_for_site, record_move


def moves(*pairs: tuple[str, str] | tuple[str, str, str]) -> list[KnownMove]:
    return [KnownMove(*p) for p in pairs]


def best_url(known: list[KnownMove], dead: str, title: str | None = None) -> str | None:
    best = infer_aliases(known, dead, title=title).best
    return best.url if best else None


def test_date_folders_dropped() -> None:
    known = moves(
        ("https://blog.example/2016/09/first-post/", "https://blog.example/first-post/"),
        ("https://blog.example/2017/01/second-one/", "https://blog.example/second-one/"),
        ("https://blog.example/2015/12/third-thing/", "https://blog.example/third-thing/"),
    )
    assert same_url(best_url(known, "https://blog.example/2014/03/a-new-post/") or "",
                    "https://blog.example/a-new-post/")


def test_php_id_to_slug_from_the_archived_title() -> None:
    known = moves(
        ("http://news.example/article.php?id=12", "https://news.example/story/hello-world",
         "Hello World | Example News"),
        ("http://news.example/article.php?id=40", "https://news.example/story/rain-in-spain",
         "Rain in Spain | Example News"),
        ("http://news.example/article.php?id=41", "https://news.example/story/big-news-today",
         "Big News, Today! | Example News"),
    )
    got = best_url(known, "http://news.example/article.php?id=77", "Don't Panic | Example News")
    assert got == "https://news.example/story/dont-panic"
    # Without a title there is nothing to build the slug from: no confident guess.
    assert best_url(known, "http://news.example/article.php?id=77") is None


def test_host_renamed_and_extension_and_case_changes() -> None:
    known = moves(
        ("http://www.old.example/docs/Getting_Started.html",
         "https://docs.old.example/getting-started/"),
        ("http://www.old.example/docs/Api_Reference.html",
         "https://docs.old.example/api-reference/"),
        ("http://www.old.example/docs/FAQ.html", "https://docs.old.example/faq/"),
    )
    assert best_url(known, "http://www.old.example/docs/Release_Notes.html") == \
        "https://docs.old.example/release-notes/"


def test_dates_zero_padded_and_prefix_dropped() -> None:
    known = moves(
        ("http://j.example/index.cfm/2012/4/1/Some-Post", "https://j.example/2012/04/01/Some-Post"),
        ("http://j.example/index.cfm/2011/3/9/Other", "https://j.example/2011/03/09/Other"),
        ("http://j.example/index.cfm/2010/12/2/More", "https://j.example/2010/12/02/More"),
    )
    assert best_url(known, "http://j.example/index.cfm/2009/1/14/Third") == \
        "https://j.example/2009/01/14/Third"


def test_renamed_folder_is_mapped_only_where_it_recurs() -> None:
    known = moves(
        ("http://s.example/comic_books/issue/1/a", "https://s.example/comics/issue/1/a"),
        ("http://s.example/comic_books/issue/2/b", "https://s.example/comics/issue/2/b"),
        ("http://s.example/comic_books/issue/5/e", "https://s.example/comics/issue/5/e"),
        ("http://s.example/movies/title/9/z", "https://s.example/films/9-z"),
    )
    assert best_url(known, "http://s.example/comic_books/issue/3/c") == \
        "https://s.example/comics/issue/3/c"


def test_contradictory_moves_give_no_confident_proposal() -> None:
    known = moves(
        ("http://t.example/city/food/a-place", "https://t.example/city/bars/a-place"),
        ("http://t.example/city/food/b-place", "https://t.example/city/restaurants/b-place"),
        ("http://t.example/city/food/c-place", "https://t.example/city/bars/c-place"),
        ("http://t.example/city/food/d-place", "https://t.example/city/restaurants/d-place"),
    )
    result = infer_aliases(known, "http://t.example/city/food/e-place")
    assert result.best is None
    assert "disagree" in result.reason or "quality" in result.reason
    urls = {p.url for p in result.proposals}
    assert "https://t.example/city/bars/e-place" in urls  # still listed, for verification
    assert "https://t.example/city/restaurants/e-place" in urls


def test_unrelated_new_urls_teach_nothing() -> None:
    known = moves(
        ("https://f.example/node/1", "https://f.example/report/attacks-on-record"),
        ("https://f.example/node/2", "https://f.example/article/weak-states"),
    )
    assert infer_aliases(known, "https://f.example/node/3").proposals == []


def test_a_different_shape_is_not_vouched_for() -> None:
    known = moves(
        ("https://p.example/2016/07/x-post/", "https://p.example/x-post/"),
        ("https://p.example/2016/08/y-post/", "https://p.example/y-post/"),
        ("https://p.example/2016/09/w-post/", "https://p.example/w-post/"),
    )
    assert best_url(known, "https://p.example/2016/07/z-post/amp/") is None


def test_one_unrefuted_move_in_the_same_folder_is_enough() -> None:
    # FABLE's unit is the directory: one move from the dead URL's own folder, contradicted by
    # nothing, is trusted; the same single move seen only in another folder is not.
    known = moves(("http://d.example/dms/news/kosovo.shtml",
                   "https://med.d.example/news/kosovo.shtml"))
    assert best_url(known, "http://d.example/dms/news/sids.shtml") == \
        "https://med.d.example/news/sids.shtml"
    assert best_url(known, "http://d.example/english/people/pease.shtml") is None


def test_a_complex_single_move_is_not_enough() -> None:
    # One move explained only by several constants and renamed folders is an over-fit.
    known = moves(("http://m.example/client_service/digital/people/hyo_yeon",
                   "https://m.example/business-functions/digital/how-we-help/hyo-yeon"))
    result = infer_aliases(known, "http://m.example/client_service/digital/people/jo_kim")
    assert result.best is None


def test_date_folders_count_as_the_same_folder() -> None:
    # /2013/05/29/ and /2013/08/05/ are one folder for the folder-level rule: a single move
    # from another day still speaks for this one.
    known = moves(("http://blog.c.example/2013/05/29/secret-to-sales-copy/",
                   "https://www.c.example/secret-to-sales-copy/"))
    assert best_url(known, "http://blog.c.example/2014/01/02/pricing-pages/") == \
        "https://www.c.example/pricing-pages/"
    # Named folders still differ: /news/2014/… is not the folder /2013/….
    assert best_url(known, "http://blog.c.example/news/01/02/pricing-pages/") is None


def test_a_prefix_rewrite_is_vouched_for_by_deeper_moves_of_the_same_folder() -> None:
    known = moves(
        ("http://g.example/bassr/heath/iguide/faulkner.html",
         "https://faculty.g.example/bassr/heath/iguide/faulkner.html"),
        ("http://g.example/bassr/511/projects/waibel/towhom.htm",
         "https://faculty.g.example/bassr/511/projects/waibel/towhom.htm"),
    )
    assert best_url(known, "http://g.example/bassr/heath/detroit.html") == \
        "https://faculty.g.example/bassr/heath/detroit.html"
    # ...but not site-wide: another top folder may have gone elsewhere.
    assert best_url(known, "http://g.example/admissions/apply.html") is None


def test_an_extension_added_to_a_kept_tail_goes_on_the_last_segment() -> None:
    known = moves(
        ("http://c.example/blog/2012/03/30/ehdd-day", "https://old.c.example/blog/2012/03/30/ehdd-day.html"),
        ("http://c.example/blog/2012/05/09/mit-visit", "https://old.c.example/blog/2012/05/09/mit-visit.html"),
    )
    assert best_url(known, "http://c.example/blog/2013/01/02/new-year") == \
        "https://old.c.example/blog/2013/01/02/new-year.html"


def test_excluded_moves_are_never_used() -> None:
    known = moves(("http://e.example/a/one.html", "https://e.example/b/one/"))
    book = learn_rules(known)
    assert propose(book, "http://e.example/a/two.html",
                   thresholds=Thresholds(min_quality=0.5, margin=0.0)).best is not None
    assert propose(book, "http://e.example/a/two.html", exclude={0}).proposals == []


def test_a_new_host_with_a_folder_prefix_is_trusted_from_one_move_of_the_folder() -> None:
    # Host change + constant folder prefix (complexity 2) is one structural decision: one
    # unrefuted move from another date folder of the same shape vouches for it.
    known = moves(("http://blog.t.example/2009/12/calling-cards.html",
                   "https://www.t.example/blog/2009/12/calling-cards.html"))
    assert best_url(known, "http://blog.t.example/2010/10/contest-finalists.html") == \
        "https://www.t.example/blog/2010/10/contest-finalists.html"
    # ...but not from a folder of another name.
    assert best_url(known, "http://blog.t.example/about/contest-finalists.html") is None


def test_two_renamed_folders_are_trusted_from_one_move_of_the_folder() -> None:
    known = moves(("http://h.example/events/conferences/2/travel",
                   "https://h.example/events/plone-conferences/vienna-2004/travel"))
    assert best_url(known, "http://h.example/events/conferences/2/hotels") == \
        "https://h.example/events/plone-conferences/vienna-2004/hotels"


def test_a_restyled_rename_needs_two_unrefuted_moves() -> None:
    # A renamed folder + lower-cased slug (complexity 2) is not structural: one move is an
    # anecdote, two that agree with nothing against them are a rule.
    first = ("http://p.example/briefing-papers/SN05609",
             "https://lib.p.example/research-briefings/sn05609/")
    second = ("http://p.example/briefing-papers/SN05783",
              "https://lib.p.example/research-briefings/sn05783/")
    dead = "http://p.example/briefing-papers/SN06183"
    assert best_url(moves(first), dead) is None
    assert best_url(moves(first, second), dead) == "https://lib.p.example/research-briefings/sn06183/"
    # A counter-example in the folder takes the trust away again.
    third = ("http://p.example/briefing-papers/SN01234", "https://lib.p.example/archive/x/")
    assert best_url(moves(first, second, third), dead) is None


def test_structural_rules_rename_folders_or_rewrite_a_prefix_only() -> None:
    def kinds(old: str, new: str) -> dict[str, bool]:
        return {t.describe(): structural(t) for t in explain_move(KnownMove(old, new))}

    prefix = kinds("http://blog.t.example/2009/12/x.html", "https://www.t.example/blog/2009/12/x.html")
    assert prefix["www.t.example/blog/seg[0:]"] is True
    assert prefix["www.t.example/blog/seg[-3]/seg[-2]/seg[-1]"] is False  # constant, not a prefix
    renamed = kinds("http://p.example/briefing-papers/SN1", "https://p.example/research/sn1")
    assert renamed["host/seg[0]:briefing-papers->research/seg[-1]{lower}"] is False  # restyled
    maps = kinds("http://h.example/a/b/c", "https://h.example/x/y/c")
    assert maps["host/seg[0]:a->x/seg[1]:b->y/seg[-1]"] is True


def test_path_folders_become_a_query() -> None:
    known = moves(
        ("http://www.a.example/archive/firesprings/2009/05",
         "https://archive.a.example/newsletter/firesprings?publish_at_year_month=2009-05"),
        ("http://www.a.example/archive/whoisjeff/2009/08",
         "https://archive.a.example/newsletter/whoisjeff?publish_at_year_month=2009-08"),
        ("http://www.a.example/archive/momnews/2010/01",
         "https://archive.a.example/newsletter/momnews?publish_at_year_month=2010-01"),
    )
    assert best_url(known, "http://www.a.example/archive/murderyourjob/2009/02") == \
        "https://archive.a.example/newsletter/murderyourjob?publish_at_year_month=2009-02"


def test_depth_free_rules_are_prefix_rewrites_only() -> None:
    move = KnownMove("http://g.example/a/b/c.html", "https://new.g.example/b/c.html")
    described = {t.describe(): depth_free(t) for t in explain_move(move)}
    assert described["new.g.example/seg[1:]"] is True
    assert described["new.g.example/seg[-2]/seg[-1]"] is False


def test_render_styles() -> None:
    assert render("15002-Sullivan-Library-One.html",
                  Style(ext="strip", strip_lead_number=True, lower=True)) == "sullivan-library-one"
    assert render("INSERT_DELAYED.html", Style(sep="-", lower=True)) == "insert-delayed.html"
    assert render("7", Style(zpad=2)) == "07"
    # In a kept tail an extension change is the last segment's; folders keep their dots.
    assert render_tail(["v2.1", "guide", "intro"], Style(ext=".html")) == \
        ["v2.1", "guide", "intro.html"]


# --- store --------------------------------------------------------------------------------

def test_record_move_is_idempotent_and_per_site(store: Store) -> None:
    first = record_move(store, "http://www.a.example/x", "https://a.example/y", source="pick")
    again = record_move(store, "http://www.a.example/x", "https://a.example/y", source="pick")
    assert first is not None and again is not None
    assert len(moves_for_site(store, "a.example")) == 1  # the same evidence, stored once
    record_move(store, "http://a.example/p", "https://a.example/q", source="live redirect")
    record_move(store, "http://b.example/p", "https://b.example/q", source="archived redirect")
    assert record_move(store, "http://a.example/same", "https://a.example/same/",
                       source="pick") is None
    site = moves_for_site(store, "https://a.example/anything")
    assert {(m.old_url, m.source) for m in site} == {
        ("http://www.a.example/x", "pick"), ("http://a.example/p", "live redirect")}
    assert [m.old_url for m in moves_for_site(store, "b.example")] == ["http://b.example/p"]


def test_record_move_rejects_bad_input(store: Store) -> None:
    with pytest.raises(InvalidURL):
        record_move(store, "ftp://a.example/x", "https://a.example/y", source="pick")
    with pytest.raises(InvalidURL):
        record_move(store, "http://a.example/x", "https://a.example/y", source="gossip")


def test_cli_infers_from_the_store(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    from pagetrail.cli.main import main

    for slug in ("one-post", "two-post", "three-post"):
        record_move(store, f"https://c.example/2019/05/{slug}/", f"https://c.example/{slug}/",
                    source="confirmed recovery")
    assert main(["aliases", "infer", "https://c.example/2020/01/four-post/", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"https://c.example/four-post/"' in out and '"confident": true' in out


# --- verification -------------------------------------------------------------------------

class _Site(QuietHandler):
    pages: ClassVar[dict[str, str]] = {"/new/alive": "<html><title>Alpine lakes</title><body>alpine lakes hiking "
                           "trails water</body></html>",
             "/new/other": "<html><body>stock market prices bonds</body></html>"}

    def do_GET(self) -> None:
        body = self.pages.get(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        data = (body or "not found").encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def site() -> Iterator[str]:
    server = Loopback(_Site)
    yield server.base
    server.close()


async def test_verify_proposals_fetches_and_compares(site: str) -> None:
    from pagetrail.tools.learning.aliases import Proposal
    from pagetrail.tools.net.fetch import Fetcher
    from pagetrail.tools.settings import Settings

    proposals = [Proposal(f"{site}/new/{name}", "r", 2, 2, 0.67, 0, 0)
                 for name in ("alive", "gone", "other")]
    settings = Settings(allow_hosts=["127.0.0.1"], retries=0)  # type: ignore[call-arg]
    async with Fetcher(settings) as fetcher:
        checked = await verify_proposals(proposals, fetcher,
                                         memento_doc="Alpine lakes: hiking trails by the water")
    assert [v.ok for v in checked] == [True, False, False]
    assert checked[1].status == 404
    assert checked[0].similarity is not None and checked[0].similarity > checked[2].similarity  # type: ignore[operator]


# ---------------------------------------------------------------- names moved inside a segment or a query


def test_a_slug_moved_into_a_path_parameter_is_learned_from_two_siblings() -> None:
    # A shape no development world has: the slug inside a path parameter (;id=).
    known = moves(
        ("https://shop.example/guides/pick-a-tent.html",
         "https://shop.example/guides/view;id=pick-a-tent"),
        ("https://shop.example/guides/dry-your-boots.html",
         "https://shop.example/guides/view;id=dry-your-boots"),
    )
    inference = infer_aliases(known, "https://shop.example/guides/pack-light.html")
    assert inference.proposals
    top = inference.proposals[0]
    assert top.url == "https://shop.example/guides/view;id=pack-light"
    assert top.support == 2


def test_one_move_into_a_path_parameter_is_not_trusted_alone() -> None:
    known = moves(("https://shop.example/guides/pick-a-tent.html",
                   "https://shop.example/guides/view;id=pick-a-tent"))
    assert best_url(known, "https://shop.example/guides/pack-light.html") is None


def test_a_slug_moved_into_a_query_on_a_new_host_drops_its_extension() -> None:
    known = moves(
        ("https://www.paper.example/print/d-1001.html",
         "https://www.paperhq.example/print/article.php?beitrag=d-1001"),
        ("https://www.paper.example/print/d-2002.html",
         "https://www.paperhq.example/print/article.php?beitrag=d-2002"),
    )
    dead = "https://www.paper.example/print/d-3003.html"
    want = "https://www.paperhq.example/print/article.php?beitrag=d-3003"
    # Two siblings: proposed first (to be fetched and ranked), not yet trusted unseen...
    top = infer_aliases(known, dead).proposals[0]
    assert (top.url, top.support, top.confident) == (want, 2, False)
    # ...a third makes the rule sure.
    known.append(KnownMove("https://www.paper.example/print/d-4004.html",
                           "https://www.paperhq.example/print/article.php?beitrag=d-4004"))
    assert best_url(known, dead) == want
