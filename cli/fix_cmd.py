"""`pagetrail fix PATH…`: repair dead links in documents (dry run by default), or `-` for a
text on standard input.

Exit 0 when no dead link is left, 1 when some are, 2 on usage errors (a bad option, a
malformed lychee report or configuration), 3 when nothing was checked (every file selected is
ignored by git, filtered out, unreadable or outside the paths given): a run that read nothing
never passes.

The repository's pagetrail.toml (or `[tool.pagetrail]`), found from the working directory up,
and its ignore files set the defaults; each option given here overrides its key
(docs/configuration.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pagetrail.cli.common import UsageError, fail, parse_date, print_json, run_async

if TYPE_CHECKING:
    from pagetrail.lab import FixConfig

KINDS = ("moved", "replacement", "archived")
NOTHING_CHECKED = 3  # distinct from 1 (dead links left): the Action fails on anything over 1
FORMATS = ("text", "json", "sarif", "junit", "github", "markdown")


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(
            f"unknown kind(s) {', '.join(bad) or '(none)'}: choose from {', '.join(KINDS)}")
    return kinds


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("a confidence is between 0 and 1")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "fix", help="repair dead links in files (Markdown, RST, HTML, AsciiDoc, text)",
        description="Find the dead links of documents and propose (or write) their new "
                    "addresses or archived copies. A dry run prints a diff; --write applies it.")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders; `-` reads a text from standard input")
    parser.add_argument("--write", action="store_true", help="apply the changes in place")
    parser.add_argument("--interactive", action="store_true",
                        help="ask before each change (implies --write)")
    # Defaults are None here: an option not given leaves the configuration's value.
    parser.add_argument("--min-confidence", type=_confidence, default=None,
                        help="rewrite only answers at least this confident (0-1, default 0)")
    parser.add_argument("--kinds", type=_kinds, default=None,
                        help="answers to write, comma-separated (default moved,replacement,"
                             "archived)")
    parser.add_argument("--archived-as", choices=("url", "robust"), default=None,
                        help="an archived answer as the capture's URL, or (HTML) a Robust "
                             "Link: href kept, data-versionurl/-versiondate added")
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="only files matching (repeatable)")
    parser.add_argument("--exclude", "--exclude-path", dest="exclude", action="append",
                        default=[], metavar="GLOB", help="skip files matching (repeatable)")
    parser.add_argument("--max-file-size", type=int, default=None, metavar="BYTES",
                        help="files larger are skipped (default 5000000)")
    parser.add_argument("--exclude-url", action="append", default=[], metavar="REGEX",
                        help="neither check nor fix links whose URL matches (repeatable)")
    parser.add_argument("--accept", action="append", default=[], metavar="STATUSES",
                        help="statuses that are not dead, e.g. 403,429 or 200..=299")
    parser.add_argument("--config", metavar="FILE",
                        help="read this pagetrail.toml (default: found from here up)")
    parser.add_argument("--no-config", action="store_true",
                        help="read no pagetrail.toml nor ignore file")
    parser.add_argument("--show-config", action="store_true",
                        help="print the settings this run would use and where each came "
                             "from, and stop")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="report format (default text: diff and summary)")
    parser.add_argument("--from-lychee", metavar="REPORT.json",
                        help="recover only the failures of a lychee JSON report")
    parser.add_argument("--date", help="for `-`: when the text was written (default now)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=handle)


def _ask(link) -> bool:  # type: ignore[no-untyped-def]
    prompt = (f"{link.path}:{link.line} {link.url}\n  {link.verdict} → {link.new_url} "
              f"(confidence {link.confidence or 0:.2f}) — rewrite? [y/N] ")
    try:
        return input(prompt).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _stdin(args: argparse.Namespace) -> int:
    from pagetrail import check_links_in_text

    text = sys.stdin.read()
    result = run_async(check_links_in_text(text, at=parse_date(args.date)))
    if args.format == "json":
        print_json(result)
    else:
        sys.stdout.write(result.repaired_text)
        for link in result.links:
            extra = f" → {link.new_url}" if link.new_url else ""
            score = f" support {link.support.score:.2f}" if link.support else ""
            print(f"{link.verdict}: {link.url}{extra}{score}", file=sys.stderr)
    dead = [link for link in result.links
            if link.verdict in ("never-existed", "unfixable")]
    return 1 if dead else 0


def _config(args: argparse.Namespace) -> FixConfig:
    """The repository's configuration with this command line's options over it."""
    from pagetrail.lab import load_fix_config

    if args.config and args.no_config:
        raise UsageError("--config and --no-config cannot be used together")
    flags = {"exclude_url": args.exclude_url, "min_confidence": args.min_confidence,
             "accept": [part.strip() for text in args.accept for part in text.split(",")
                        if part.strip()],
             "include": args.include, "exclude_path": args.exclude,
             "kinds": args.kinds, "archived_as": args.archived_as,
             "max_file_size": args.max_file_size}
    return load_fix_config(path=args.config, use_files=not args.no_config).with_flags(flags)


def handle(args: argparse.Namespace) -> int:
    from pagetrail import __version__, fix_paths, get_settings, render_fix_report
    from pagetrail.cli.config_cmd import print_fix_config
    from pagetrail.cli.scan_cmd import progress_bar, show_progress
    from pagetrail.lab import lychee_report_inputs, read_lychee_report

    if args.show_config:
        print_fix_config(_config(args))
        return 0
    if args.paths == ["-"]:
        return _stdin(args)  # a text, not a repository's file: no configuration applies
    if "-" in args.paths:
        return fail("`-` (standard input) cannot be mixed with paths")
    only = None
    paths = list(args.paths)
    if args.from_lychee:
        failing = read_lychee_report(args.from_lychee)
        only = frozenset(url for urls in failing.values() for url in urls)
        if not paths:
            # The report's inputs, confined to the working folder (an absolute path or `..`
            # in a report never chooses what is written).
            paths, refused_inputs = lychee_report_inputs(failing, Path.cwd())
            for source, why in refused_inputs:
                print(f"{args.from_lychee}: input {source!r} not read: {why}", file=sys.stderr)
            if not paths and failing:
                print("nothing checked: no input of the lychee report is a file here",
                      file=sys.stderr)
                return NOTHING_CHECKED
    if not paths:
        return fail("give at least one file or folder (or `-`, or --from-lychee)")
    options = _config(args).options()
    settings = get_settings()
    with progress_bar(show_progress(args.quiet), "recovering links") as progress:
        report = run_async(fix_paths(
            paths, options=options, write=args.write or args.interactive, settings=settings,
            progress=progress, confirm=_ask if args.interactive else None, only_urls=only))
    sys.stdout.write(render_fix_report(report, args.format, __version__))
    refused = [p for p in report.problems
               if p.code in ("changed-on-disk", "moved-on-disk", "unwritable", "rewrite-refused")]
    if refused:
        for problem in refused:
            print(f"{problem.path}: {problem.code}: {problem.message}", file=sys.stderr)
    if not report.files:
        why = "; ".join(f"{p.path}: {p.code}: {p.message}" for p in report.problems[:5])
        more = f" and {len(report.problems) - 5} more" if len(report.problems) > 5 else ""
        print(f"nothing checked: no document was read ({why or 'nothing selected'}{more})",
              file=sys.stderr)
        return NOTHING_CHECKED
    return 1 if report.dead_left or refused else 0
