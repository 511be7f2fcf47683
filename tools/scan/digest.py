"""The link-rot digest: what a scan found, as data (for Slack) and as Markdown or JSON.

`build_digest(store, result)` turns a `ScanResult` into a `ScanDigest`: counts, and every link
in a state worth reporting — confirmed dead (the newly confirmed marked), suspect, fixed,
flapping — changed in this scan or not, each since when, with the pages that link to it
(anchor text from the link graph); suspect links say the earliest date they can be
confirmed. `recover_confirmed` runs the recovery pipeline on confirmed dead links, the newly
confirmed first, within a budget (cached answers and people's picks are reused by `recover`
through the store); only confirmed links are recovered, and `recovery_plan` says so. `run_digests` scans every watched
target once and returns one `ChannelDigest` per channel, recorded as a `DigestRun` that the
Slack face posts (and marks posted) later.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from lxml.etree import LxmlError
from pydantic import BaseModel, Field

from pagetrail.store.db import STORE_ERRORS, Store
from pagetrail.store.digests import add_run
from pagetrail.store.faults import is_store_fault
from pagetrail.store.linkgraph import backlinks
from pagetrail.store.scans import checked_in_scan
from pagetrail.store.watches import all_watches
from pagetrail.tools.errors import PagetrailError
from pagetrail.tools.scan.scanner import (
    Clock,
    LinkChange,
    ScanOptions,
    ScanResult,
    scan,
    utc_now,
)
from pagetrail.tools.settings import Settings, get_settings

log = logging.getLogger(__name__)

MAX_SOURCES = 3  # linking pages shown per link
MAX_LISTED = 50  # links listed per section (counts stay exact)
# What scanning a site and digesting it can raise: the web's and the store's failures, and
# what a hostile site's bytes do to decoders and parsers (a corrupt gzip sitemap: zlib.error,
# EOFError). One target's such failure is its error in the digest, never the other targets';
# anything else is a bug and stops the run out loud.
TARGET_ERRORS = (PagetrailError, *STORE_ERRORS, OSError, EOFError, ValueError, LookupError,
                 zlib.error, LxmlError)


class LinkSource(BaseModel):
    page_url: str
    anchor: str = ""
    context: str = ""


class DigestRecovery(BaseModel):
    answer: str
    url: str | None = None
    kind: str | None = None
    confidence: float | None = None
    cached: bool = False


class DigestLink(BaseModel):
    """One link in a digest section: its URL, verdict, state and the pages it is on."""

    url: str
    verdict: str
    status: int | None = None
    reason: str = ""
    state: str
    previous: str = ""
    failures: int = 0
    found_on: list[LinkSource] = Field(default_factory=list)
    since: str | None = None  # in this state since (ISO time)
    confirmable_at: str | None = None  # suspect: the earliest it can be confirmed dead
    recovery: DigestRecovery | None = None
    recovery_error: str = ""  # the recovery was tried and failed: why


class DriftLink(BaseModel):
    """A watched link that works but whose page changed (tools/linkcheck/drift.py)."""

    url: str
    similarity: float
    threshold: float
    archived_title: str = ""
    live_title: str = ""
    memento_url: str
    memento_datetime: datetime
    robust_link: str  # HTML: the live URL with its archived copy (robustlinks.org)
    found_on: list[LinkSource] = Field(default_factory=list)


class ScanDigest(BaseModel):
    """What a scan found: newly confirmed dead links, suspects, fixed ones."""

    target: str
    scan_id: str
    started_at: str
    seconds: float
    pages_crawled: int
    links_found: int
    urls_checked: int
    requests: int
    verdicts: dict[str, int] = Field(default_factory=dict)
    states: dict[str, int] = Field(default_factory=dict)
    # Every link in each state after this scan (at most MAX_LISTED listed; counts exact).
    confirmed: list[DigestLink] = Field(default_factory=list)  # the newly confirmed first
    newly_confirmed: list[DigestLink] = Field(default_factory=list)  # confirmed by this scan
    suspect: list[DigestLink] = Field(default_factory=list)
    fixed: list[DigestLink] = Field(default_factory=list)
    flapping: list[DigestLink] = Field(default_factory=list)
    still_dead: int = 0  # confirmed before this scan and still failing
    earliest_confirmation: str | None = None  # the first date a suspect link can be confirmed
    drifted: list[DriftLink] = Field(default_factory=list)  # working links, changed page
    drift_checked: int = 0  # working links compared with their archived copy
    drift_failures: list[str] = Field(default_factory=list)
    error: str = ""
    skipped: dict[str, int] = Field(default_factory=dict)  # ScanResult.skipped
    unreadable: list[dict[str, str]] = Field(default_factory=list)  # pages not read: url, code
    limits: dict[str, int] = Field(default_factory=dict)
    # Save Page Now's answers to this scan's capture requests: per status and per named
    # outcome (`error:too-many-daily-captures`, `already_captured`, …; ScanResult.captures).
    captures: dict[str, int] = Field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        states = self.states
        return {"confirmed": states.get("confirmed", 0),
                "newly_confirmed": len(self.newly_confirmed),
                "suspect": states.get("suspect", 0), "fixed": states.get("fixed", 0),
                "flapping": states.get("flapping", 0), "still_dead": self.still_dead,
                "drifted": len(self.drifted)}


class ChannelDigest(BaseModel):
    """One channel's weekly digest: every watched target's scan, summed up."""

    channel: str
    period: str
    scans: list[ScanDigest] = Field(default_factory=list)
    run_id: int | None = None  # its run in store.digests (tools.scan.digest_delivery marks it posted)


# --- building -----------------------------------------------------------------------------

def _link(store: Store, change: LinkChange) -> DigestLink:
    sources = [LinkSource(page_url=e.page_url, anchor=e.anchor, context=e.context[:300])
               for e in backlinks(store, change.url, limit=MAX_SOURCES)]
    return DigestLink(url=change.url, verdict=change.verdict, status=change.status,
                      reason=change.reason, state=change.after, previous=change.before,
                      failures=change.failures, found_on=sources, since=change.since,
                      confirmable_at=change.confirmable_at)


def build_digest(store: Store, result: ScanResult) -> ScanDigest:
    """The digest of one scan (reads the link graph for the linking pages): every link in a
    reported state, changed by this scan or not."""
    by_state: dict[str, list[LinkChange]] = defaultdict(list)
    for link in result.links:
        by_state[link.after].append(link)
    # The newly confirmed first: they are the news, and what recovery takes first.
    by_state["confirmed"].sort(key=lambda c: (c.before == "confirmed", c.url))
    sections = {state: [_link(store, c) for c in links[:MAX_LISTED]]
                for state, links in by_state.items()}
    newly = sum(1 for c in result.changes if c.after == "confirmed")
    confirmable = [c.confirmable_at for c in by_state["suspect"] if c.confirmable_at]
    unreadable = [{"url": p.url, "code": p.code, "reason": p.reason} for p in result.problems]
    # Nothing crawled because the target page itself could not be read: the scan failed.
    error = next((f"{p['code']}: {p['reason']}" for p in unreadable
                  if result.pages_crawled == 0 and p["url"] == result.target), "")
    return ScanDigest(
        skipped=result.skipped, unreadable=unreadable, limits=result.limits, error=error,
        captures=dict(result.captures),
        target=result.target, scan_id=result.scan_id, started_at=result.started_at,
        seconds=result.seconds, pages_crawled=result.pages_crawled,
        links_found=result.links_found, urls_checked=result.urls_checked,
        requests=result.requests, verdicts=result.verdicts, states=result.states,
        still_dead=max(0, result.states.get("confirmed", 0) - newly),
        confirmed=sections.get("confirmed", []),
        newly_confirmed=[link for link in sections.get("confirmed", [])
                         if link.previous != "confirmed"],
        suspect=sections.get("suspect", []), fixed=sections.get("fixed", []),
        flapping=sections.get("flapping", []),
        earliest_confirmation=min(confirmable) if confirmable else None,
    )


def recovery_plan(digest: ScanDigest, limit: int) -> str:
    """What `recover_confirmed` will do for this digest, and when the rest can follow: only
    links confirmed dead are recovered (IABot's discipline: repeated failures over days)."""
    counts = digest.counts
    todo = min(limit, len(digest.confirmed))
    plan = (f"Recovering {todo} of {counts['confirmed']} confirmed dead link(s)"
            + (f" ({counts['newly_confirmed']} newly confirmed)" if counts["newly_confirmed"]
               else "") + ".")
    if counts["suspect"]:
        plan += (f" {counts['suspect']} suspect link(s) are pending confirmation and are "
                 "not recovered yet")
        if digest.earliest_confirmation:
            plan += (f"; the earliest can be confirmed from "
                     f"{digest.earliest_confirmation[:16].replace('T', ' ')} UTC "
                     "(scan again then)")
        plan += "."
    return plan


async def recover_confirmed(digest: ScanDigest, *, store: Store, settings: Settings,
                            limit: int = 10, seconds: float = 300.0) -> int:
    """Run `recover` on the confirmed dead links (the newly confirmed first), at most
    `limit`, within `seconds`.

    Returns how many were attempted. A failing recovery is that link's `recovery_error`.
    """
    from pagetrail.tools.recovery.route import recover_link

    deadline = time.monotonic() + seconds
    attempted = 0
    for link in digest.confirmed[:limit]:
        if time.monotonic() >= deadline:
            break
        attempted += 1
        source = link.found_on[0] if link.found_on else None
        try:
            answer = await asyncio.wait_for(recover_link(
                link.url, source_url=source.page_url if source else None,
                anchor=source.anchor if source else None,
                context=source.context if source else None, slim=False,
                settings=settings, store=store), timeout=max(1.0, deadline - time.monotonic()))
        except (PagetrailError, TimeoutError, *STORE_ERRORS) as exc:
            if is_store_fault(exc):
                raise  # the database away past its budget: not this link's failure
            log.warning("digest: recovery of %s failed: %s", link.url, exc)
            link.recovery_error = (f"{type(exc).__name__}: {exc}" if str(exc)
                                   else "timed out" if isinstance(exc, TimeoutError)
                                   else type(exc).__name__)[:300]
            continue
        top = answer.candidates[0] if answer.candidates else None
        link.recovery = DigestRecovery(
            answer=answer.answer, url=top.url if top else None, kind=top.kind if top else None,
            confidence=top.confidence if top else None, cached=answer.cached)
    return attempted


async def check_drift(digest: ScanDigest, *, store: Store, settings: Settings,
                      limit: int, seconds: float) -> None:
    """Compare this scan's working outbound links with their captures from first sight;
    the drifted ones become the digest's "content changed" section."""
    from pagetrail.tools.net.urls import site_of
    from pagetrail.tools.recovery.output import robust_anchor
    from pagetrail.tools.scan.driftwatch import check_links
    from pagetrail.tools.scan.scanner import is_same_site

    verdicts = await asyncio.to_thread(checked_in_scan, store, digest.scan_id)
    site = site_of(digest.target)
    working = sorted(url for url, verdict in verdicts.items()
                     if verdict == "ok" and not is_same_site(url, site))
    report = await check_links(working, store=store, settings=settings, limit=limit,
                               seconds=seconds)
    digest.drift_checked = report.checked
    digest.drift_failures = [f.error for f in report.failures][:MAX_LISTED]
    for drift in [d for d in report.drifts if d.drifted][:MAX_LISTED]:
        sources = [LinkSource(page_url=e.page_url, anchor=e.anchor, context=e.context[:300])
                   for e in await asyncio.to_thread(backlinks, store, drift.url,
                                                    limit=MAX_SOURCES)]
        anchor = sources[0].anchor if sources else ""
        digest.drifted.append(DriftLink(
            url=drift.url, similarity=drift.similarity, threshold=drift.threshold,
            archived_title=drift.archived_title, live_title=drift.live_title,
            memento_url=drift.memento.memento_url, memento_datetime=drift.memento.datetime,
            robust_link=robust_anchor(drift.url, drift.memento.memento_url,
                                    drift.memento.datetime, anchor),
            found_on=sources))


# --- rendering ------------------------------------------------------------------------------

def _md_link(link: DigestLink) -> str:
    status = f" {link.status}" if link.status is not None else ""
    line = f"- `{link.url}` — {link.verdict}{status}"
    if link.failures:
        line += f", {link.failures} failed check{'s' if link.failures != 1 else ''}"
    if link.reason:
        line += f" ({link.reason})"
    if link.since:
        line += f", {link.state} since {_day(link.since)}"
    if link.state == "confirmed" and link.previous != "confirmed":
        line += " (new)"
    if link.confirmable_at:
        line += f", can be confirmed from {_day(link.confirmable_at)}"
    for source in link.found_on:
        anchor = f" “{source.anchor}”" if source.anchor else ""
        line += f"\n  - on {source.page_url}{anchor}"
    if link.recovery is not None:
        r = link.recovery
        if r.url:
            line += f"\n  - suggested: {r.url} ({r.kind}, confidence {r.confidence:.2f})"
        else:
            line += f"\n  - no replacement found ({r.answer})"
    elif link.recovery_error:
        line += f"\n  - recovery failed: {link.recovery_error}"
    return line


def _day(iso: str) -> str:
    return iso[:10]


def scan_markdown(digest: ScanDigest) -> str:
    lines = [f"## Link rot: {digest.target}", ""]
    if digest.error:
        lines += [f"Scan failed: {digest.error}", ""]
        return "\n".join(lines)
    counts = digest.counts
    skipped = _skipped_text(digest)
    lines.append(
        f"{digest.pages_crawled} pages crawled, {digest.links_found} links, "
        f"{digest.urls_checked} distinct URLs checked in {digest.seconds:.1f} s. "
        f"Confirmed dead: {counts['confirmed']} ({counts['newly_confirmed']} new), "
        f"suspect: {counts['suspect']}, fixed: {counts['fixed']}, "
        f"flapping: {counts['flapping']}.")
    if digest.earliest_confirmation:
        lines.append(f"Suspect links can be confirmed dead from "
                     f"{_day(digest.earliest_confirmation)} at the earliest.")
    if skipped:
        lines += ["", f"**Not checked:** {skipped}"]
    if digest.unreadable:
        lines += ["", "### Pages that could not be read (their links are not in this scan)",
                  *(f"- `{p['url']}` — {p['code']}: {p['reason']}" for p in digest.unreadable)]
    for field_name, title in SECTIONS:
        links: list[DigestLink] = getattr(digest, field_name)
        total = counts[field_name]
        if links:
            more = f" (first {len(links)} of {total})" if total > len(links) else ""
            lines += ["", f"### {title}{more}", *(_md_link(link) for link in links)]
    if digest.drifted:
        lines += ["", "### Content changed (the link works, the page is not what was linked)",
                  *(_md_drift(item) for item in digest.drifted)]
    if digest.drift_failures:
        lines += ["", f"Content-drift checks that failed: {len(digest.drift_failures)}."]
    if digest.captures:
        lines += ["", f"Save Page Now: {captures_text(digest.captures)}."]
    return "\n".join(lines) + "\n"


_CAPTURE_STATUSES = ("success", "skipped", "pending", "refused", "error", "no_keys",
                     "unfinished", "dropped")


def captures_text(captures: dict[str, int]) -> str:
    """"3 success, 2 refused (error:too-many-daily-captures: 2)": statuses, then the named
    outcomes the archive gave (tools.archive.spn.outcome_name)."""
    statuses = ", ".join(f"{captures[s]} {s}" for s in _CAPTURE_STATUSES if captures.get(s))
    named = ", ".join(f"{name}: {count}" for name, count in sorted(captures.items())
                      if name not in _CAPTURE_STATUSES)
    return f"{statuses} ({named})" if named else statuses


def _md_drift(item: DriftLink) -> str:
    line = (f"- `{item.url}` — {round(item.similarity * 100)}% similar to the copy of "
            f"{item.memento_datetime:%Y-%m-%d}: was “{item.archived_title}”, now "
            f"“{item.live_title}”\n  - link the archived copy instead: {item.memento_url}\n"
            f"  - Robust Link: `{item.robust_link}`")
    for source in item.found_on:
        anchor = f" “{source.anchor}”" if source.anchor else ""
        line += f"\n  - on {source.page_url}{anchor}"
    return line


def _skipped_text(digest: ScanDigest) -> str:
    """What the scan left out and why, in one sentence ("" when nothing)."""
    skipped, limits = digest.skipped, digest.limits
    parts = []
    if skipped.get("links_beyond_page_cap"):
        parts.append(f"{skipped['links_beyond_page_cap']} links beyond the per-page cap "
                     f"({limits.get('links_per_page', '?')} links) on "
                     f"{skipped.get('pages_over_link_cap', 0)} page(s)")
    if skipped.get("links_beyond_scan_cap"):
        parts.append(f"{skipped['links_beyond_scan_cap']} links beyond the scan's cap "
                     f"({limits.get('links_per_scan', '?')} URLs)")
    if skipped.get("pages_unreadable"):
        parts.append(f"{skipped['pages_unreadable']} page(s) could not be read")
    return "; ".join(parts) + (" (PAGETRAIL_SCAN_MAX_LINKS_PER_PAGE, "
                               "PAGETRAIL_SCAN_MAX_LINKS)." if parts else "")


def to_markdown(digest: ScanDigest | ChannelDigest, *, chart: Path | str | None = None) -> str:
    """The digest as Markdown; `chart`: the trend picture's path, embedded under the title."""
    if isinstance(digest, ScanDigest):
        return scan_markdown(digest)
    head = f"# Link-rot digest for {digest.channel} ({digest.period})\n\n"
    if chart is not None:
        head += f"![Link health over the last weeks]({Path(chart).as_posix()})\n\n"
    body = "\n".join(scan_markdown(s) for s in digest.scans) or "No watched sites.\n"
    return head + body


SECTIONS = (("confirmed", "Confirmed dead"),
            ("suspect", "Suspect (failing, not yet confirmed)"),
            ("flapping", "Flapping"), ("fixed", "Fixed"))


def to_html(digest: ChannelDigest, *, chart_png: bytes | None = None) -> str:
    """The channel's digest as one self-contained HTML page, the chart embedded (data: URI).
    Every text from pages and archives is escaped."""
    import base64
    from html import escape

    def a(url: str, label: str | None = None) -> str:
        return f'<a href="{escape(url, quote=True)}">{escape(label or url)}</a>'

    title = f"Link-rot digest for {digest.channel} ({digest.period})"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{escape(title)}</title></head><body>", f"<h1>{escape(title)}</h1>"]
    if chart_png:
        data = base64.b64encode(chart_png).decode()
        out.append(f'<p><img src="data:image/png;base64,{data}" width="720" '
                   'alt="Link health over the last weeks"></p>')
    for one in digest.scans:
        out.append(f"<h2>Link rot: {a(one.target)}</h2>")
        if one.error:
            out.append(f"<p>Scan failed: {escape(one.error)}</p>")
            continue
        counts = one.counts
        out.append(f"<p>{one.pages_crawled} pages crawled, {one.urls_checked} distinct URLs "
                   f"checked. Newly dead: {counts['newly_confirmed']}, suspect: "
                   f"{counts['suspect']}, fixed: {counts['fixed']}, flapping: "
                   f"{counts['flapping']}, still dead: {counts['still_dead']}, content "
                   f"changed: {counts['drifted']}.</p>")
        for field_name, heading in SECTIONS:
            links: list[DigestLink] = getattr(one, field_name)
            if links:
                out.append(f"<h3>{escape(heading)}</h3><ul>")
                for link in links:
                    status = f" {link.status}" if link.status is not None else ""
                    item = f"<li>{a(link.url)} — {escape(link.verdict)}{status}"
                    if link.recovery is not None and link.recovery.url:
                        item += f"; suggested: {a(link.recovery.url)}"
                    out.append(item + "</li>")
                out.append("</ul>")
        if one.drifted:
            out.append("<h3>Content changed (the link works, the page is not what was "
                       "linked)</h3><ul>")
            for item in one.drifted:
                out.append(f"<li>{a(item.url)} — {round(item.similarity * 100)}% similar to "
                           f"the copy of {item.memento_datetime:%Y-%m-%d}: was "
                           f"“{escape(item.archived_title)}”, now “{escape(item.live_title)}”; "
                           f"link the {a(item.memento_url, 'archived copy')} instead, e.g. "
                           f"{item.robust_link}</li>")  # built escaped (tools.recovery.output)
            out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def to_json(digest: ScanDigest | ChannelDigest) -> dict[str, Any]:
    """The digest as JSON-ready data."""
    data = digest.model_dump(mode="json")
    if isinstance(digest, ScanDigest):
        data["counts"] = digest.counts
    else:
        for scan_data, scan_digest in zip(data["scans"], digest.scans, strict=True):
            scan_data["counts"] = scan_digest.counts
    return data


# --- the weekly run -------------------------------------------------------------------------

# (target, options, period) → that scan's digest: a scan shared by several digest runs.
SharedScan = Callable[[str, ScanOptions, str], Awaitable[ScanDigest]]


def period_of(at: datetime) -> str:
    """The ISO week `at` falls in, as a digest's period ("2026-W48")."""
    year, week, _ = at.isocalendar()
    return f"{year}-W{week:02d}"


def _watches(store: Store) -> dict[str, list[str]]:
    by_channel: dict[str, list[str]] = defaultdict(list)
    for channel, target in all_watches(store):
        by_channel[channel].append(target)
    return dict(by_channel)


def _record_run(store: Store, digest: ChannelDigest, at: datetime) -> int:
    return add_run(store, digest.channel, digest.period, at=at, status="ready",
                   summary=to_json(digest))


def stored_digest(summary: dict[str, Any]) -> ChannelDigest | None:
    """The digest a run recorded (run_digests stores it as the run's summary), if any."""
    if "scans" not in summary:
        return None
    try:
        return ChannelDigest.model_validate({k: v for k, v in summary.items()
                                             if k not in ("slack", "chart")})
    except ValueError:
        return None  # a summary from an older layout


async def _target_digest(store: Store, target: str, *, settings: Settings,
                         options: ScanOptions | None, clock: Clock, recover: bool,
                         recover_limit: int, recover_seconds: float,
                         scanned: SharedScan | None = None) -> ScanDigest:
    """Scan one watched target and digest it. Its failure (TARGET_ERRORS) is this target's
    error in the digest, never the other targets' (nor every channel's). Cancellation and
    Ctrl-C are not caught. `scanned`: where the scan's digest comes from instead of a scan
    of its own (the digest jobs' shared scan of a site per period, tools.workers.jobs)."""
    result: ScanResult | None = None
    try:
        if scanned is not None:
            digest = await scanned(target, options or ScanOptions(), period_of(clock()))
        else:
            result = await scan(target, store=store, settings=settings, options=options,
                                clock=clock)
            digest = await asyncio.to_thread(build_digest, store, result)
    except TARGET_ERRORS as exc:
        if is_store_fault(exc):
            raise  # the database away past its budget: the run stops, resumable; not failed
        stage = "scan" if result is None else "digest"
        if isinstance(exc, PagetrailError):
            log.warning("digest: %s of %s failed: %s", stage, target, exc)
        else:
            log.exception("digest: %s of %s failed", stage, target)
        return _failed_digest(target, exc, clock(), result)
    if recover:  # each link's failure is its own `recovery_error`
        await recover_confirmed(digest, store=store, settings=settings,
                                limit=recover_limit, seconds=recover_seconds)
    if settings.drift_per_digest > 0:
        try:
            await check_drift(digest, store=store, settings=settings,
                              limit=settings.drift_per_digest, seconds=recover_seconds)
        except PagetrailError as exc:  # drift is extra too; named in the digest
            log.warning("digest: drift checks of %s failed: %s", target, exc)
            digest.drift_failures.append(str(exc))
    return digest


def _failed_digest(target: str, exc: Exception, now: datetime,
                   result: ScanResult | None) -> ScanDigest:
    """The digest of a target whose scan (result None) or digest failed: what the scan did,
    if anything, and the error."""
    error = str(exc) or type(exc).__name__
    if result is None:
        return ScanDigest(target=target, scan_id="", started_at=now.isoformat(), seconds=0.0,
                          pages_crawled=0, links_found=0, urls_checked=0, requests=0,
                          error=error)
    return ScanDigest(target=target, scan_id=result.scan_id, started_at=result.started_at,
                      seconds=result.seconds, pages_crawled=result.pages_crawled,
                      links_found=result.links_found, urls_checked=result.urls_checked,
                      requests=result.requests, error=error)


async def run_digests(store: Store, settings: Settings | None = None, *,
                      clock: Clock | None = None, options: ScanOptions | None = None,
                      recover: bool = True, recover_limit: int = 10,
                      recover_seconds: float = 300.0,
                      channel: str | None = None,
                      scanned: SharedScan | None = None) -> list[ChannelDigest]:
    """Scan every watched target (each once, however many channels watch it) and return one
    digest per channel, each recorded as a DigestRun (status "ready", not yet posted).
    `scanned`: the scans' digests come from there (one scan per site and period shared by
    the channels' separate digest jobs) instead of scans of this run's own."""
    settings = settings or get_settings()
    clock = clock or utc_now
    watches = await asyncio.to_thread(_watches, store)
    if channel is not None:
        watches = {channel: watches.get(channel, [])}
    digests_by_target: dict[str, ScanDigest] = {}
    for target in dict.fromkeys(t for targets in watches.values() for t in targets):
        digests_by_target[target] = await _target_digest(
            store, target, settings=settings, options=options, clock=clock, recover=recover,
            recover_limit=recover_limit, recover_seconds=recover_seconds, scanned=scanned)
    period = period_of(clock())
    out: list[ChannelDigest] = []
    for name, targets in watches.items():
        digest = ChannelDigest(channel=name, period=period,
                               scans=[digests_by_target[t] for t in targets])
        digest.run_id = await asyncio.to_thread(_record_run, store, digest, clock())
        out.append(digest)
    return out
