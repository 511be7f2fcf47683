"""`pagetrail eval WORLD [WORLD ...]` — recover every case of testbed worlds and score the answers.

Every world is validated before anything starts; the testbed is started for the run (or, with
`--running`, the settings already in the environment are used, e.g. a `pagetrail testbed`
left serving); each method runs with its own throw-away cache database, so no method is
scored on another's cached work. The report follows testbed/FORMAT.md. With several worlds
(or `--with-noweb`: each world once more without web search) the report is the multi-world
report (tools/eval/multiworld.py): each world, the mean and the worst; a world whose run is
void (a crash, a testbed that did not start, services down) is named and the exit status is 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pagetrail import Settings, get_settings
from pagetrail.cli.common import UsageError, add_json_flag, print_json, run_async
from pagetrail.lab import (
    EVAL_METHODS,
    NOWEB_ENGINES,
    CaseResult,
    EngineChoice,
    World,
    WorldRun,
    build_eval_report,
    build_multiworld_report,
    eval_feature_rows,
    expand_methods,
    load_world,
    resolve_eval_engine,
    run_evaluation,
    stopped_at_budget,
    void_reason,
)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval", help="recover every case of testbed worlds and score the answers",
        description="Serve each WORLD on loopback, recover every case, report what the user "
                    "is told (answered right / answered wrong, by category, with and without "
                    "an archived copy, by confidence band), success@1/@10, MRR, abstention, "
                    "alive-misjudged and cost (testbed/FORMAT.md); with "
                    "several worlds, each world, their mean and the worst.",
    )
    parser.add_argument("worlds", metavar="WORLD", nargs="+",
                        help="testbed world directories, evaluated one after the other")
    parser.add_argument("--with-noweb", action="store_true",
                        help="also evaluate each world without web search (engines "
                             f"{','.join(NOWEB_ENGINES)}) and report both")
    parser.add_argument(
        "--method", default="full",
        help=f"one evidence source/query method ({', '.join(EVAL_METHODS)}), "
             "or 'all' for each method alone plus the full pipeline (default: full)")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="only the first N cases")
    parser.add_argument("--cases", default=None, metavar="IDS",
                        help="only these cases, comma-separated ids (e.g. the misses of an "
                             "earlier run: c0016,c0043); a world without one of them is an "
                             "error")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N",
                        help="cases recovered at once (default 8)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="time limit per case (default: 4 × recovery_seconds)")
    parser.add_argument("--report", type=Path, default=None, metavar="FILE.md",
                        help="also write the report as Markdown")
    parser.add_argument("--engines", default=None, metavar="LIST",
                        help="search engines to use, comma-separated (e.g. site,cdx,local: "
                             "no web search); default: the testbed's (site,cdx,searxng,local)")
    parser.add_argument("--features", type=Path, default=None, metavar="FILE.jsonl",
                        help="also write every ranked live candidate of every case as a JSON "
                             "line: its component scores and whether it is the right page")
    parser.add_argument("--running", action="store_true",
                        help="do not start a testbed: use the one the current settings point at")
    add_json_flag(parser)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    args.case_ids = parse_case_ids(args.cases)
    if args.features is not None and not args.features.parent.is_dir():
        # said before the run, not after an hour of it
        raise UsageError(f"--features: cannot write {args.features}: no directory "
                         f"{args.features.parent}")
    methods = expand_methods(args.method)
    args.engine_list = parse_engines(args.engines)
    if args.running and len(args.worlds) > 1:
        raise UsageError("--running uses the one testbed already serving: give one world")
    # Every world is read and checked before any is served: a malformed one stops here,
    # naming file and line, before an hour of evaluation of the others.
    worlds = [load_world(path) for path in args.worlds]
    names = [world.name for world in worlds]
    if len(set(names)) != len(names):
        raise UsageError(f"two worlds have the same name: {', '.join(names)}")
    for world, path in zip(worlds, args.worlds, strict=True):
        if not world.cases:
            raise UsageError(f"{path}: the world has no cases")
        if args.case_ids:
            missing = sorted(set(args.case_ids) - {case.raw["id"] for case in world.cases})
            if missing:
                raise UsageError(f"{path}: no case {', '.join(missing)}")
    choice = resolve_eval_engine()
    if choice.label != "pipeline" and choice.detail:
        print(f"pagetrail: warning: {choice.detail}", file=sys.stderr)
    if len(worlds) == 1 and not args.with_noweb:
        return _one_world(worlds[0], methods, choice, args)
    return _several_worlds(worlds, methods, choice, args)


def parse_case_ids(text: str | None) -> list[str] | None:
    """`--cases c1,c2` as a list of ids (None: every case)."""
    if text is None:
        return None
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise UsageError("--cases needs at least one case id")
    return ids


def _cases(world: World, args: argparse.Namespace) -> list[dict[str, Any]]:
    cases = [case.raw for case in world.cases]
    if args.case_ids:
        wanted = set(args.case_ids)
        cases = [case for case in cases if case["id"] in wanted]
    return cases[: args.limit]


def _one_world(world: World, methods: list[str], choice: EngineChoice,
               args: argparse.Namespace) -> int:
    cases = _cases(world, args)
    results = run_async(_evaluate(world, cases, methods, choice, args, args.engine_list))
    report = build_eval_report(world.name, cases, results, method_order=methods,
                               world_format=world.format)
    if args.engine_list is not None:
        report["engines"] = args.engine_list
    if args.features:
        write_features(args.features, eval_feature_rows(world.name, cases, results))
    report_text = render_markdown(report, engine=choice.label)
    if args.report:
        args.report.write_text(report_text, encoding="utf-8")
    if args.json:
        print_json(report)
    else:
        print_terminal(report, engine=choice.label)
    errors = report["errors"]
    if errors["n"]:
        # Always on stderr (also with --json): a run with failed cases must not pass unseen.
        print(f"pagetrail: {error_line(errors)}", file=sys.stderr)
    if errors["not_behaviour"] or all(r.error for r in results):
        print("pagetrail: error: cases failed for reasons other than the world's behaviour "
              f"({', '.join(errors['not_behaviour']) or 'every case failed'}): the figures "
              "above are not pagetrail's", file=sys.stderr)
        return 1
    void = void_reason(WorldRun(world.name, report=report))
    if void:
        print(f"pagetrail: error: {void}: the figures above are not pagetrail's",
              file=sys.stderr)
        return 1
    return 0


def _several_worlds(worlds: list[World], methods: list[str], choice: EngineChoice,
                    args: argparse.Namespace) -> int:
    # `--engines` without a web engine is the no-web mode, and is named so in the report.
    noweb_only = args.engine_list is not None and set(args.engine_list) <= set(NOWEB_ENGINES)
    modes: list[tuple[str, list[str] | None]] = [
        ("noweb" if noweb_only else "web", args.engine_list)]
    if args.with_noweb and not noweb_only:
        modes.append(("noweb", list(NOWEB_ENGINES)))
    runs: list[WorldRun] = []
    rows: list[dict[str, Any]] = []
    for world in worlds:
        cases = _cases(world, args)
        for mode, engines in modes:
            print(f"pagetrail: evaluating {world.name} ({mode}, {len(cases)} cases)",
                  file=sys.stderr)
            try:
                results = run_async(_evaluate(world, cases, methods, choice, args, engines))
            except UsageError:
                raise  # the same for every world: not one world's failure
            except Exception as exc:  # a crash or a testbed that did not start: named in the
                # report and on stderr, and the run exits 1 (the other worlds still run)
                reason = f"{type(exc).__name__}: {str(exc)[:300]}"
                print(f"pagetrail: error: world {world.name} ({mode}): {reason}",
                      file=sys.stderr)
                runs.append(WorldRun(world.name, mode, failure=reason, engines=engines))
                continue
            report = build_eval_report(world.name, cases, results, method_order=methods,
                                       world_format=world.format)
            if engines is not None:
                report["engines"] = engines
            rows += [{**row, "mode": mode} for row in eval_feature_rows(world.name, cases, results)]
            runs.append(WorldRun(world.name, mode, report=report, engines=engines))
    if args.features:
        write_features(args.features, rows)
    multi = build_multiworld_report(runs)
    text = render_multiworld_markdown(multi, engine=choice.label)
    if args.report:
        args.report.write_text(text, encoding="utf-8")
    if args.json:
        print_json(multi)
    else:
        print(text)
    for failed in multi["failed"]:
        print(f"pagetrail: error: world {failed['world']} ({failed['mode']}): "
              f"{failed['reason']}: its figures are not pagetrail's", file=sys.stderr)
    return 1 if multi["failed"] else 0


def write_features(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """The feature rows as JSON lines (tools/eval/features.py); a path that cannot be written
    is a usage error, named."""
    try:
        with path.open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise UsageError(f"--features: cannot write {path}: {exc.strerror or exc}") from exc
    print(f"pagetrail: {len(rows)} candidate rows written to {path}", file=sys.stderr)


def parse_engines(option: str | None) -> list[str] | None:
    """`--engines a,b` → the engine names, checked against the known engines."""
    if option is None:
        return None
    from pagetrail import search_engines

    known = search_engines()  # built-ins and installed plugins
    names = [name.strip().lower() for name in option.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if not names or unknown:
        raise UsageError(f"--engines: unknown engine(s) {', '.join(unknown) or '(none given)'}; "
                         f"known: {', '.join(known)}")
    return list(dict.fromkeys(names))


def error_line(errors: Mapping[str, Any]) -> str:
    """'3 runs failed: ImportError 2, timeout 1' (largest group first)."""
    groups = ", ".join(f"{kind} {count}" for kind, count in errors["by_type"].items())
    return f"{errors['n']} runs failed: {groups}"


async def _evaluate(world: World, cases: list[dict[str, Any]], methods: list[str],
                    choice: EngineChoice, args: argparse.Namespace,
                    engines: list[str] | None) -> list[CaseResult]:
    with tempfile.TemporaryDirectory(prefix="pagetrail-eval-") as scratch, \
            _progress(len(cases) * len(methods)) as advance:
        if args.running:
            return await _run(get_settings(), scratch, cases, methods, choice, args, engines,
                              advance)
        try:
            from pagetrail.lab import Testbed
        except ImportError as exc:
            raise UsageError(f"the testbed runner is not installed ({exc}); "
                             "use --running with a testbed already serving") from exc
        async with Testbed(world) as testbed:
            env = dict(testbed.env)
            if engines is not None:
                env["PAGETRAIL_SEARCH_ENGINES"] = ",".join(engines)
            with _environment(env):
                return await _run(testbed.settings(), scratch, cases, methods, choice, args,
                                  engines, advance)


async def _run(settings: Settings, scratch: str, cases: list[dict[str, Any]], methods: list[str],
               choice: EngineChoice, args: argparse.Namespace, engines: list[str] | None,
               advance: Callable[[CaseResult], None]) -> list[CaseResult]:
    if engines is not None:
        settings = settings.model_copy(update={"search_engines": engines})

    def settings_for(method: str) -> Settings:
        # A fresh database per method: a method is never scored on another's cached searches
        # or on moves learnt while another method ran.
        safe = "".join(ch if ch.isalnum() else "_" for ch in method)
        return settings.model_copy(
            update={"database_url": f"sqlite:///{Path(scratch) / (safe + '.db')}"})

    stores: list[Any] = []

    def store_for(method: str) -> Any:
        from pagetrail import Store

        # Not open_store(): these throw-away databases must not stay in its process cache.
        stores.append(Store(settings_for(method).database_url))
        return stores[-1]

    timeout = args.timeout or max(60.0, 4 * settings.recovery_seconds)
    try:
        return await run_evaluation(cases, methods=methods, settings_for=settings_for,
                                    store_for=store_for, engine=choice,
                                    concurrency=args.concurrency, timeout=timeout,
                                    on_result=advance)
    finally:
        for store in stores:
            store.dispose()


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """PAGETRAIL_* pointing at the testbed for the run, so that any part reading the global
    settings sees the testbed too; the previous environment is restored afterwards."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    get_settings.cache_clear()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        get_settings.cache_clear()


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[CaseResult], None]]:
    """A progress bar on stderr when it is a terminal; silent otherwise."""
    if not sys.stderr.isatty():
        yield lambda _result: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    errors = 0
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("recovering", total=total)

        def advance(result: CaseResult) -> None:
            nonlocal errors
            errors += bool(result.error)
            note = f" ({errors} failed)" if errors else ""
            bar.update(task, advance=1, description=f"recovering [{result.method}]{note}")

        yield advance


# --- the human report ----------------------------------------------------------------------

SUMMARY_COLUMNS = ("n", "success@1", "success@10", "MRR")


def _summary_cells(summary: Mapping[str, Any]) -> list[str]:
    if not summary.get("n"):
        return [str(summary.get("n", 0)), "—", "—", "—"]
    return [str(summary["n"]), f"{summary['success_at_1']:.3f}",
            f"{summary['success_at_10']:.3f}", f"{summary['mrr']:.3f}"]


def report_tables(report: Mapping[str, Any]) -> list[tuple[str, str, list[list[str]]]]:
    """(title, first column, rows) of the per-method and per-category tables."""
    methods = [[name, *_summary_cells(s)] for name, s in report["by_method"].items()]
    categories = [[name, *_summary_cells(s)] for name, s in report["by_category"].items()]
    return [("Per method", "method", methods), ("Per category", "category", categories)]


def report_lines(report: Mapping[str, Any], engine: str = "pipeline") -> list[str]:
    archived, abstention = report["archived"], report["abstention"]
    alive, cost = report["alive"], report["cost"]
    errors = report.get("errors") or {"n": sum(1 for r in report["results"] if r.get("error")),
                                      "by_type": {}}
    engines = f"; search engines: {','.join(report['engines'])}" if report.get("engines") else ""
    stopped, _ = stopped_at_budget(report)
    lines = [
        f"world {report['world']}: {report['cases']} cases, {len(report['results'])} runs, "
        f"{errors['n']} failed; engine: {engine}{engines}",
        *answered_lines(report),
        f"archived: copy offered for {archived['offered']} of {archived['n']}",
        f"abstention: precision {abstention['precision']:.3f} "
        f"({abstention['confident_wrong']} confidently wrong of {abstention['n']})"
        if abstention["n"] else "abstention: no none/archived cases",
        f"alive: {alive['called_dead']} of {alive['n']} called dead",
        f"cost per case: requests median {cost['requests_median']:g}, p90 {cost['requests_p90']:g}; "
        f"seconds median {cost['seconds_median']:.2f}, p90 {cost['seconds_p90']:.2f}"
        + (f"; {stopped} stopped at the time budget" if stopped else "")
        + (f"; {report['revisited']} asked again at the end (the store had learnt since)"
           if report.get("revisited") else ""),
    ]
    if errors["n"]:
        lines.append(f"errors: {error_line(errors)}")
    if "drift" in report:
        drift = report["drift"]
        lines.append(f"drift: {drift['detected']} of {drift['n']} drifted links reported drifted; "
                     f"{drift['false_alarms']} false alarms among {drift['n_stable']} stable ones")
    if report.get("cost_breakdown"):
        top = list(report["cost_breakdown"]["by_purpose"].items())[:6]
        lines.append("requests a recovery by purpose (mean): " + ", ".join(
            f"{name} {row['requests_mean']:.1f}" for name, row in top))
    if "search" in report:
        search = report["search"]
        lines.append(f"web search: {search['queries']} queries sent (median "
                     f"{search['queries_median']:g} a recovery), {search['rate_limited']} "
                     "answered 429")
    return lines


def answered_lines(report: Mapping[str, Any]) -> list[str]:
    """The answer the user acts on: right (of moved/replaced cases), wrong (of dead cases)."""
    answered = report.get("answered")
    if not answered:
        return []
    overall = answered["overall"]
    told = overall["told"]
    lines = [f"answered right: {overall['right']} of {overall['n']} moved/replaced "
             f"({overall['answered_right']:.3f}); answered wrong: {overall['wrong']} of "
             f"{overall['dead']} dead ({overall['answered_wrong']:.3f}); the rest told "
             f"archived {told['archived']}, none {told['none']}, other {told['other']} "
             f"(recommended from {_recommended_by(answered)})"]
    for key, title in (("with_copy", "with an archived copy"),
                       ("without_copy", "without an archived copy")):
        tally, success = answered["by_archived"][key], report["by_archived"][key]
        if tally["n"]:
            lines.append(f"{title}: success@1 {success['success_at_1']:.3f}, answered right "
                         f"{tally['answered_right']:.3f} of {tally['n']}, wrong "
                         f"{tally['wrong']} of {tally['dead']} dead")
    return lines


ANSWERED_COLUMNS = ("cases", "moved/replaced", "answered right", "rate", "dead",
                    "answered wrong", "told archived", "told none")
BAND_COLUMNS = ("confidence", "top candidates", "top right", "answers", "answers right")


def answered_tables(report: Mapping[str, Any]) -> list[str]:
    """Markdown: what the user is told, per category; the confidence bands."""
    answered = report.get("answered")
    if not answered:
        return []
    rows = []
    for name, tally in [*answered["by_category"].items(), ("**all**", answered["overall"])]:
        rows.append([name, str(tally["cases"]), str(tally["n"]), str(tally["right"]),
                     f"{tally['answered_right']:.3f}" if tally["n"] else "—",
                     str(tally["dead"]), str(tally["wrong"]), str(tally["told"]["archived"]),
                     str(tally["told"]["none"])])
    bands = [[b["band"], str(b["top"]), str(b["top_right"]), str(b["answers"]),
              str(b["answers_right"])] for b in answered["bands"]]
    return [f"## What the user is told (answer recommended from {_recommended_by(answered)})",
            "", *_table(("category", *ANSWERED_COLUMNS), rows),
            "## Confidence bands (top live candidate of each dead case)", "",
            *_table(BAND_COLUMNS, bands)]


def _recommended_by(answered: dict) -> str:
    by = answered.get("recommended_by", "ranked confidence")  # reports before the field
    return f"{by} ≥ {answered['recommend_at']:g}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows), ""]


def render_markdown(report: Mapping[str, Any], engine: str = "pipeline") -> str:
    out = [f"# Evaluation of world `{report['world']}`", "", *answered_tables(report)]
    for title, first, rows in report_tables(report):
        out += [f"## {title}", "", *_table((first, *SUMMARY_COLUMNS), rows)]
    out += ["## Summary", ""] + [f"- {line}" for line in report_lines(report, engine)]
    if report.get("cost_breakdown"):
        out += ["", *breakdown_markdown(report["cost_breakdown"])]
    return "\n".join(out) + "\n"


BREAKDOWN_COLUMNS = ("requests", "per recovery (mean)", "median", "share", "seconds per recovery")


def breakdown_markdown(breakdown: Mapping[str, Any], level: str = "##") -> list[str]:
    """The cost breakdown's tables: by purpose, by stage (tools/eval/costs.py)."""
    def rows(table: Mapping[str, Mapping[str, float]]) -> list[list[str]]:
        return [[name, str(row["requests"]), f"{row['requests_mean']:.2f}",
                 f"{row['requests_median']:g}", f"{100 * row['share']:.1f} %",
                 f"{row['seconds_mean']:.3f}"] for name, row in table.items()]

    out = [f"{level} Where the requests go ({breakdown['recoveries']} recoveries)", ""]
    out += _table(("purpose", *BREAKDOWN_COLUMNS), rows(breakdown["by_purpose"]))
    out += [f"{level}# By stage (the nearest recovery stage on the call stack)", ""]
    out += _table(("stage", *BREAKDOWN_COLUMNS), rows(breakdown["by_stage"]))
    return out


# --- several worlds ------------------------------------------------------------------------

WORLD_COLUMNS = (
    ("n", "n", "{:g}"), ("answered right", "answered_right", "{:.3f}"),
    ("answered wrong", "answered_wrong", "{:g}"), ("dead", "dead", "{:g}"),
    ("success@1", "success_at_1", "{:.3f}"),
    ("success@10", "success_at_10", "{:.3f}"), ("MRR", "mrr", "{:.3f}"),
    ("same host @1", "moved_same_host.success_at_1", "{:.3f}"),
    ("new host @1", "moved_new_host.success_at_1", "{:.3f}"),
    ("replaced @1", "replaced.success_at_1", "{:.3f}"),
    ("archived copy @1", "with_copy.success_at_1", "{:.3f}"),
    ("no archived copy @1", "without_copy.success_at_1", "{:.3f}"),
    ("no archived copy, right", "without_copy.answered_right", "{:.3f}"),
    ("right at ≥ 0.9", "right_at_0.9", "{:.3f}"),
    ("confident-wrong", "confident_wrong", "{:g}"), ("alive called dead", "called_dead", "{:g}"),
    ("drift found", "drift_detected", "{:.2f}"), ("drift false alarms", "drift_false_alarms", "{:g}"),
    ("requests median", "requests_median", "{:g}"), ("requests p90", "requests_p90", "{:g}"),
    ("seconds median", "seconds_median", "{:.2f}"), ("seconds p90", "seconds_p90", "{:.2f}"),
)
CATEGORY_COLUMNS = ("success_at_1", "success_at_10", "mrr")
MODE_TITLES = {"web": "With web search", "noweb": "Without web search"}


def _cell(row: Mapping[str, Any], key: str, form: str) -> str:
    value = row.get(key)
    return "—" if value is None else form.format(value)


def multiworld_tables(summary: Mapping[str, Any]) -> list[str]:
    """Per world, mean and worst (each cell the worst world's value, and which world)."""
    rows = [[world, *(_cell(fig, key, form) for _t, key, form in WORLD_COLUMNS)]
            for world, fig in summary["per_world"].items()]
    mean = {key: round(value, 1) if form == "{:g}" else value  # a mean count: one decimal
            for key, value in summary["mean"].items()
            for _t, k, form in WORLD_COLUMNS if k == key}
    rows.append(["**mean**", *(_cell(mean, key, form) for _t, key, form in WORLD_COLUMNS)])
    worst = summary["worst"]
    rows.append(["**worst**", *(
        f"{form.format(worst[key]['value'])} ({worst[key]['world']})" if key in worst else "—"
        for _t, key, form in WORLD_COLUMNS)])
    return _table(("world", *(title for title, _k, _f in WORLD_COLUMNS)), rows)


def _stage_table(reports: Mapping[str, Mapping[str, Any]], worlds: list[str],
                 limit: int = 15) -> list[str]:
    """Requests per recovery (mean) by recovery stage in each world, largest first."""
    table: dict[str, dict[str, float]] = {}
    for world in worlds:
        stages = (reports[world].get("cost_breakdown") or {}).get("by_stage") or {}
        for stage, row in stages.items():
            table.setdefault(stage, {})[world] = row["requests_mean"]
    if not table:
        return []
    ordered = sorted(table.items(), key=lambda item: -sum(item[1].values()))[:limit]
    return ["### Requests per recovery by stage (mean)", "",
            *_table(("stage", *worlds), [[stage, *(f"{row[w]:.2f}" if w in row else "—"
                                                  for w in worlds)]
                                         for stage, row in ordered])]


def render_multiworld_markdown(multi: Mapping[str, Any], engine: str = "pipeline") -> str:
    worlds = ", ".join(f"`{w}`" for w in multi["worlds"])
    out = [f"# Evaluation of worlds {worlds}", "", f"Engine: {engine}.", ""]
    if multi["failed"]:
        out += ["**Incomplete: these runs are void, and the mean and worst below leave them "
                "out:**", ""]
        out += [f"- `{f['world']}` ({f['mode']}): {f['reason']}" for f in multi["failed"]]
        out.append("")
    for mode in multi["modes"]:
        summary = multi["summary"][mode]
        engines = multi["engines"].get(mode)
        out += [f"## {MODE_TITLES.get(mode, mode)}"
                + (f" (engines {','.join(engines)})" if engines else ""), ""]
        if summary["worst_world"] is not None:
            out += [f"Worst world (success@1): `{summary['worst_world']}`.", ""]
        out += multiworld_tables(summary)
        out += ["### Per category", ""]
        category_rows = []
        for world, report in multi["runs"][mode].items():
            for category, figures in report["by_category"].items():
                if not figures.get("n"):
                    continue  # gone and alive cases: no success figures
                category_rows.append([category, world, *_summary_cells(figures)])
        category_rows.sort(key=lambda row: row[0])
        out += _table(("category", "world", *SUMMARY_COLUMNS), category_rows)
        purposes = multi["cost_by_purpose"][mode]
        if purposes:
            worlds_in = list(summary["per_world"])
            out += ["### Requests per recovery by purpose (mean)", ""]
            out += _table(("purpose", *worlds_in), [
                [purpose, *(f"{row[w]:.2f}" if w in row else "—" for w in worlds_in)]
                for purpose, row in purposes.items()])
        seconds = multi.get("seconds_by_purpose", {}).get(mode)
        if seconds:
            worlds_in = list(summary["per_world"])
            out += ["### Seconds per recovery by purpose (mean; fetches overlap)", ""]
            out += _table(("purpose", *worlds_in), [
                [purpose, *(f"{row[w]:.3f}" if w in row else "—" for w in worlds_in)]
                for purpose, row in sorted(seconds.items(),
                                           key=lambda item: -sum(item[1].values()))])
        out += _stage_table(multi["runs"][mode], list(summary["per_world"]))
        for world, report in multi["runs"][mode].items():
            out += [f"### `{world}`", ""] + [f"- {line}" for line in report_lines(report, engine)]
            out.append("")
    return "\n".join(out) + "\n"


def print_terminal(report: Mapping[str, Any], engine: str = "pipeline") -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for title, first, rows in report_tables(report):
        table = Table(title=title, title_justify="left")
        table.add_column(first)
        for column in SUMMARY_COLUMNS:
            table.add_column(column, justify="right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    for line in report_lines(report, engine):
        console.print(line, highlight=False, markup=False)
