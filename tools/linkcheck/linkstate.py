"""Confirmation over time: the life of a link across scans (a pure state machine).

IABot's discipline (DESIGN.md step 1): one failed check makes a link *suspect*; it is
*confirmed* dead only after `failures` failed checks at least `days` days apart. Checks that
fail closer together than that count once (a daily scan does not confirm in three days).
Transient answers (5xx, 429, timeouts) and checks we could not make (blocked, refused) carry
no information about death: they neither count towards confirmation nor reset it. A link that
answers again after failing is *fixed*; one that keeps switching between failing and answering
is *flapping* and is reported as such rather than as dead or fixed.

`advance(state, verdict, at, policy)` returns the next state; no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Literal

from pagetrail.tools.models import DEAD_VERDICTS

State = Literal["new", "ok", "suspect", "confirmed", "fixed", "flapping"]
Outcome = Literal["fail", "ok", "none"]

OK_VERDICTS: frozenset[str] = frozenset({"ok", "redirected"})
FAIL_VERDICTS: frozenset[str] = DEAD_VERDICTS  # dead, soft404, unreachable
HISTORY = 8  # outcomes kept to judge flapping
FLAP_CHANGES = 3  # fail→ok→fail→ok within the window: alternating, not dead and not fixed
FAILING_STATES: frozenset[str] = frozenset({"suspect", "confirmed"})


@dataclass(frozen=True)
class Policy:
    failures: int = 3
    days: float = 3.0

    @classmethod
    def from_settings(cls, settings: object) -> Policy:
        return cls(failures=max(1, int(getattr(settings, "confirm_failures", 3))),
                   days=max(0.0, float(getattr(settings, "confirm_days", 3.0))))


@dataclass(frozen=True)
class LinkState:
    state: State = "new"
    counted: tuple[datetime, ...] = ()  # failures of the current streak that count
    history: str = ""  # recent outcomes, oldest first: "F" fail, "O" ok
    first_failed_at: datetime | None = None  # start of the current failing streak
    last_checked_at: datetime | None = None
    last_verdict: str = ""
    confirmed_at: datetime | None = None
    changed_at: datetime | None = None  # when `state` last changed
    extra: dict[str, object] = field(default_factory=dict, compare=False)

    @property
    def failures(self) -> int:
        return len(self.counted)


def outcome_of(verdict: str) -> Outcome:
    if verdict in FAIL_VERDICTS:
        return "fail"
    if verdict in OK_VERDICTS:
        return "ok"
    return "none"  # transient, blocked, refused: says nothing about death


def changes(history: str) -> int:
    """How many times the outcome switched between fail and ok in the history."""
    return sum(1 for a, b in pairwise(history) if a != b)


def advance(state: LinkState, verdict: str, at: datetime, policy: Policy) -> LinkState:
    """The state after one more check with `verdict` at time `at`."""
    outcome = outcome_of(verdict)
    updates: dict[str, object] = {"last_checked_at": at, "last_verdict": verdict}
    if outcome != "none":
        history = (state.history + ("F" if outcome == "fail" else "O"))[-HISTORY:]
        if outcome == "fail":
            updates.update(_after_failure(state, at, policy, history))
        else:
            updates.update(_after_success(state, history))
        if updates.get("state", state.state) != state.state:
            updates["changed_at"] = at
    # One replace(): a scan advances thousands of states, and each replace() costs a
    # dataclass __init__.
    return replace(state, **updates)  # type: ignore[arg-type]


def _after_failure(state: LinkState, at: datetime, policy: Policy, history: str
                   ) -> dict[str, object]:
    """The fields a failed check changes."""
    counted = state.counted
    spacing = timedelta(days=policy.days)
    if not counted or at - counted[-1] >= spacing:
        counted = (*counted, at)
    changed: dict[str, object] = {"counted": counted, "history": history,
                                  "first_failed_at": state.first_failed_at or at}
    if state.state == "confirmed":
        return changed
    if len(counted) >= policy.failures:
        return {**changed, "state": "confirmed", "confirmed_at": at}
    flapping = changes(history) >= FLAP_CHANGES
    return {**changed, "state": "flapping" if flapping else "suspect"}


def _after_success(state: LinkState, history: str) -> dict[str, object]:
    """The fields a successful check changes."""
    cleared: dict[str, object] = {"counted": (), "history": history, "first_failed_at": None,
                                  "confirmed_at": None}
    if changes(history) >= FLAP_CHANGES:
        return {**cleared, "state": "flapping"}
    if state.state in FAILING_STATES or state.state == "flapping":
        return {**cleared, "state": "fixed"}
    return {**cleared, "state": "ok"}


def since(state: LinkState) -> datetime | None:
    """Since when the link has been in its state: the first failure of a suspect streak,
    the confirmation of a dead link, the change to fixed or flapping."""
    if state.state == "suspect":
        return state.first_failed_at or state.changed_at
    if state.state == "confirmed":
        return state.confirmed_at or state.changed_at
    return state.changed_at


def earliest_confirmation(state: LinkState, policy: Policy) -> datetime | None:
    """The first moment a suspect link can be confirmed dead: each failure still missing
    must come at least `policy.days` after the previous counted one. None unless suspect."""
    if state.state != "suspect" or not state.counted:
        return None
    missing = max(1, policy.failures - len(state.counted))
    return state.counted[-1] + timedelta(days=policy.days) * missing


def is_newly_confirmed(before: LinkState, after: LinkState) -> bool:
    return after.state == "confirmed" and before.state != "confirmed"


def is_newly_suspect(before: LinkState, after: LinkState) -> bool:
    return after.state == "suspect" and before.state not in ("suspect", "confirmed")


def is_newly_fixed(before: LinkState, after: LinkState) -> bool:
    return after.state == "fixed" and before.state != "fixed"
