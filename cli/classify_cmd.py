"""`pagetrail classify train|eval|predict` and `pagetrail related URL`."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from pagetrail import MAX_RELATED, recommend_archived
from pagetrail.cli.common import UsageError, add_json_flag, parse_date, print_json, run_async


def register(sub: argparse._SubParsersAction) -> None:
    from pagetrail.lab import (
        CLASSIFIER_KINDS,
        DEFAULT_CLASSIFIER_KIND,
        DEFAULT_CLASSIFIER_VARIANT,
        URI_TOKEN_VARIANTS,
    )

    classify = sub.add_parser(
        "classify", help="topic of a URL from its address (train on your own DMOZ-style data)"
    )
    actions = classify.add_subparsers(dest="classify_action", metavar="ACTION")

    train = actions.add_parser("train", help="build the classifier into the data directory")
    train.add_argument("--data", required=True, help="url<TAB>category file, dir or DMOZ RDF")
    train.add_argument("--variant", default=DEFAULT_CLASSIFIER_VARIANT,
                       choices=sorted(URI_TOKEN_VARIANTS))
    train.add_argument("--model", default=DEFAULT_CLASSIFIER_KIND, choices=CLASSIFIER_KINDS)
    train.add_argument("--path", default="drop", choices=("drop", "keep"),
                       help="drop: one example per host (default); keep: whole URLs")
    add_json_flag(train)
    train.set_defaults(func=_train)

    evaluate = actions.add_parser("eval", help="k-fold micro/macro F1 per tokenisation variant")
    evaluate.add_argument("--data", required=True)
    evaluate.add_argument("--folds", type=int, default=10)
    evaluate.add_argument("--variants", default="all",
                          help="comma-separated variant names, or 'all', or 'paper'")
    evaluate.add_argument("--models", default=",".join(CLASSIFIER_KINDS),
                          help="comma-separated: nb, linear")
    add_json_flag(evaluate)
    evaluate.set_defaults(func=_eval)

    predict = actions.add_parser("predict", help="first-level category of a URL")
    predict.add_argument("url")
    add_json_flag(predict)
    predict.set_defaults(func=_predict)
    classify.set_defaults(func=lambda args: (classify.print_help(), 2)[1])

    related = sub.add_parser(
        "related", help="archived pages related to a lost URL (same topic; not replacements)"
    )
    related.add_argument("url")
    related.add_argument("--at", help="requested date (YYYY-MM-DD or ISO 8601); default now")
    related.add_argument("--limit", type=int, default=10)
    add_json_flag(related)
    related.set_defaults(func=_related)


def _train(args: argparse.Namespace) -> int:
    from pagetrail.lab import train_classifier

    report = train_classifier(args.data, variant=args.variant, kind=args.model,
                              path_mode=args.path)
    if args.json:
        print_json(asdict(report))
        return 0
    print(f"trained {report.kind} on {report.examples} examples ({report.features} features, "
          f"{report.seconds}s) → {report.directory}")
    print("categories: " + ", ".join(f"{c} {n}" for c, n in report.categories.items()))
    print(f"data sha256 {report.data_sha256[:16]}…  model sha256 {report.model_sha256[:16]}…")
    return 0


def _parse_list(text: str, allowed: list[str], what: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise UsageError(f"unknown {what} {', '.join(unknown) or '(none)'}; "
                         f"choose from {', '.join(allowed)}")
    return names


def _eval(args: argparse.Namespace) -> int:
    import time

    from pagetrail.lab import (
        CLASSIFIER_KINDS,
        CLASSIFIER_PAPER_TABLE6,
        URI_TOKEN_VARIANTS,
        evaluate_classifier,
        load_classifier_examples,
    )

    if args.folds < 2:
        raise UsageError("--folds must be at least 2")
    if args.variants == "all":
        variants = list(URI_TOKEN_VARIANTS)
    elif args.variants == "paper":
        variants = list(CLASSIFIER_PAPER_TABLE6)
    else:
        variants = _parse_list(args.variants, list(URI_TOKEN_VARIANTS), "variant")
    kinds = _parse_list(args.models, list(CLASSIFIER_KINDS), "model")
    started = time.perf_counter()
    examples = load_classifier_examples(args.data)
    rows = evaluate_classifier(examples, variants=variants, kinds=kinds,  # type: ignore[arg-type]
                               folds=args.folds)
    total = round(time.perf_counter() - started, 1)
    if args.json:
        print_json({
            "examples": len(examples.urls), "folds": args.folds, "seconds": total,
            "rows": [asdict(r) | {"paper": CLASSIFIER_PAPER_TABLE6.get(r.variant)} for r in rows],
        })
        return 0
    print(f"{len(examples.urls)} examples (one per host; {examples.ambiguous_hosts} ambiguous "
          f"hosts dropped), {args.folds}-fold stratified CV, {total}s")
    print(f"{'variant':34} {'model':6} {'micro':>6} {'macro':>6} {'feats':>8} {'sec':>6}   "
          "paper F1/micro/macro")
    for r in rows:
        paper = CLASSIFIER_PAPER_TABLE6.get(r.variant)
        ref = "/".join(f"{v:.2f}" for v in paper) if paper else "—"
        print(f"{r.variant:34} {r.kind:6} {r.micro_f1:6.3f} {r.macro_f1:6.3f} "
              f"{r.features:8d} {r.seconds:6.1f}   {ref}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    from pagetrail import validate_url
    from pagetrail.lab import classify_url, load_classifier, load_classifier_candidates

    url = validate_url(args.url)
    prediction = classify_url(url, model=load_classifier(), candidates=load_classifier_candidates())
    if args.json:
        print_json(prediction.to_dict())
        return 0
    top = ", ".join(f"{c} {p:.2f}" for c, p in prediction.ranking[:3])
    print(f"{prediction.category}  ({prediction.source}; {top})")
    return 0


def _related(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_RELATED:
        raise UsageError(f"--limit must be between 1 and {MAX_RELATED}")
    result = run_async(recommend_archived(args.url, at=parse_date(args.at, option="--at"),
                                          limit=args.limit))
    if args.json:
        print_json(result)
        return 0
    print(f"related archived pages for {result.url} — topic {result.category} "
          f"({result.category_source}); these are related pages, not replacements")
    if not result.items:
        print("  none archived among the candidates checked")
    for i, item in enumerate(result.items, 1):
        c = item.components
        print(f"{i:2}. {item.score:.3f}  {item.memento_url}")
        print(f"      t={c['temporal']:.2f} p={c['popularity']:.2f} s={c['uri_similarity']:.2f} "
              f"q={_fmt(c['archival_quality'])}  captures={item.captures}")
    return 0


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"
