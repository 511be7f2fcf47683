"""What a finished recovery teaches later ones (FABLE): moves it observed, and the sites
where it found answers. Pure selection here; `pipeline.recover` records them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pagetrail.tools import policy
from pagetrail.tools.errors import InvalidURL
from pagetrail.tools.models import ArchivedRedirect, Candidate, Recovery
from pagetrail.tools.net.urls import site_of
from pagetrail.tools.recovery import memory

log = logging.getLogger(__name__)


def learned_moves(recovery: Recovery, archived: Sequence[ArchivedRedirect],
                  ) -> list[tuple[str, str, str]]:
    """(old URL, new URL, move source) that this recovery observed: a permanent live
    redirect of the dead URL, its archived redirects, and a confirmed move (a moved
    candidate of confidence ≥ policy.CONFIRM_CONFIDENCE). Pure; the sources are
    store.moves'."""
    moves: list[tuple[str, str, str]] = []
    if recovery.answer == "redirected" and recovery.check and recovery.check.final_url:
        moves.append((recovery.url, recovery.check.final_url, "live redirect"))
    moves += [(r.original_url, r.target_url, "archived redirect") for r in archived]
    top = next((c for c in recovery.candidates if c.kind != "archived"), None)
    if (recovery.answer == "moved" and top is not None and top.kind == "moved"
            and top.confidence >= policy.CONFIRM_CONFIDENCE):
        moves.append((recovery.url, top.url, "confirmed recovery"))
    return moves


def answers_elsewhere(recovery: Recovery) -> list[Candidate]:
    """Live candidates on another site than the dead link that say answers live there: the
    best one when it scores policy.ANSWER_SITE_EVIDENCE, and among the top ten any copy of
    the lost page (`is_copy`: a republisher's, a mirror's, the site's new address). What
    teaches later recoveries which sites hold answers. Pure."""
    if recovery.answer in ("alive", "unverified"):  # not dead: nothing was recovered
        return []
    dead_site = site_of(recovery.url)
    live = [c for c in recovery.candidates if c.kind != "archived"][:policy.ANSWER_SITE_TOP]
    return [c for i, c in enumerate(live)
            if site_of(c.url) != dead_site and c.confidence > 0.0
            and ((i == 0 and c.confidence >= policy.ANSWER_SITE_EVIDENCE) or is_copy(c))]


def is_copy(candidate: Candidate) -> bool:
    """It bears the lost page's title (or the anchor's words, when there is no title to
    compare) or its address keeps the lost page's words (a slug carried over)."""
    scores = candidate.scores
    title = scores.title_similarity if scores.title_similarity is not None \
        else scores.anchor_dice
    return (title or 0.0) >= policy.COPY_TITLE or scores.url_similarity >= policy.COPY_URL


def record_elsewhere(store: memory.Store, dead_url: str, answer: Candidate) -> bool:
    try:
        return memory.record_answer_elsewhere(store, dead_url, answer.url, kind=answer.kind,
                                              confidence=answer.confidence)
    except InvalidURL as exc:  # a page's final URL no URL parser accepts: no evidence
        log.info("answer %s for %s not recorded: %s", answer.url, dead_url, exc)
        return False


def record_move(store: memory.Store, old_url: str, new_url: str, source: str) -> None:
    try:
        memory.record_move(store, old_url, new_url, source=source)
    except InvalidURL as exc:  # an archive's Location no URL parser accepts: no evidence
        log.info("move %s → %s not recorded: %s", old_url, new_url, exc)
