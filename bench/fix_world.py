"""How well `pagetrail fix` repairs a docs repository whose dead links are a world's cases.

    python bench/fix_world.py WORLD [--limit N] [--cases IDS] [--json] [--repo DIR]
                                    [--timeout SECONDS]

1. Writes a git repository of documents from the world's cases (testbed/FORMAT.md): one
   Markdown, one reStructuredText and one HTML file, the cases spread over them; each case is
   one line holding its link, with the case's anchor as the link's text inside the case's
   context (a case without a linking page is its bare URL). Every line is committed with the
   case's link date as its author date (a case without one: the world's `then`), so git blame
   dates each link as `pagetrail fix` expects. `--repo DIR` writes it there and keeps it;
   otherwise it is a temporary directory, removed afterwards.
2. Serves the world on loopback as `pagetrail eval` does (tools/testbed/runner.py `Testbed`,
   its PAGETRAIL_* environment) with a fresh database, so no answer is read from a cache.
3. Runs the real `pagetrail fix --write --format json --no-config` on the repository, in a
   subprocess (`python -m pagetrail.cli`).
4. Scores every case's link from the world's truth, per category, per expected answer kind,
   per file format and overall:
   - right: rewritten to one of `expect.urls`; for an `archived` case, to a capture of its
     own URL;
   - wrong: rewritten to anything else (an `alive` link rewritten at all is wrong);
   - own archive: rewritten to a capture of its own (dead) URL;
   - left: not rewritten.
   "As it should" counts right for moved/replacement/archived cases, left for none/alive.
5. Prints Markdown tables (with `--json`: the JSON report on stdout, the tables on stderr).

Exit status 0 when the run measured fix; 2 when the world or the options are unusable; 1 when
the run did not measure fix (the testbed did not start or went down, fix crashed or timed
out, its report is unreadable or lacks links, the files disagree with the report). Each is a
named error on stderr (`fix_world: error: CODE: …`), never a score of nothing with exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pagetrail.tools.errors import WorldError
from pagetrail.tools.eval.eval_runner import parse_link_date
from pagetrail.tools.eval.evaluate import CATEGORIES, original_of_archived_copy
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.testbed.runner import Testbed
from pagetrail.tools.testbed.world import EXPECT_KINDS, World, load_world

REPORT_FORMAT = 1
OUTCOMES = ("right", "wrong", "own_archive", "left")
# Where each format's cases go, in the order cases are dealt to them.
FILES = {"markdown": "docs/links.md", "rst": "docs/links.rst", "html": "docs/links.html"}
# The outcome that is the right one, per expected kind: a live answer or the archived copy
# for the kinds that have one; for `none` (nothing can help) and `alive`, leaving the link.
WANTED = {"moved": "right", "replacement": "right", "archived": "right", "none": "left",
          "alive": "left"}
GIT_IDENTITY = "pagetrail bench <bench@pagetrail.invalid>"
DEFAULT_TIMEOUT = 7200.0
# Settings that would send fix's recoveries elsewhere than this process and the testbed
# (workers of a broker, limits shared through a Redis): left out of fix's environment.
NOT_INHERITED = ("PAGETRAIL_BROKER_URL", "PAGETRAIL_REDIS_URL")


# ------------------------------------------------------------------ named errors


class BenchError(Exception):
    """A run whose figures would not be fix's: named by `code`, exits `status` (never 0)."""

    code = "bench_error"
    status = 1


class WorldUnreadable(BenchError):
    code, status = "world_unreadable", 2


class BadSelection(BenchError):
    code, status = "bad_selection", 2


class RepoUnusable(BenchError):
    code, status = "repo_unusable", 2


class RepoWriteFailed(BenchError):
    code = "repo_write_failed"


class TestbedFailed(BenchError):
    __test__ = False  # not a pytest class, despite the name
    code = "testbed_failed"


class FixCrashed(BenchError):
    code = "fix_crashed"


class FixTimeout(BenchError):
    code = "fix_timeout"


class ReportUnreadable(BenchError):
    code = "report_unreadable"


class ReportIncomplete(BenchError):
    code = "report_incomplete"


class TreeMismatch(BenchError):
    code = "tree_mismatch"


# ------------------------------------------------------------------ the world's cases


def read_world(path: str | Path) -> World:
    try:
        return load_world(path)
    except WorldError as exc:
        raise WorldUnreadable(f"{path}: {exc}") from exc
    except OSError as exc:  # a file of it that cannot be read at all
        raise WorldUnreadable(f"{path}: {exc}") from exc


def parse_ids(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise BadSelection("--cases needs at least one case id")
    return ids


def select_cases(world: World, ids: Sequence[str] | None, limit: int | None,
                 ) -> list[dict[str, Any]]:
    """The cases to run, as `pagetrail eval` selects them: `ids` (each must exist), then
    the first `limit`."""
    if limit is not None and limit < 1:
        raise BadSelection("--limit must be at least 1")
    cases = [case.raw for case in world.cases]
    if ids:
        missing = sorted(set(ids) - {case["id"] for case in cases})
        if missing:
            raise BadSelection(f"{world.path}: no case {', '.join(missing)}")
        wanted = set(ids)
        cases = [case for case in cases if case["id"] in wanted]
    cases = cases[:limit]
    if not cases:
        raise BadSelection(f"{world.path}: the world has no cases")
    return cases


# ------------------------------------------------------------------ writing the documents


@dataclass(frozen=True)
class Placed:
    """Where the repository holds a case's link, and the date its line was committed."""

    case_id: str
    url: str
    file: str  # relative to the repository, POSIX
    fmt: str
    line: int  # 1-based
    date: datetime
    dated_by: str  # "link_date", or "world_then" for a case without one


_SPACE = re.compile(r"\s+")
_SCHEME = re.compile(r"https?://", re.I)
_INVISIBLE = re.compile("[\x00-\x1f\x7f\ufeff\u200b]")
_MD_SPECIAL = frozenset("\\`*_[]<>&!")
_RST_SPECIAL = frozenset("\\`*_|[]<>")


def clean(text: Any) -> str:
    """One line of prose: whitespace collapsed, control characters and BOMs gone."""
    return _SPACE.sub(" ", _INVISIBLE.sub(" ", str(text or ""))).strip()


def _backslashed(text: str, special: frozenset[str]) -> str:
    return "".join("\\" + ch if ch in special else ch for ch in text)


def escape_prose(fmt: str, text: str) -> str:
    """`text` as plain words in `fmt`. A URL in the prose loses its scheme: it would be one
    more link for fix to check and perhaps rewrite, not a case."""
    text = _SCHEME.sub("", text)
    if fmt == "html":
        return html.escape(text, quote=False)
    return _backslashed(text, _MD_SPECIAL if fmt == "markdown" else _RST_SPECIAL)


_TRAILING_PUNCTUATION = frozenset(".,;:!?)]}'\"")


def link_markup(fmt: str, url: str, text: str | None) -> str:
    """A link to `url` showing `text` (None: the bare URL, as an autolink)."""
    if fmt == "html":
        shown = html.escape(text if text is not None else url, quote=False)
        return f'<a href="{html.escape(url, quote=True)}">{shown}</a>'
    if fmt == "markdown":
        return f"<{url}>" if text is None else f"[{escape_prose(fmt, text)}]({url})"
    # reStructuredText: an anonymous reference (`…`__), as a named one repeated would be a
    # duplicate target; a bare URL is a standalone hyperlink — but one that ends in
    # punctuation loses it (docutils, like every autolinker, reads a final "." as the
    # sentence's), so such a URL is written embedded, `<…>`__, where it is whole.
    if text is None:
        return f"`<{url}>`__" if url[-1] in _TRAILING_PUNCTUATION else url
    return f"`{escape_prose(fmt, text)} <{url}>`__"


def _rst_joint(before: str, link: str, after: str) -> str:
    """reStructuredText recognises a link only between whitespace (or some punctuation);
    an escaped space (removed from the output) separates it from a word it touches."""
    left = "\\ " if before and not before[-1].isspace() else ""
    right = "\\ " if after and not after[0].isspace() else ""
    return f"{before}{left}{link}{right}{after}"


def case_line(fmt: str, case: Mapping[str, Any]) -> str:
    """The one line of `fmt` that holds a case's link: the anchor as the link's text where
    the context has it, the context around it; the bare URL when only the URL is known."""
    url = str(case["url"])
    source = case.get("source") or {}
    anchor, context = clean(source.get("anchor")), clean(source.get("context"))
    if not anchor:
        return _first_char_safe(fmt, link_markup(fmt, url, None))
    # An anchor that is a URL is shown as the link's own URL: another URL as its text would
    # be one more link in Markdown.
    text = None if "://" in anchor else anchor
    found = re.search(re.escape(anchor), context, re.I) if context else None
    if found is None:
        before, after = "", f" — {context}" if context else ""
    else:
        before, after = context[:found.start()], context[found.end():]
        text = None if text is None else found.group()
    before, after = escape_prose(fmt, before), escape_prose(fmt, after)
    link = link_markup(fmt, url, text)
    line = _rst_joint(before, link, after) if fmt == "rst" else before + link + after
    return _first_char_safe(fmt, line)


def _first_char_safe(fmt: str, line: str) -> str:
    """Markdown and reStructuredText read a line's first characters as structure (a fence,
    a comment, a doctest, a heading): an ASCII punctuation mark there is escaped."""
    if fmt == "html" or not line or not (line[0].isascii() and not line[0].isalnum()
                                          and not line[0].isspace()):
        return line
    if line[0] in "\\<`[":
        return line  # an escape, an autolink, a reference or a link already
    return "\\" + line


_HEAD = {"markdown": "# Links\n\n", "rst": "Links\n=====\n\n",
         "html": '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Links</title>'
                 "</head>\n<body>\n"}
_FOOT = {"markdown": "", "rst": "", "html": "</body></html>\n"}


def _block(fmt: str, line: str) -> str:
    return f"<p>{line}</p>\n" if fmt == "html" else f"{line}\n\n"


def document(fmt: str, lines: Sequence[str]) -> str:
    return _HEAD[fmt] + "".join(_block(fmt, line) for line in lines) + _FOOT[fmt]


def deal_formats(cases: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """case id → format, dealt in turn over the cases ordered by category: each category is
    spread over the formats as evenly as its size allows."""
    order = {name: i for i, name in enumerate(CATEGORIES)}
    ranked = sorted(enumerate(cases), key=lambda item: (order.get(item[1]["category"], 99),
                                                        item[0]))
    formats = list(FILES)
    return {case["id"]: formats[i % len(formats)] for i, (_, case) in enumerate(ranked)}


def date_of(case: Mapping[str, Any], then: datetime) -> tuple[datetime, str]:
    found = parse_link_date(case.get("link_date"))
    if found is None:
        return then, "world_then"
    return (found if found.tzinfo else found.replace(tzinfo=UTC)), "link_date"


def plan_repository(cases: Sequence[Mapping[str, Any]], then: datetime,
                    ) -> tuple[list[Placed], dict[str, list[tuple[datetime, str]]]]:
    """Each case's place, and each format's dated lines in the order of the file: by date,
    so that each commit only appends (every intermediate file is a prefix of the last)."""
    formats = deal_formats(cases)
    lines: dict[str, list[tuple[datetime, str, str]]] = {fmt: [] for fmt in FILES}
    dated: dict[str, tuple[datetime, str]] = {}
    for case in cases:
        when, how = date_of(case, then)
        dated[case["id"]] = (when, how)
        fmt = formats[case["id"]]
        lines[fmt].append((when, case["id"], case_line(fmt, case)))
    placed: list[Placed] = []
    by_case = {case["id"]: case for case in cases}
    for fmt, entries in lines.items():
        entries.sort(key=lambda entry: entry[0])  # stable: a date's cases keep their order
        first = _HEAD[fmt].count("\n") + 1
        step = _block(fmt, "").count("\n")
        for index, (when, case_id, _line) in enumerate(entries):
            placed.append(Placed(case_id, str(by_case[case_id]["url"]), FILES[fmt], fmt,
                                 first + index * step, when, dated[case_id][1]))
    return placed, {fmt: [(when, line) for when, _, line in entries]
                    for fmt, entries in lines.items() if entries}


def _git_env() -> dict[str, str]:
    """git without the user's or the system's configuration (signing, hooks, templates)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    return {**env, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True,
                          env=_git_env(), check=False, timeout=600)
    if done.returncode != 0:
        raise RepoWriteFailed(f"git {' '.join(args[:2])} in {repo}: "
                              f"{done.stderr.decode(errors='replace').strip()[-500:]}")
    return done.stdout.decode(errors="replace")


def history(files: Mapping[str, list[tuple[datetime, str]]]) -> list[tuple[datetime, dict[str, str]]]:
    """The commits, oldest first: one per link date, holding each file as it is then (the
    files that changed); the first commit holds every file's head."""
    dates = sorted({when for entries in files.values() for when, _ in entries})
    commits: list[tuple[datetime, dict[str, str]]] = []
    shown: dict[str, str] = {}
    for when in dates:
        changed = {}
        for fmt, entries in files.items():
            text = document(fmt, [line for at, line in entries if at <= when])
            if shown.get(fmt) != text:
                changed[FILES[fmt]] = shown[fmt] = text
        commits.append((when, changed))
    return commits


def fast_import_stream(commits: Sequence[tuple[datetime, Mapping[str, str]]]) -> bytes:
    """`git fast-import` input for the commits: one git process for hundreds of dated
    commits (a `git commit` per link date took seconds on a busy machine)."""
    out = bytearray()
    for number, (when, files) in enumerate(commits, 1):
        stamp = f"{int(when.timestamp())} +0000"
        message = f"links of {when:%Y-%m-%d} ({number})\n".encode()
        out += (f"commit refs/heads/main\nauthor {GIT_IDENTITY} {stamp}\n"
                f"committer {GIT_IDENTITY} {stamp}\n").encode()
        out += b"data %d\n%s" % (len(message), message)
        for path, text in files.items():
            data = text.encode("utf-8")
            out += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)
        out += b"\n"
    return bytes(out)


def prepare_repo_dir(repo: Path) -> None:
    if repo.exists() and (not repo.is_dir() or any(repo.iterdir())):
        raise RepoUnusable(f"--repo {repo}: must be a new or empty directory")
    repo.mkdir(parents=True, exist_ok=True)


def write_repository(repo: Path, cases: Sequence[Mapping[str, Any]], then: datetime,
                     ) -> list[Placed]:
    """The git repository of the cases' links in `repo` (new or empty), checked out; each
    link's line blamed on a commit authored at its date (checked here: a wrong date would
    measure the writer, not fix)."""
    prepare_repo_dir(repo)
    placed, files = plan_repository(cases, then)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "fast-import", "--quiet", stdin=fast_import_stream(history(files)))
    git(repo, "reset", "-q", "--hard", "main")
    for file in sorted({p.file for p in placed}):
        times = blame_times(repo, file)
        wrong = [p.case_id for p in placed
                 if p.file == file and times.get(p.line) != int(p.date.timestamp())]
        if wrong:
            raise RepoWriteFailed(f"{file}: git blame does not date the links of "
                                  f"{', '.join(wrong[:5])} as written")
    return placed


def blame_times(repo: Path, file: str) -> dict[int, int]:
    """1-based line → its author time, by `git blame --line-porcelain` (one header a line)."""
    times: dict[int, int] = {}
    line = 0
    for row in git(repo, "blame", "--line-porcelain", "--", file).splitlines():
        head = row.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and head[2].isdigit():
            line = int(head[2])
        elif head[0] == "author-time" and len(head) == 2:
            times[line] = int(head[1])
    return times


# ------------------------------------------------------------------ running fix


@dataclass
class FixRun:
    exit_status: int
    seconds: float
    report: dict[str, Any]
    stderr: str


def fix_command() -> list[str]:
    # --no-config: the repository has no pagetrail.toml, and none above it (a temporary
    # directory's parents) may choose what is read or rewritten.
    return [sys.executable, "-m", "pagetrail.cli", "fix", "--write", "--format", "json",
            "--no-config", "--quiet", "."]


def fix_environment(testbed_env: Mapping[str, str], scratch: Path) -> dict[str, str]:
    """This environment with the testbed's PAGETRAIL_* over it (what `pagetrail eval` sets),
    a fresh database (fix resumes answers it finds in the store: a cached answer is not this
    run's work) and no config file (its broker or archives are not the testbed's)."""
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    env.update(testbed_env)
    env["PAGETRAIL_DATABASE_URL"] = f"sqlite:///{scratch / 'fix.db'}"
    env["PAGETRAIL_CONFIG"] = str(scratch / "no-config.toml")  # never written
    return env


def parse_fix_output(status: int, stdout: str, stderr: str) -> dict[str, Any]:
    """fix's JSON report, or the named reason there is none. Exit 0 and 1 (dead links left)
    are runs; any other status, or output that is not a report, is not."""
    tail = stderr.strip()[-800:] or "(nothing on stderr)"
    if status not in (0, 1):
        raise FixCrashed(f"pagetrail fix exited {status}: {tail}")
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError as exc:
        # exit 1 with no report is a traceback, not dead links left
        if status != 0:
            raise FixCrashed(f"pagetrail fix exited {status} without a report: {tail}") from exc
        raise ReportUnreadable(f"pagetrail fix printed no JSON report ({exc}): "
                               f"{stdout[:200]!r}") from exc
    if not isinstance(report, dict) or not isinstance(report.get("links"), list):
        raise ReportUnreadable("pagetrail fix's JSON has no list of links")
    return report


async def run_fix(repo: Path, env: Mapping[str, str], timeout: float) -> FixRun:
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *fix_command(), cwd=repo, env=dict(env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise FixTimeout(f"pagetrail fix gave no report within {timeout:g} s") from None
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    status = process.returncode if process.returncode is not None else -1
    report = parse_fix_output(status, stdout, stderr)
    return FixRun(status, round(time.monotonic() - started, 3), report, stderr)


async def serve_and_fix(world: World, repo: Path, timeout: float) -> FixRun:
    """The world served on loopback (the testbed `pagetrail eval` starts) while fix runs."""
    testbed = Testbed(world)
    try:
        await testbed.start()
    except Exception as exc:  # pywb missing, a port taken: named, not a traceback
        await testbed.stop()
        raise TestbedFailed(f"the testbed did not start: {type(exc).__name__}: {exc}") from exc
    try:
        with tempfile.TemporaryDirectory(prefix="pagetrail-fix-bench-") as scratch:
            run = await run_fix(repo, fix_environment(testbed.env, Path(scratch)), timeout)
        down = await testbed.down()
        if down:
            raise TestbedFailed(f"down after the run: {', '.join(down)}: the answers are an "
                                "outage's, not fix's")
        return run
    finally:
        await testbed.stop()


# ------------------------------------------------------------------ scoring (pure)


@dataclass(frozen=True)
class LinkScore:
    case_id: str
    category: str
    kind: str
    fmt: str
    file: str
    line: int
    url: str
    verdict: str | None  # fix's verdict(s), joined with "+" when it reported several
    new_url: str | None
    outcome: str | None  # one of OUTCOMES; None: fix did not report the link
    ok: bool


def report_path(path: str, root: Path | None = None) -> str:
    """A path of fix's report relative to the repository, POSIX (`./docs/a.md` → docs/a.md)."""
    candidate = Path(path)
    if root is not None and candidate.is_absolute():
        with contextlib.suppress(ValueError):  # outside the repository: kept as it is
            candidate = candidate.resolve().relative_to(root.resolve())
    return PurePosixPath(os.path.normpath(candidate.as_posix())).as_posix()


def _is_capture_of(new_url: str, url: str) -> bool:
    original = original_of_archived_copy(new_url)
    return original is not None and normalize_url(original) == normalize_url(url)


def outcome_of(kind: str, url: str, expected: Iterable[str], new_url: str | None,
               written: bool) -> str:
    """One rewrite judged against the truth (see OUTCOMES; an alive link must never be
    rewritten, so any rewrite of it is wrong)."""
    if not written or not new_url:
        return "left"
    if kind == "alive":
        return "wrong"
    if normalize_url(new_url) in {normalize_url(u) for u in expected}:
        return "right"
    if _is_capture_of(new_url, url):
        return "right" if kind == "archived" else "own_archive"
    return "wrong"


def _combined(outcomes: Sequence[str]) -> str:
    """A link fix reported more than once on its line (its text shows its URL) is one
    outcome when every occurrence agrees; half rewritten, the document is wrong."""
    return outcomes[0] if len(set(outcomes)) == 1 else "wrong"


def score_links(fix_report: Mapping[str, Any], placed: Sequence[Placed],
                cases: Sequence[Mapping[str, Any]], root: Path | None = None,
                ) -> list[LinkScore]:
    """Every placed case's link judged from fix's JSON report (its `links`: path, line,
    url, verdict, new_url, written) against the case's truth (`expect`)."""
    entries: dict[tuple[str, int, str], list[Mapping[str, Any]]] = {}
    for link in fix_report.get("links") or []:
        key = (report_path(str(link.get("path", "")), root), int(link.get("line") or 0),
               str(link.get("url", "")))
        entries.setdefault(key, []).append(link)
    by_id = {case["id"]: case for case in cases}
    scores = []
    for place in placed:
        case = by_id[place.case_id]
        expect = case.get("expect") or {}
        kind = str(expect.get("kind", ""))
        found = entries.get((place.file, place.line, place.url), [])
        outcomes = [outcome_of(kind, place.url, expect.get("urls") or [],
                               link.get("new_url"), bool(link.get("written")))
                    for link in found]
        outcome = _combined(outcomes) if outcomes else None
        new_urls = [str(link["new_url"]) for link in found
                    if link.get("written") and link.get("new_url")]
        scores.append(LinkScore(
            place.case_id, str(case.get("category", "")), kind, place.fmt, place.file,
            place.line, place.url,
            "+".join(dict.fromkeys(str(link.get("verdict")) for link in found)) or None,
            new_urls[0] if new_urls else None, outcome,
            outcome is not None and outcome == WANTED.get(kind)))
    return scores


def extra_links(fix_report: Mapping[str, Any], placed: Sequence[Placed],
                root: Path | None = None) -> list[dict[str, Any]]:
    """Links fix reported that are no case's (the writer should leave none)."""
    known = {(p.file, p.line, p.url) for p in placed}
    return [{"path": report_path(str(link.get("path", "")), root), "line": link.get("line"),
             "url": link.get("url"), "verdict": link.get("verdict")}
            for link in fix_report.get("links") or []
            if (report_path(str(link.get("path", "")), root), int(link.get("line") or 0),
                str(link.get("url", ""))) not in known]


def tally(scores: Iterable[LinkScore]) -> dict[str, Any]:
    """n, each outcome's count, links as they should be, and its share."""
    scores = list(scores)
    counts: dict[str, Any] = {"n": len(scores)}
    for outcome in OUTCOMES:
        counts[outcome] = sum(1 for s in scores if s.outcome == outcome)
    counts["missing"] = sum(1 for s in scores if s.outcome is None)
    counts["ok"] = sum(1 for s in scores if s.ok)
    counts["ok_rate"] = round(counts["ok"] / len(scores), 4) if scores else 0.0
    return counts


def _grouped(scores: Sequence[LinkScore], attribute: str, order: Sequence[str],
             ) -> dict[str, dict[str, Any]]:
    present = {getattr(s, attribute) for s in scores}
    return {name: tally(s for s in scores if getattr(s, attribute) == name)
            for name in [*order, *sorted(present - set(order))] if name in present}


def summarize(scores: Sequence[LinkScore]) -> dict[str, Any]:
    return {"overall": tally(scores),
            "by_category": _grouped(scores, "category", CATEGORIES),
            "by_kind": _grouped(scores, "kind", [k for k in WANTED if k in EXPECT_KINDS]),
            "by_format": _grouped(scores, "fmt", list(FILES))}


def date_check(fix_report: Mapping[str, Any], placed: Sequence[Placed],
               root: Path | None = None) -> dict[str, int]:
    """How many case links fix dated by git, and at the date they were committed."""
    wanted = {(p.file, p.line, p.url): p.date for p in placed}
    by_git = as_written = 0
    for link in fix_report.get("links") or []:
        key = (report_path(str(link.get("path", "")), root), int(link.get("line") or 0),
               str(link.get("url", "")))
        if key not in wanted or link.get("date_source") != "git":
            continue
        by_git += 1
        try:
            when = datetime.fromisoformat(str(link.get("date")))
        except ValueError:
            continue
        if abs((when - wanted[key]).total_seconds()) < 1:
            as_written += 1
    return {"links": len(placed), "dated_by_git": by_git, "as_written": as_written}


# ------------------------------------------------------------------ the files against the report


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? ", re.M)


def changed_lines(diff: str) -> set[int]:
    """The old side's line numbers a `git diff -U0` changes."""
    lines: set[int] = set()
    for match in _HUNK.finditer(diff):
        start, count = int(match.group(1)), int(match.group(2) or 1)
        lines.update(range(start, start + count))
    return lines


def tree_mismatches(repo: Path, fix_report: Mapping[str, Any]) -> list[str]:
    """Files whose changed lines are not exactly the lines fix says it wrote: a report that
    claims a rewrite it did not make (or the reverse) is not a measure of fix."""
    claimed: dict[str, set[int]] = {}
    for link in fix_report.get("links") or []:
        if link.get("written"):
            claimed.setdefault(report_path(str(link.get("path", "")), repo), set()).add(
                int(link.get("line") or 0))
    changed = {name for name in git(repo, "diff", "--name-only").splitlines() if name}
    problems = []
    for name in sorted(changed | set(claimed)):
        lines = changed_lines(git(repo, "diff", "-U0", "--no-color", "--", name))
        if lines != claimed.get(name, set()):
            problems.append(f"{name}: lines changed {sorted(lines)[:10]}, reported written "
                            f"{sorted(claimed.get(name, set()))[:10]}")
    return problems


# ------------------------------------------------------------------ the report


def build_report(world: World, cases: Sequence[Mapping[str, Any]], placed: Sequence[Placed],
                 run: FixRun, repo: Path, kept: bool) -> dict[str, Any]:
    scores = score_links(run.report, placed, cases, repo)
    fix = run.report
    return {
        "format": REPORT_FORMAT, "world": world.name, "cases": len(cases),
        "repo": str(repo) if kept else None,
        "fix": {"exit_status": run.exit_status, "seconds": run.seconds,
                "distinct_urls": fix.get("distinct_urls"), "requests": fix.get("requests"),
                "dead_left": fix.get("dead_left"), "counts": fix.get("counts")},
        **summarize(scores),
        "dates": date_check(fix, placed, repo),
        "missing": [s.case_id for s in scores if s.outcome is None],
        "extra_links": extra_links(fix, placed, repo),
        "tree_mismatches": tree_mismatches(repo, fix),
        "problems": fix.get("problems") or [],
        "results": [{**asdict(s), "date": p.date.isoformat(), "dated_by": p.dated_by}
                    for s, p in zip(scores, placed, strict=True)],
    }


def _row(name: str, counts: Mapping[str, Any]) -> str:
    cells = [name, str(counts["n"]), *(str(counts[o]) for o in OUTCOMES),
             f"{counts['ok']} ({100 * counts['ok_rate']:.0f}%)"]
    if counts["missing"]:
        cells[-1] += f", {counts['missing']} not reported"
    return "| " + " | ".join(cells) + " |"


def _table(title: str, groups: Mapping[str, Mapping[str, Any]],
           overall: Mapping[str, Any] | None) -> list[str]:
    lines = [f"| {title} | links | right | wrong | own archive | left | as it should |",
             "|---|--:|--:|--:|--:|--:|--:|", *(_row(name, c) for name, c in groups.items())]
    if overall is not None:
        lines.append(_row("**overall**", overall))
    return [*lines, ""]


def render_markdown(report: Mapping[str, Any]) -> str:
    fix, dates = report["fix"], report["dates"]
    out = [f"## pagetrail fix on world {report['world']} ({report['cases']} links)", "",
           *_table("category", report["by_category"], report["overall"]),
           *_table("expected", report["by_kind"], None),
           *_table("format", report["by_format"], None),
           "right: rewritten to a right address (an archived case: to a capture of its own "
           "URL); own archive: to a capture of the dead URL itself; left: not rewritten. "
           "As it should: right for moved/replacement/archived, left for none/alive.", "",
           f"fix exited {fix['exit_status']} after {fix['seconds']:.1f} s: "
           f"{fix['distinct_urls']} distinct URLs, {fix['requests']} recovery requests, "
           f"{fix['dead_left']} dead link(s) left; {dates['as_written']}/{dates['links']} "
           f"links dated by git as committed."]
    if report["extra_links"]:
        out.append(f"{len(report['extra_links'])} link(s) fix found are no case's.")
    return "\n".join(out) + "\n"


def failures(report: Mapping[str, Any]) -> list[BenchError]:
    """What makes a finished run's figures not fix's."""
    found: list[BenchError] = []
    if report["missing"]:
        found.append(ReportIncomplete(
            f"fix's report lacks {len(report['missing'])} of the {report['cases']} links: "
            f"{', '.join(report['missing'][:10])}"))
    if report["tree_mismatches"]:
        found.append(TreeMismatch("; ".join(report["tree_mismatches"][:5])))
    return found


# ------------------------------------------------------------------ the command


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("world", type=Path, help="a testbed world directory")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="only the first N cases")
    parser.add_argument("--cases", default=None, metavar="IDS",
                        help="only these cases, comma-separated ids")
    parser.add_argument("--json", action="store_true",
                        help="the JSON report on stdout (the tables go to stderr)")
    parser.add_argument("--repo", type=Path, default=None, metavar="DIR",
                        help="write the repository here (new or empty) and keep it")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit of the fix run (default {DEFAULT_TIMEOUT:g})")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    world = read_world(args.world)
    cases = select_cases(world, parse_ids(args.cases), args.limit)
    then = parse_link_date(world.then) or datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="pagetrail-fix-bench-repo-") as scratch:
        repo = args.repo or Path(scratch) / "docs-repo"
        placed = write_repository(repo, cases, then)
        fix_run = asyncio.run(serve_and_fix(world, repo, args.timeout))
        for line in fix_run.stderr.splitlines():
            print(f"fix: {line}", file=sys.stderr)
        return build_report(world, cases, placed, fix_run, repo, kept=args.repo is not None)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = run(args)
    except BenchError as exc:
        print(f"fix_world: error: {exc.code}: {exc}", file=sys.stderr)
        return exc.status
    text = render_markdown(report)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        print(text, file=sys.stderr)
    else:
        print(text)
    problems = failures(report)
    for problem in problems:
        print(f"fix_world: error: {problem.code}: {problem}: the figures above are not "
              "fix's", file=sys.stderr)
    return max((p.status for p in problems), default=0)


if __name__ == "__main__":
    sys.exit(main())
