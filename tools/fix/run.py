"""Fix the links of a tree of documents: extract, date, recover once per URL, decide, rewrite.

`fix_paths` is the engine of `pagetrail fix`. Every distinct URL is recovered once (the
earliest date any file links it is its date, so the archived copy is the one the first
author saw), through the recovery jobs (tools.workers): their concurrency, the store's cache,
per-host politeness, workers when a broker is configured, and resumption — a job already
answered is read back, so an interrupted run loses nothing and a rerun continues.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field

from pagetrail.tools.fix.config import Rules
from pagetrail.tools.fix.dates import line_dates
from pagetrail.tools.fix.escape import escaped
from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.fix.files import FileProblem, SourceFile, gather, read_source
from pagetrail.tools.fix.html import attribute_value
from pagetrail.tools.fix.markers import marked_links
from pagetrail.tools.fix.proof import VERSION, prove
from pagetrail.tools.fix.rewrite import Edit, unified_diff, write_back
from pagetrail.tools.fix.spans import LinkSpan, Unparsable
from pagetrail.tools.fix.urls import is_archive_url
from pagetrail.tools.models import Memento, Recovery
from pagetrail.tools.settings import Settings, get_settings

Verdict = Literal["alive", "moved", "replacement", "archived", "unfixable", "skipped",
                  "excluded"]
VERDICTS: tuple[Verdict, ...] = ("alive", "moved", "replacement", "archived", "unfixable",
                                 "skipped", "excluded")
FIXABLE = ("moved", "replacement", "archived")
ProgressFn = Callable[[int, int], None]
REFUSED = ("refused: the document's parser does not read the new address as this link's "
           "target (not written)")


class Options(BaseModel):
    """What a fix rewrites and how."""

    kinds: tuple[str, ...] = FIXABLE
    min_confidence: float = 0.0
    archived_as: Literal["url", "robust"] = "url"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_file_bytes: int = 5_000_000
    # The repository's configuration (tools.fix.config): URL exclusions, accepted statuses,
    # the files it reads. None: no exclusions; inline markers are obeyed all the same.
    rules: Rules | None = None


class LinkVerdict(BaseModel):
    """One link of one file: what it is now and what the fix does with it."""

    path: str
    line: int
    url: str
    form: str
    date: datetime
    date_source: str  # git, mtime, now, given
    verdict: Verdict
    new_url: str | None = None
    confidence: float | None = None
    memento_date: datetime | None = None
    reason: str = ""
    rewritten: bool = False  # the diff changes it
    written: bool = False  # … and the change is in the file (--write)

    @property
    def dead_left(self) -> bool:
        """Still dead in the file: not repaired on disk (a dry run repairs nothing)."""
        return self.verdict in ("moved", "replacement", "archived", "unfixable") and (
            not self.written)


class FileSummary(BaseModel):
    """One file's links counted by verdict, and what the fix changed in it."""

    path: str
    counts: dict[str, int] = Field(default_factory=dict)
    rewritten: int = 0
    written: bool = False


class FixReport(BaseModel):
    """A fix run: every link's verdict, per-file counts, skipped files, the diff, costs."""

    links: list[LinkVerdict] = Field(default_factory=list)
    files: list[FileSummary] = Field(default_factory=list)
    problems: list[FileProblem] = Field(default_factory=list)
    diff: str = ""
    distinct_urls: int = 0
    recovered: int = 0  # distinct URLs recovered (alive ones included)
    resumed: int = 0  # distinct URLs whose answer an earlier run had recorded (read back)
    requests: int = 0  # HTTP requests this run's recoveries made (answers read back: none)
    checks: int = 0  # proposed new addresses checked (a day's checks are read back)
    timemaps: int = 0  # archived URLs whose captures were listed (linked at several dates)
    seconds: float = 0.0
    written: bool = False

    @property
    def dead_left(self) -> int:
        return sum(1 for link in self.links if link.dead_left)

    def counts(self) -> dict[str, int]:
        totals = dict.fromkeys(VERDICTS, 0)
        for link in self.links:
            totals[link.verdict] += 1
        return totals


# ------------------------------------------------------------------ verdicts (pure)


def verdict_of(recovery: Recovery, dead_targets: frozenset[str] = frozenset(),
               ) -> tuple[Verdict, str | None, float | None, datetime | None, str]:
    """(verdict, new URL, confidence, memento date, reason) of one recovery. A live answer
    whose page does not work now (`dead_targets`) is no answer: a dead link is never
    rewritten into another; the archived copy, if any, is the answer then."""
    answer = recovery.answer
    if answer == "alive":
        return "alive", None, None, None, recovery.reason
    if answer == "unverified":
        return "skipped", None, None, None, recovery.reason
    if answer in ("moved", "replacement", "redirected"):
        kind = "moved" if answer == "redirected" else answer
        live = ([c for c in recovery.candidates if c.kind == kind] or [
            c for c in recovery.candidates if c.kind != "archived"])[:1]
        live = [c for c in live if c.url not in dead_targets]
        if live:
            return kind, live[0].url, live[0].confidence, None, recovery.reason  # type: ignore[return-value]
    if answer in ("archived", "moved", "replacement") and recovery.memento is not None:
        archived = [c for c in recovery.candidates if c.kind == "archived"]
        confidence = archived[0].confidence if archived else 1.0
        return ("archived", recovery.memento.memento_url, confidence,
                recovery.memento.datetime, recovery.reason)
    if answer in ("moved", "replacement"):
        return "unfixable", None, None, None, "the proposed page does not work now"
    return "unfixable", None, None, None, recovery.reason or "no answer found"


def pick_capture(captures: Sequence[Memento], at: datetime) -> Memento | None:
    """The good capture (status 200, or unknown) closest before `at`, else the first after."""
    good = sorted((m for m in captures if m.status in (None, 200)), key=lambda m: m.datetime)
    before = [m for m in good if m.datetime <= at]
    if before:
        return before[-1]
    return good[0] if good else None


async def captures_of(urls: Sequence[str], settings: Settings) -> dict[str, list[Memento]]:
    """Every capture of each archived answer's URL (one TimeMap each), so that each link gets
    the capture closest to its own date; a URL whose archives fail keeps the recovery's."""
    from pagetrail.tools.api import list_captures
    from pagetrail.tools.errors import PagetrailError

    found: dict[str, list[Memento]] = {}
    for url in urls:
        try:
            found[url] = await list_captures(url, settings=settings)
        except PagetrailError:
            continue  # the recovery's own capture stands (it was found moments ago)
    return found


def _versioned_attrs(memento_url: str, when: datetime) -> str:
    return (f' data-versionurl="{attribute_value(memento_url)}"'
            f' data-versiondate="{when.strftime("%Y-%m-%d")}"')


def edits_for(source: SourceFile, spans: Sequence[LinkSpan], verdicts: Sequence[LinkVerdict],
              options: Options) -> list[tuple[Edit, LinkVerdict]]:
    """The edits that apply the policy to one file's links, each with its link's verdict
    (marked rewritten). The new address is escaped for the format and the link's form; each
    edit says the target it replaces and the one it writes, for tools.fix.proof."""
    edits: list[tuple[Edit, LinkVerdict]] = []
    for span, verdict in zip(spans, verdicts, strict=True):
        if verdict.verdict not in options.kinds or verdict.new_url is None:
            continue
        if (verdict.confidence or 0.0) < options.min_confidence:
            continue
        if verdict.verdict == "archived" and options.archived_as == "robust" and \
                span.tag_end is not None and verdict.memento_date is not None:
            edit = Edit(span.tag_end, span.tag_end,
                        _versioned_attrs(verdict.new_url, verdict.memento_date),
                        target=VERSION + verdict.new_url)
        else:
            edit = Edit(span.start, span.end, escaped(verdict.new_url, source.fmt, span.form),
                        old=span.url, target=verdict.new_url)
        edits.append((edit, verdict))
        verdict.rewritten = True
    return edits


def proven_edits(source: SourceFile, planned: Sequence[tuple[Edit, LinkVerdict]],
                 problems: list[FileProblem]) -> tuple[str, list[Edit]]:
    """The new text with only the edits the format's parser confirms (tools.fix.proof);
    each refused one is unmarked, given its reason, and named in `problems`."""
    new_text, kept, refused = prove(source.text, source.fmt, [edit for edit, _ in planned])
    refused_set = set(refused)
    for edit, verdict in planned:
        if edit in refused_set:
            verdict.rewritten = False
            verdict.reason = (f"{verdict.reason}; " if verdict.reason else "") + REFUSED
            problems.append(FileProblem(
                path=str(source.path), code="rewrite-refused",
                message=f"line {verdict.line}: {verdict.url} → {verdict.new_url}: {REFUSED}"))
    return new_text, kept


# ------------------------------------------------------------------ the run


class Wanted(NamedTuple):
    """What a URL's recovery is asked with: the earliest date a file links it, the context
    of the link written then, and an anchor (see `want`)."""

    date: datetime
    context: str
    anchor: str = ""


def want(wanted: dict[str, Wanted], span: LinkSpan, when: datetime) -> None:
    """Count one occurrence of a link into `wanted`. The earliest date wins, with its
    link's context (the archived copy is the one its first author saw); the anchor is that
    link's, or, when it has none (a bare URL), the first anchor met in the run's order
    (files sorted, links in document order). Each choice depends on the files alone, so a
    rerun asks the same recovery (the same job key: an interrupted run resumes)."""
    known = wanted.get(span.url)
    if known is None:
        wanted[span.url] = Wanted(when, span.context, span.anchor)
    elif when < known.date:
        wanted[span.url] = Wanted(when, span.context, span.anchor or known.anchor)
    elif not known.anchor and span.anchor:
        wanted[span.url] = known._replace(anchor=span.anchor)


def _recover_items(wanted: dict[str, Wanted]) -> list[dict[str, Any]]:
    """The recovery jobs' inputs (tools.workers.jobs): the link's text as its anchor, the
    evidence a recovery without an archived copy leans on (its queries, and how well a
    candidate's title matches it)."""
    items = []
    for url, (date, context, anchor) in wanted.items():
        item = {"url": url, "date": date.isoformat(), "context": context}
        if anchor:
            item["anchor"] = anchor
        items.append(item)
    return items


async def recover_all(wanted: dict[str, Wanted], settings: Settings,
                      store: Any, progress: ProgressFn | None,
                      ) -> tuple[dict[str, Recovery | str], set[str]]:
    """url → its Recovery (or the named error that stopped it), one job per URL; and the
    URLs whose answer an earlier (perhaps interrupted) run had already recorded."""
    from pagetrail.store.jobs import done_keys
    from pagetrail.tools.workers.dispatch import get_dispatcher
    from pagetrail.tools.workers.jobs import job_key

    items = _recover_items(wanted)
    if not items:
        return {}, set()
    keys = {job_key("recover", item): item["url"] for item in items}
    before = await asyncio.to_thread(done_keys, store, "recover", list(keys))
    dispatcher = get_dispatcher(settings, store)
    records = await dispatcher.recover(items, progress=progress)
    answers: dict[str, Recovery | str] = {}
    for item, record in zip(items, records, strict=True):
        if record.status == "done":
            answers[item["url"]] = Recovery.model_validate(record.result)
        else:
            answers[item["url"]] = record.error or record.status
    return answers, {keys[key] for key in before}


def proposed_targets(answers: dict[str, Recovery | str]) -> list[str]:
    """The new address each moved/replacement answer proposes (its top live candidate)."""
    return sorted({top.url for a in answers.values() if isinstance(a, Recovery)
                   and a.answer in ("moved", "replacement")
                   for top in [c for c in a.candidates if c.kind != "archived"][:1]})


async def dead_targets(answers: dict[str, Recovery | str], settings: Settings, store: Any,
                       ) -> frozenset[str]:
    """The proposed new addresses (moved/replacement) that do not work now: each checked
    once, politely, through the check jobs (a day's checks are reused by a rerun)."""
    from pagetrail.tools.workers.dispatch import get_dispatcher

    targets = proposed_targets(answers)
    if not targets:
        return frozenset()
    batch = "fix-verify:" + datetime.now(UTC).strftime("%Y-%m-%d")
    records = await get_dispatcher(settings, store).run(
        "check", [{"url": url, "batch": batch} for url in targets])
    dead = set()
    for url, record in zip(targets, records, strict=True):
        verdict = (record.result or {}).get("verdict") if record.status == "done" else None
        if verdict not in ("ok", "redirected"):
            dead.add(url)
    return frozenset(dead)


def _skip_reason(span: LinkSpan, archive_prefixes: tuple[str, ...],
                 only_urls: frozenset[str] | None = None) -> str | None:
    if only_urls is not None and span.url not in only_urls:
        return "not among the link checker's failures"
    if span.versioned:
        return "a Robust Link: its archived copy is already given"
    if is_archive_url(span.url, archive_prefixes):
        return "already an archived copy"
    return None


# ------------------------------------------------------------------ the repository's rules


def excluded_links(source: SourceFile, spans: Sequence[LinkSpan], rules: Rules,
                   ) -> dict[int, str]:
    """span.start → why the link is neither checked nor fixed: an inline marker
    (tools.fix.markers) or a URL pattern of the configuration or an ignore file."""
    reasons = marked_links(source.text, source.fmt, spans) if rules.markers else {}
    for span in spans:
        if span.start not in reasons:
            pattern = rules.excluded(span.url)
            if pattern is not None:
                reasons[span.start] = f"matches {pattern.regex!r} ({pattern.origin})"
    return reasons


def accepted_status(answer: Recovery, rules: Rules) -> str | None:
    """Why a link that failed its check is not dead after all: its status is one the
    configuration accepts (a redirect to a working page is still a move, and rewritten)."""
    check = answer.check
    if check is None or check.verdict in ("ok", "redirected") or not rules.accepts(check.status):
        return None
    return f"HTTP {check.status} is accepted ({rules.accept_origin or 'configuration'})"


async def fix_paths(paths: Sequence[str], *, options: Options | None = None,
                    write: bool = False, settings: Settings | None = None,
                    store: Any | None = None, progress: ProgressFn | None = None,
                    confirm: Callable[[LinkVerdict], bool] | None = None,
                    only_urls: frozenset[str] | None = None) -> FixReport:
    """Check and repair the links of every document under `paths`; with `write`, apply the
    diff (a file changed on disk meanwhile is refused and reported). `confirm`, when given,
    is asked per rewrite (interactive). `only_urls` (a link checker's failures, e.g. lychee's
    report) limits the recoveries to those URLs; other links are skipped."""
    from pagetrail.tools.settings import configured_store

    options = options or Options()
    settings = settings or get_settings()
    started = time.monotonic()
    report = FixReport()
    rules = options.rules or Rules()
    files = [(path, fmt) for path, fmt in gather(
        paths, include=options.include, exclude=options.exclude, problems=report.problems)
        if rules.reads(path)]
    excluded: dict[tuple[str, int], str] = {}  # (file, span.start) → why
    archive_prefixes = tuple(settings.archives)
    documents: list[tuple[SourceFile, list[LinkSpan], list[tuple[datetime, str]]]] = []
    wanted: dict[str, Wanted] = {}
    dated: dict[str, set[datetime]] = {}
    for path, fmt in files:
        source = read_source(path, fmt, max_bytes=options.max_file_bytes)
        if isinstance(source, FileProblem):
            report.problems.append(source)
            continue
        try:
            spans = extract_links(source.text, fmt)
        except Unparsable as exc:
            report.problems.append(FileProblem(path=str(path), code="unparsable",
                                               message=f"{exc}: no link read, none rewritten"))
            continue
        excluded.update({(str(source.path), start): why for start, why
                         in excluded_links(source, spans, rules).items()})
        dates = line_dates(path) if spans else None
        undated = sorted({span.line for span in spans} & dates.unknown) if dates else []
        if undated:
            report.problems.append(FileProblem(
                path=str(path), code="unknown-date",
                message=f"git gives line(s) {', '.join(map(str, undated[:10]))} an author date "
                        "out of range: unknown, the file's modification time stands in"))
        stamped = [dates.at(span.line) if dates else (datetime.now(UTC), "now")
                   for span in spans]
        for span, (when, _how) in zip(spans, stamped, strict=True):
            if _skip_reason(span, archive_prefixes, only_urls) or \
                    (str(source.path), span.start) in excluded:
                continue
            want(wanted, span, when)
            dated.setdefault(span.url, set()).add(when)
        documents.append((source, spans, stamped))
    report.distinct_urls = len(wanted)
    store = store if store is not None else configured_store(settings.database_url)
    answers, resumed = await recover_all(wanted, settings, store, progress)
    report.recovered = len(answers)
    report.resumed = len(resumed)
    report.requests = sum(a.requests for url, a in answers.items()
                          if isinstance(a, Recovery) and url not in resumed)
    dead = await dead_targets(answers, settings, store)
    report.checks = len(proposed_targets(answers))
    # The recovery's capture is the one nearest the URL's earliest date; a URL linked at
    # several dates gets its captures listed, so that each link gets the one nearest its own.
    archived_urls = sorted(url for url, a in answers.items() if isinstance(a, Recovery)
                           and verdict_of(a, dead)[0] == "archived" and len(dated[url]) > 1)
    report.timemaps = len(archived_urls)
    captures = await captures_of(archived_urls, settings)
    diffs: list[str] = []
    for source, spans, stamped in documents:
        name = str(source.path)
        verdicts = []
        for span, (when, how) in zip(spans, stamped, strict=True):
            why = excluded.get((name, span.start))
            if why is not None:
                verdicts.append(LinkVerdict(path=name, line=span.line, url=span.url,
                                            form=span.form, date=when, date_source=how,
                                            verdict="excluded", reason=why))
                continue
            skip = _skip_reason(span, archive_prefixes, only_urls)
            answer = answers.get(span.url)
            if skip is not None or answer is None:
                verdicts.append(LinkVerdict(path=name, line=span.line, url=span.url,
                                            form=span.form, date=when, date_source=how,
                                            verdict="skipped", reason=skip or "not recovered"))
                continue
            if isinstance(answer, str):
                verdicts.append(LinkVerdict(path=name, line=span.line, url=span.url,
                                            form=span.form, date=when, date_source=how,
                                            verdict="skipped", reason=answer))
                continue
            accepted = accepted_status(answer, rules)
            if accepted is not None:
                verdicts.append(LinkVerdict(path=name, line=span.line, url=span.url,
                                            form=span.form, date=when, date_source=how,
                                            verdict="alive", reason=accepted))
                continue
            kind, new_url, confidence, memento_date, reason = verdict_of(answer, dead)
            chosen = pick_capture(captures.get(span.url, []), when) if kind == "archived" \
                else None
            if chosen is not None:
                new_url, memento_date = chosen.memento_url, chosen.datetime
            verdicts.append(LinkVerdict(path=name, line=span.line, url=span.url,
                                        form=span.form, date=when, date_source=how,
                                        verdict=kind, new_url=new_url, confidence=confidence,
                                        memento_date=memento_date, reason=reason))
        planned = edits_for(source, spans, verdicts, options)
        new_text, edits = proven_edits(source, planned, report.problems)
        if confirm is not None and edits:
            # Asked only about rewrites already proven; what is declined is left out, and
            # the rest proven again together.
            for _edit, verdict in planned:
                if verdict.rewritten and not confirm(verdict):
                    verdict.rewritten = False
            planned = [(edit, verdict) for edit, verdict in planned if verdict.rewritten]
            new_text, edits = proven_edits(source, planned, report.problems)
        summary = FileSummary(path=name, rewritten=len(edits))
        for verdict in verdicts:
            summary.counts[verdict.verdict] = summary.counts.get(verdict.verdict, 0) + 1
        report.links.extend(verdicts)
        if edits:
            diffs.append(unified_diff(source.text, new_text, name))
            if write:
                problem = write_back(source, new_text)
                if problem is None:
                    summary.written = True
                    for verdict in verdicts:
                        verdict.written = verdict.rewritten
                else:
                    report.problems.append(problem)
                    for verdict in verdicts:
                        verdict.rewritten = False
        report.files.append(summary)
    report.diff = "".join(diffs)
    report.written = write
    report.seconds = round(time.monotonic() - started, 3)
    return report


def report_path(path: str | Path, root: str | Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)
