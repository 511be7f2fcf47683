"""The answer: what the check says of a live link (and whether it drifted), and what the
ranking and the archived copy say of a dead one (confidence rules: tools/policy.py), with
related archived pages when nothing else helps."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from pagetrail.tools import policy
from pagetrail.tools.errors import ModelMissing, PagetrailError, RefusedAddress
from pagetrail.tools.models import (
    Candidate,
    CheckResult,
    EngineFailure,
    Memento,
    Query,
    Recovery,
    Scores,
)
from pagetrail.tools.ranking import learned
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


def unreachable_host(check: CheckResult) -> bool:
    """No HTTP answer from the host at all — it does not resolve, refuses connections or
    fails TLS (directly or as the proxy reports it) —, so its own map cannot be read either.
    A redirect loop is an answer: not this."""
    if check.verdict != "unreachable" or not isinstance(check.evidence, dict):
        return False
    error = check.evidence.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return bool(check.evidence.get("squid_error")) or (
        check.status is None and code not in ("redirect_loop", "too_many_redirects"))


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
    weak = weak_anchor(memento, anchor_facts)
    if weak:
        evidence["weak_anchor"] = True
    ranked = answer_list(ranked, weak=weak)
    top = ranked[0] if ranked else None
    deciding, line = (top.confidence if top else None), policy.RECOMMEND_AT
    if top is not None and policy.LEARNED_ANSWER:
        try:
            ranked, deciding, line = learned_ranking(url, ranked, memento is not None)
            top = ranked[0]
            evidence["answer_probability"] = round(deciding, 4)
        except ModelMissing as exc:  # said in the answer; the hand ranking decides
            found.fail(EngineFailure(engine="confidence", error=f"{exc.code}: {exc}"),
                       once="equal")
    candidates = list(ranked)
    if memento is not None:
        candidates.append(Candidate(
            url=memento.memento_url, title=(memento.document.title if memento.document else ""),
            kind="archived",
            confidence=policy.archived_confidence(deciding, line),
            methods=["ARCHIVE"],
            evidence=f"archived copy of {memento.datetime:%Y-%m-%d} at {memento.archive}",
        ))
    failed = what_failed(found.failures, found.queries)
    if top is not None and deciding is not None and policy.recommends(deciding, line):
        answer, reason = top.kind, top.evidence
    elif memento is not None:
        answer, reason = "archived", "no live page fits well enough; the archived copy helps"
        if failed.engines_all:
            reason += f" ({failed.engines_phrase()})"
    else:
        answer = "none"
        reason = none_reason(failed, weak)
    return Recovery(
        url=str(url), check=check, answer=answer, reason=reason, memento=memento,
        evidence=evidence, queries=found.queries, candidates=candidates,
        failures=found.failures, all_failed=failed.all_failed(),
    )


def weak_anchor(memento: Memento | None, anchor_facts: Any) -> bool:
    """Fig. 8 of Martinez-Romo & Araujo: a one-common-word anchor without an archived copy
    to verify against is not enough for the hand ranking to recommend anything. (A stop
    anchor — "click here", the URL itself — says nothing: it is no weak anchor.)"""
    return (memento is None and anchor_facts is not None
            and not anchor_facts.is_stop_anchor and not anchor_facts.usable_alone)


def answer_list(ranked: list[Candidate], *, weak: bool) -> list[Candidate]:
    """The live candidates the answer is decided from, in the hand ranking's order, their
    confidence clamped under a weak anchor (`weak_anchor`). The learned answer reads the
    clamped list (as its training rows have it) and decides these cases too: its
    out-of-fold line holds with them (no training world > 1 % wrong), and on ten fresh
    worlds the clamp only silenced right answers (bench/train_ranking.py measure: 0.830 →
    0.839 answered right, the same wrong)."""
    live = [c for c in ranked if c.kind != "archived"]
    if not weak:
        return live
    return [c.model_copy(update={"confidence": policy.weak_anchor_confidence(c.confidence)})
            for c in live]


def learned_ranking(url: str, ranked: list[Candidate],
                    archived_copy: bool) -> tuple[list[Candidate], float, float]:
    """The hand-ranked live candidates re-ordered by the learned ranking (policy.LEARNED_ANSWER),
    the new first's answer probability and the model's recommend line. Each re-ordered
    candidate's confidence is its learned probability (the first's: the answer probability),
    never above the one before it; its scores keep what the hand ranking said."""
    decision = learned.decide(url, [learned.listed_from_candidate(c) for c in ranked],
                              archived_copy=archived_copy)
    out: list[Candidate] = []
    ceiling = decision.answer
    for place, index in enumerate(decision.order):
        candidate = ranked[index]
        probability = (decision.probabilities[place] if place < len(decision.probabilities)
                       else None)
        own = decision.answer if place == 0 else (
            probability if probability is not None else candidate.confidence)
        confidence = min(own, ceiling)
        ceiling = confidence
        evidence = candidate.evidence
        if place == 0 and index != 0:
            evidence += (f"; the learned ranking put it first (the hand ranking had it at "
                         f"place {index + 1})")
        out.append(candidate.model_copy(update={
            "confidence": round(confidence, 4), "evidence": evidence,
            "scores": candidate.scores.model_copy(update={
                "learned": None if probability is None else round(probability, 4),
                "hand_confidence": candidate.confidence, "hand_rank": index + 1})}))
    return out, decision.answer, decision.recommend_at


# EngineFailure kinds that are not a search engine failing to answer: a backend behind a
# metasearch (its peers answered) or the search cache in the store.
_NOT_AN_ENGINE_DOWN = ("partial", "store")
# How the archive step names every archive failing (link_evidence: `<code>: <message>`);
# one archive's note among others that answered starts with that archive's prefix instead.
_ARCHIVES_FAILED = ("archive_excluded:", "archive_unavailable:")


@dataclass(frozen=True)
class Failed:
    """What failed in a recovery: the search engines that never answered (name → kind),
    whether none answered at all, and the archives' failure when no archive answered."""

    engines: dict[str, str]
    engines_all: bool
    archives: str | None  # "archive_excluded: …" / "archive_unavailable: …", or None

    def all_failed(self) -> list[Literal["search", "archives"]]:
        sources: list[Literal["search", "archives"]] = []
        if self.engines_all:
            sources.append("search")
        if self.archives:
            sources.append("archives")
        return sources

    def engines_list(self) -> str:
        return ", ".join(f"{name}: {kind}" for name, kind in self.engines.items())

    def engines_phrase(self) -> str:
        return f"every search engine failed ({self.engines_list()})"

    def archives_phrase(self) -> str:
        return f"every archive failed ({_clip(self.archives or '', 160)})"


def what_failed(failures: list[EngineFailure], queries: list[Query]) -> Failed:
    """The engines that failed and never answered a query (an engine that answered any
    query, even with no hits, did answer), and the archives' failure when none answered."""
    answered = {q.engine for q in queries}
    engines: dict[str, str] = {}
    for f in failures:
        if f.kind is None or f.kind in _NOT_AN_ENGINE_DOWN or f.engine in answered:
            continue
        engines.setdefault(f.engine, f.kind)
    archives = next((f.error for f in failures
                     if f.engine == "archive" and f.error.startswith(_ARCHIVES_FAILED)), None)
    return Failed(engines=engines, engines_all=bool(engines) and not answered,
                  archives=archives)


def none_reason(failed: Failed, weak_anchor: bool) -> str:
    """Why there is no answer: what failed when every engine or every archive did (then
    the answer is no evidence that the page is lost), else what was looked at."""
    if failed.engines_all and failed.archives:
        return f"no answer: {failed.engines_phrase()} and {failed.archives_phrase()}"
    if failed.engines_all:
        return f"no answer: {failed.engines_phrase()}; no archived copy"
    if failed.archives:
        return f"no answer: {failed.archives_phrase()}, and no live page fits"
    reason = ("the anchor alone is too weak and there is no archived copy to verify"
              if weak_anchor else "no archived copy and no live page fits")
    if failed.engines:  # some engines answered, others did not: the answer is partial
        reason += f" (failed: {failed.engines_list()})"
    return reason


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def related_archived(req: Request, found: Findings, evidence: dict[str, object],
                           seconds: float) -> list[dict[str, object]]:
    """Lost and never archived: archived pages on the same topic (seed 004), marked related."""
    from pagetrail.tools.learning import recommend_archived

    await found.report("related", 0, None, "archived pages on the same topic")
    try:
        async with asyncio.timeout(max(policy.RELATED_SECONDS, seconds / 2)):
            result = await recommend_archived(req.url, req.link_date, policy.RELATED_ARCHIVED,
                                              settings=req.settings)
    except ModelMissing:
        evidence["related"] = "no URI classifier trained (pagetrail classify train)"
        return []
    except (PagetrailError, TimeoutError) as exc:
        found.fail(EngineFailure(engine="related", error=str(exc) or "timed out"))
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
        seen = await memory.stored(found.fail, "reading when the link was first seen", {},
                                   memory.first_seen, req.store, [str(req.url)])
        since = seen.get(req.url)
    try:
        recovery.drift = await detect_drift(req.url, since=since, fetcher=req.fetcher,
                                            settings=req.settings)
    except PagetrailError as exc:
        found.fail(EngineFailure(engine="drift", error=f"{exc.code}: {exc}"))
        return
    if recovery.drift is not None and recovery.drift.drifted:
        recovery.reason = drift_sentence(recovery.drift)
        recovery.memento = recovery.drift.memento
