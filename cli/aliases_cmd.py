"""`pagetrail aliases infer URL` and `pagetrail eval-aliases DATA_DIR`: site-level alias
inference from known moves, and its evaluation on FABLE's dataset."""

from __future__ import annotations

import argparse

from pagetrail.cli.common import add_json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    aliases = sub.add_parser("aliases", help="infer where a dead URL moved from its site's moves")
    verbs = aliases.add_subparsers(dest="aliases_command", metavar="VERB", required=True)
    infer = verbs.add_parser("infer", help="propose new URLs from the store's known moves")
    infer.add_argument("url", help="the dead URL")
    infer.add_argument("--title", default=None, help="its archived title, when known")
    add_json_flag(infer)
    infer.set_defaults(func=infer_handler)

    evaluate = sub.add_parser(
        "eval-aliases", help="evaluate alias inference on FABLE's dataset (leave-one-out)")
    evaluate.add_argument("data", help="FABLE's dataset/ directory (ground-truth/, real-world/)")
    evaluate.add_argument("--min-quality", type=float, default=None)
    evaluate.add_argument("--margin", type=float, default=None)
    evaluate.add_argument("--min-support", type=int, default=None)
    evaluate.add_argument("--folder-min-quality", type=float, default=None,
                          help="quality bar for a simple, unrefuted rule from the URL's folder")
    evaluate.add_argument("--folder-max-complexity", type=int, default=None)
    evaluate.add_argument("--structural-max-complexity", type=int, default=None,
                          help="complexity bar in the URL's folder for an unrefuted structural "
                               "rule (renamed folders, host + folder prefix)")
    evaluate.add_argument("--repeated-min-support", type=int, default=None,
                          help="...or for an unrefuted rule that this many folder moves support")
    evaluate.add_argument("--real-world", action="store_true",
                          help="also score leave-one-out on FABLE's 4,680 real-world aliases")
    evaluate.add_argument("--sweep", action="store_true",
                          help="score a grid of thresholds on the real-world aliases (the dev "
                               "set; implies --real-world, ~10 min): how the defaults were chosen")
    add_json_flag(evaluate)
    evaluate.set_defaults(func=eval_handler)


def infer_handler(args: argparse.Namespace) -> int:
    from pagetrail import open_store, validate_url
    from pagetrail.lab import KnownMove, infer_aliases, moves_for_site

    url = validate_url(args.url)
    records = moves_for_site(open_store(), url)
    moves = list({(r.old_url, r.new_url): KnownMove(r.old_url, r.new_url, source=r.source)
                  for r in records}.values())
    result = infer_aliases(moves, url, title=args.title)
    if args.json:
        print_json({"url": url, "moves": len(moves), "reason": result.reason,
                    "proposals": [p.__dict__ for p in result.proposals]})
        return 0
    print(f"{url}: {len(moves)} known move(s) on this site — {result.reason}")
    for p in result.proposals:
        flag = "*" if p.confident else " "
        print(f" {flag} {p.url}  support={p.support}/{p.applicable} q={p.quality:.2f}  {p.rule}")
    return 0 if result.best else 1


def eval_handler(args: argparse.Namespace) -> int:
    from pagetrail.lab import (
        ALIAS_SWEEP_GRID,
        AliasThresholds,
        evaluate_aliases,
        load_fable_dataset,
    )

    given = {name: getattr(args, name) for name in (
        "min_support", "min_quality", "margin", "folder_min_quality", "folder_max_complexity",
        "structural_max_complexity", "repeated_min_support")}
    thresholds = AliasThresholds(**{k: v for k, v in given.items() if v is not None})
    report = evaluate_aliases(load_fable_dataset(args.data), thresholds,
                              real_world=args.real_world or args.sweep,
                              sweep=ALIAS_SWEEP_GRID if args.sweep else ())
    if args.json:
        print_json(report.to_dict())
        return 0
    print(format_table(report))
    if report.sweep:
        print()
        print(format_sweep(report.sweep))
    return 0


def format_sweep(swept) -> str:  # type: ignore[no-untyped-def]
    """The swept thresholds on the real-world aliases, most correct first; `*` marks the most
    correct point at precision >= 0.9, `=` the defaults (`+` when both)."""
    from pagetrail.lab import ALIAS_SWEEP_MIN_PRECISION, DEFAULT_ALIAS_THRESHOLDS, best_swept

    best = best_swept(swept)
    lines = [f"threshold sweep on the real-world aliases (* most correct at precision ≥ "
             f"{ALIAS_SWEEP_MIN_PRECISION}, = the defaults, + both)",
             f"  {'quality':>7} {'margin':>6} {'struct.c':>8} {'repeat':>6} {'proposed':>8} "
             f"{'correct':>7} {'precision':>9}"]
    for s in sorted(swept, key=lambda s: (-s["correct"], -s["precision"])):
        t = s["thresholds"]
        default = t == DEFAULT_ALIAS_THRESHOLDS.__dict__
        mark = "+" if s is best and default else "*" if s is best else "=" if default else " "
        lines.append(f"{mark} {t['min_quality']:>7} {t['margin']:>6} "
                     f"{t['structural_max_complexity']:>8} {t['repeated_min_support']:>6} "
                     f"{s['proposed']:>8} {s['correct']:>7} {s['precision']:>9.3f}")
    return "\n".join(lines)


def format_table(report) -> str:  # type: ignore[no-untyped-def]
    header = (f"{'system':<42} {'cases':>5} {'proposed':>8} {'correct':>7} {'wrong':>5} "
              f"{'precision':>9} {'coverage':>8} {'strict':>6}")
    lines = [header, "-" * len(header)]
    for r in report.rows:
        strict = "" if r.correct_strict is None else str(r.correct_strict)
        lines.append(f"{r.system:<42} {r.cases:>5} {r.proposed:>8} {r.correct:>7} {r.wrong:>5} "
                     f"{r.precision:>9.3f} {r.coverage:>8.3f} {strict:>6}")
    t = report.thresholds
    lines.extend(f"  {r.system}: {r.note}" for r in report.rows
                 if "upper bound" in r.system or "top-" in r.system)
    lines.append(f"correct = equal after normalize_url (http≡https, www., trailing /); strict = "
                 f"no scheme/:80/trailing / only. thresholds: quality≥{t.min_quality} "
                 f"support≥{t.min_support} margin={t.margin}, in the URL's folder "
                 f"quality≥{t.folder_min_quality} if unrefuted and complexity≤"
                 f"{t.folder_max_complexity} (≤{t.structural_max_complexity} if structural or "
                 f"≥{t.repeated_min_support} moves support it); {report.seconds:.1f} s")
    return "\n".join(lines)
