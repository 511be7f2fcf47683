"""The answer: what the check says of a live link (and whether it drifted), and what the
ranking and the archived copy say of a dead one (confidence rules: tools/policy.py), with
related archived pages when nothing else helps."""

from __future__ import annotations

import asyncio
from typing import Any

from pagetrail.tools import policy
from pagetrail.tools.errors import PagetrailError, RefusedAddress
from pagetrail.tools.models import (
    Candidate,
    CheckResult,
    EngineFailure,
    Memento,
    Recovery,
    Scores,
)
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.context import Findings, Request


def for_live(url: str, check: CheckResult) -> Recovery | None:
    """The answer when the check settles it (alive, redirected, not dead), else None."""
    if check.verdict == "refused":
        raise RefusedAddress(check.reason or "address refused", url=url)
    if check.verdict == "ok":
        return Recovery(url=str(url), check=check, answer="alive", reason="the link works")
    if check.verdict == "redirected" and check.final_url:
        moved = Candidate(url=check.final_url, kind="moved", confidence=policy.LIVE_REDIRECT,
                          methods=["REDIRECT"], scores=Scores(),
                          evidence="the server redirects permanently to this page")
        return Recovery(url=str(url), check=check, answer="redirected", candidates=[moved],
                        reason="permanently redirected: the new address is the answer")
    if check.verdict == "transient" and not silent(check):
        return Recovery(url=str(url), check=check, answer="unverified",
                        reason=f"not treated as dead: {check.verdict} ({check.reason})")
    if check.verdict == "blocked":
        return Recovery(url=str(url), check=check, answer="unverified",
                        reason=f"not treated as dead: {check.verdict} ({check.reason})")
    return None


def site_gone(check: CheckResult) -> bool:
    """The host itself is gone — it does not resolve or connect, never answers, or serves a
    parking page —, so the site, if it lives on, lives at another address."""
    parking = check.evidence.get("parking") if isinstance(check.evidence, dict) else None
    parked = isinstance(parking, dict) and bool(parking.get("parked"))
    return check.verdict == "unreachable" or silent(check) or parked


def silent(check: CheckResult) -> bool:
    """The server never answered (a timeout, no status): it may be down for a while or gone
    for good. A server that answers 5xx/429 is there; one that is silent gets a recovery,
    whose answer says the link may only be down for now."""
    error = check.evidence.get("error") if isinstance(check.evidence, dict) else None
    kind = error.get("kind") if isinstance(error, dict) else None
    return check.status is None and kind == "timeout"


def for_dead(url: str, found: Findings, check: CheckResult, memento: Memento | None,
             ranked: list[Candidate], anchor_facts: Any,
             evidence: dict[str, object]) -> Recovery:
    """Kind, reason and candidates of a dead link's answer."""
    ranked = [c for c in ranked if c.kind != "archived"]
    # Fig. 8 of Martinez-Romo & Araujo: a one-common-word anchor without an archived copy
    # to verify against is not enough to recommend anything.
    # (A stop anchor — "click here", the URL itself — says nothing: it is no weak anchor.)
    weak_anchor = (memento is None and anchor_facts is not None
                   and not anchor_facts.is_stop_anchor and not anchor_facts.usable_alone)
    if weak_anchor:
        ranked = [c.model_copy(update={"confidence": policy.weak_anchor_confidence(c.confidence)})
                  for c in ranked]
    top = ranked[0] if ranked else None
    candidates = list(ranked)
    if memento is not None:
        candidates.append(Candidate(
            url=memento.memento_url, title=(memento.document.title if memento.document else ""),
            kind="archived",
            confidence=policy.archived_confidence(top.confidence if top else None),
            methods=["ARCHIVE"],
            evidence=f"archived copy of {memento.datetime:%Y-%m-%d} at {memento.archive}",
        ))
    if top is not None and policy.recommends(top.confidence):
        answer, reason = top.kind, top.evidence
    elif memento is not None:
        answer, reason = "archived", "no live page fits well enough; the archived copy helps"
    else:
        answer = "none"
        reason = ("the anchor alone is too weak and there is no archived copy to verify"
                  if weak_anchor else "no archived copy and no live page fits")
    return Recovery(
        url=str(url), check=check, answer=answer, reason=reason, memento=memento,
        evidence=evidence, queries=found.queries, candidates=candidates,
        failures=found.failures,
    )


async def related_archived(req: Request, found: Findings,
                           evidence: dict[str, object]) -> list[dict[str, object]]:
    """Lost and never archived: archived pages on the same topic (seed 004), marked related."""
    from pagetrail.tools.errors import ModelMissing
    from pagetrail.tools.recovery.related import recommend_archived

    await found.report("related", 0, None, "archived pages on the same topic")
    try:
        async with asyncio.timeout(max(5.0, found.budget.seconds / 2)):
            result = await recommend_archived(req.url, req.link_date, 5,
                                              settings=req.settings)
    except ModelMissing:
        evidence["related"] = "no URI classifier trained (pagetrail classify train)"
        return []
    except (PagetrailError, TimeoutError) as exc:
        found.failures.append(EngineFailure(engine="related", error=str(exc) or "timed out"))
        return []
    return [item.to_dict() for item in result.items]


async def add_drift(req: Request, found: Findings, recovery: Recovery) -> None:
    """A working link: does it still serve what was linked? Compared with the capture from
    the link's date, else from when pagetrail first saw the link, else the latest one; when
    it drifted, the answer says so and offers that capture."""
    from pagetrail.tools.linkcheck.drift import detect_drift, drift_sentence

    await found.report("drift", 0, None, "comparing with the archived copy")
    since = req.link_date
    if since is None and req.store is not None:
        seen = await memory.stored(found.failures, "reading when the link was first seen", {},
                                   memory.first_seen, req.store, [str(req.url)])
        since = seen.get(req.url)
    try:
        recovery.drift = await detect_drift(req.url, since=since, fetcher=req.fetcher,
                                            settings=req.settings)
    except PagetrailError as exc:
        recovery.failures.append(EngineFailure(engine="drift", error=f"{exc.code}: {exc}"))
        return
    if recovery.drift is not None and recovery.drift.drifted:
        recovery.reason = drift_sentence(recovery.drift)
        recovery.memento = recovery.drift.memento
