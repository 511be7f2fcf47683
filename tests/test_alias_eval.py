"""Evaluation on FABLE-shaped data: hand-made datasets in FABLE's JSON shapes (no FABLE data
is copied here), leave-one-out discipline, FABLE's baseline rescored, the CLI table."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pagetrail.tools.eval.alias_eval import (
    DatasetError,
    SiteLearner,
    evaluate_aliases,
    load_fable_dataset,
    own_move_indices,
    strict_key,
)
from pagetrail.tools.learning.aliases import KnownMove
from pagetrail.tools.net.urls import same_url


def gt_row(url: str, alias: str, inference: str | None = None,
           correct: bool = False) -> dict[str, object]:
    return {"url": url, "redirected_url": alias, "search": None, "hist_redir": None,
            "inference": inference, "found": bool(inference), "correct": correct}


def write_dataset(root: Path, truth: list[dict[str, object]], deleted: list[str],
                  aliases: list[tuple[str, str]] = (), titles: list[tuple[str, str]] = (),
                  ) -> Path:
    (root / "ground-truth").mkdir(parents=True)
    (root / "real-world").mkdir()
    with gzip.open(root / "ground-truth/ground_truth_500.json.gz", "wt") as fh:
        json.dump(truth, fh)
    (root / "ground-truth/deleted_500.json").write_text(json.dumps(
        [{"url": u, "search": None, "hist_redir": None, "inference": None} for u in deleted]))
    (root / "real-world/all_aliases.json").write_text(json.dumps(
        [{"url": u, "alias": a, "method": ["search"]} for u, a in aliases]))
    (root / "real-world/infer_alias.json").write_text(json.dumps(
        [{"netloc_dir": "x", "alias": [], "examples": [],
          "urlmeta": [[u, [t]] for u, t in titles]}]))
    return root


BLOG = [gt_row(f"https://blog.example/2016/0{i}/post-{w}/", f"https://blog.example/post-{w}/")
        for i, w in enumerate(["one", "two", "three", "four", "five"], start=1)]


def test_leave_one_out_never_learns_from_the_url_itself(tmp_path: Path) -> None:
    # A site whose only evidence is the URL's own alias (also repeated in the real-world
    # aliases under another spelling of the same URL): learning from it would be trivially
    # right; leave-one-out must leave nothing to learn from.
    lonely = "http://www.lonely.example:80/docs/Intro_Page.html"
    alias = "https://docs.lonely.example/intro-page/"
    data = write_dataset(tmp_path, [gt_row(lonely, alias)], [],
                         aliases=[("http://lonely.example/docs/Intro_Page.html", alias)])
    dataset = load_fable_dataset(data)
    learner = SiteLearner([KnownMove(lonely, alias), *dataset.real_world_moves])
    assert own_move_indices(lonely, learner.moves_for(lonely)) == {0, 1}
    assert learner.rank(lonely) == []
    report = evaluate_aliases(dataset)
    ours = report.rows[0]
    assert (ours.proposed, ours.correct) == (0, 0)


def test_leave_one_out_holds_when_the_site_teaches_something_else(tmp_path: Path) -> None:
    # The URL's own move (twice, spelled two ways) is an odd one; its folder's other moves
    # teach a different, confident rule. Were the own move used, its rule would reproduce the
    # truth and contradict the others; left out, the proposal follows the others — wrong
    # here, which proves the own alias never reached the learner.
    odd = "http://www.b.example/news/2016/odd-one.html"
    odd_alias = "https://b.example/special/odd-one/"
    others = [(f"http://www.b.example/news/2016/{w}.html", f"https://b.example/{w}/")
              for w in ("first", "second", "third")]
    data = write_dataset(tmp_path, [gt_row(odd, odd_alias)], [],
                         aliases=[*others, ("https://b.example:443/news/2016/odd-one.html",
                                            odd_alias)])
    report = evaluate_aliases(load_fable_dataset(data))
    ours = report.rows[0]
    assert (ours.proposed, ours.correct) == (1, 0)
    learner = SiteLearner(load_fable_dataset(data).real_world_moves)
    assert same_url(learner.rank(odd)[0][0].url, "https://b.example/odd-one/")


def test_learns_from_the_other_urls_of_the_site(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, BLOG, ["https://gone.example/a/b"])
    report = evaluate_aliases(load_fable_dataset(data))
    ours, ours_deleted = report.rows[0], report.rows[3]
    assert ours.cases == 5 and ours.correct == ours.proposed == 5
    assert ours_deleted.proposed == 0


def test_fable_baseline_is_rescored_with_both_normalisations(tmp_path: Path) -> None:
    truth = [
        gt_row("http://a.example:80/x", "https://www.a.example/y/", "http://a.example/y", True),
        gt_row("http://a.example:80/p", "https://a.example/q", "https://a.example/q/", True),
        gt_row("http://a.example:80/m", "https://a.example/n", "https://a.example/zzz", False),
        gt_row("http://a.example:80/k", "https://a.example/l"),
    ]
    report = evaluate_aliases(load_fable_dataset(write_dataset(tmp_path, truth, [])))
    fable_inf, fable_full = report.rows[1], report.rows[2]
    assert (fable_inf.proposed, fable_inf.correct, fable_inf.correct_strict) == (3, 2, 1)
    assert (fable_full.proposed, fable_full.correct, fable_full.wrong) == (3, 2, 1)
    assert strict_key("http://www.a.example:80/y/") == "www.a.example/y"


def test_titles_from_infer_alias_reach_the_cases(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, BLOG, [], titles=[(BLOG[0]["url"], "Post One")])
    dataset = load_fable_dataset(data)
    assert dataset.truth_cases[0].title == "Post One"
    assert dataset.truth_cases[1].title is None


def test_missing_or_malformed_dataset_is_a_named_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError):
        load_fable_dataset(tmp_path / "nowhere")
    (tmp_path / "ground-truth").mkdir()
    (tmp_path / "ground-truth/ground_truth_500.json").write_text('{"not": "a list"}')
    (tmp_path / "ground-truth/deleted_500.json").write_text("[]")
    with pytest.raises(DatasetError):
        load_fable_dataset(tmp_path)


def test_cli_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pagetrail.cli.main import main

    data = write_dataset(tmp_path, BLOG, [])
    assert main(["eval-aliases", str(data)]) == 0
    out = capsys.readouterr().out
    assert "pagetrail INFER (leave-one-out)" in out and "FABLE inference alone" in out
    assert main(["eval-aliases", str(data), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["correct"] == 5
    assert main(["eval-aliases", str(tmp_path / "missing")]) == 2


def test_top_k_upper_bound_counts_unconfirmed_proposals(tmp_path: Path) -> None:
    # Two folders moved two ways: the folder's rules disagree, nothing is confident, but the
    # true alias is among the proposals a live check could try. The upper-bound row counts
    # it; the confident row does not. A deleted URL of that folder gets proposals too: the
    # deleted upper-bound row shows what verification would have to reject.
    truth = [gt_row(f"http://t.example/city/food/{w}-place", f"https://t.example/city/{to}/{w}-place")
             for w, to in (("a", "bars"), ("b", "restaurants"), ("c", "bars"),
                           ("d", "restaurants"))]
    report = evaluate_aliases(load_fable_dataset(write_dataset(
        tmp_path, truth, ["http://t.example/city/food/e-place"])))
    rows = {r.system: r for r in report.rows}
    assert rows["pagetrail INFER (leave-one-out)"].correct == 0
    upper = rows["pagetrail INFER top-3, upper bound"]
    assert (upper.cases, upper.proposed, upper.correct) == (4, 4, 4)
    assert "upper bound" in upper.note or "at most" in upper.note
    deleted = rows["pagetrail INFER top-3 on deleted"]
    assert (deleted.proposed, deleted.correct) == (1, 0)
    assert rows["pagetrail INFER on deleted"].proposed == 0


def test_top_k_pairs_take_the_hit_else_the_first_proposal() -> None:
    from pagetrail.tools.eval.alias_eval import AliasCase, Judged, top_k_pairs
    from pagetrail.tools.learning.aliases import Proposal, Thresholds

    ranked = [[Proposal(f"https://x.example/{n}", "r", 1, 3, 0.25, 0, 0) for n in "abcd"]]
    cases = [AliasCase("http://x.example/old", "https://x.example/c/"),
             AliasCase("http://x.example/old", "https://x.example/d"),
             AliasCase("http://x.example/old", None)]
    pairs = top_k_pairs([Judged(c, ranked) for c in cases], Thresholds())
    assert pairs == [("https://x.example/c", "https://x.example/c/"),
                     ("https://x.example/a", "https://x.example/d"),
                     ("https://x.example/a", None)]


def test_sweep_scores_each_threshold_on_the_real_world_aliases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pagetrail.cli.main import main
    from pagetrail.tools.eval.alias_eval import SWEEP_GRID
    from pagetrail.tools.learning.aliases import DEFAULT_THRESHOLDS

    # Real-world moves: one folder moved by a prefix rule (learnable), one by renames that
    # no rule explains (nothing confident there).
    aliases = [(f"http://r.example/2019/0{i}/{w}.html", f"https://r.example/blog/2019/0{i}/{w}.html")
               for i, w in enumerate(["a", "b", "c", "d"], start=1)]
    aliases += [(f"http://r.example/docs/{w}", f"https://r.example/manual/{w}-{n}")
                for w, n in (("x", 7), ("y", 3), ("z", 9))]
    data = write_dataset(tmp_path, BLOG, [], aliases=aliases)
    assert main(["eval-aliases", str(data), "--sweep", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    swept = report["sweep"]
    assert len(swept) == len(SWEEP_GRID)
    # The sweep's point at the default thresholds scores what the report's real-world row does.
    real_world = next(r for r in report["rows"] if "real-world" in r["system"])
    default = [s for s in swept if s["thresholds"] == DEFAULT_THRESHOLDS.__dict__]
    assert default and all((s["proposed"], s["correct"]) ==
                           (real_world["proposed"], real_world["correct"]) for s in default)
    assert real_world["correct"] == 4 and real_world["proposed"] == 4
    assert main(["eval-aliases", str(data), "--sweep"]) == 0
    out = capsys.readouterr().out
    assert "threshold sweep on the real-world aliases" in out
    marks = [line[0] for line in out.splitlines() if line[:1] in "*=+" and line[:1]]
    # One best point and one defaults point (or one line that is both).
    assert sorted(marks) in (["*", "="], ["+"])


def test_best_swept_point_is_the_most_correct_above_the_precision_bar() -> None:
    from pagetrail.tools.eval.alias_eval import best_swept

    swept = [{"proposed": 100, "correct": 95, "precision": 0.95},
             {"proposed": 130, "correct": 116, "precision": 0.892},   # more, below the bar
             {"proposed": 110, "correct": 100, "precision": 0.909},
             {"proposed": 0, "correct": 0, "precision": 0.0}]
    assert best_swept(swept) is swept[2]
    assert best_swept(swept, min_precision=0.94) is swept[0]
    assert best_swept([{"proposed": 5, "correct": 1, "precision": 0.2}]) is None
