"""The confirmation state machine (pure): IABot's N failures at least D days apart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pagetrail.tools.linkcheck.linkstate import LinkState, Policy, advance, is_newly_confirmed
from pagetrail.tools.settings import Settings

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
POLICY = Policy(failures=3, days=3)


def run(verdicts: list[tuple[float, str]], policy: Policy = POLICY) -> list[str]:
    state, states = LinkState(), []
    for day, verdict in verdicts:
        state = advance(state, verdict, T0 + timedelta(days=day), policy)
        states.append(state.state)
    return states


def test_three_failures_three_days_apart_confirm() -> None:
    assert run([(0, "dead"), (3, "dead"), (6, "dead")]) == ["suspect", "suspect", "confirmed"]


def test_failures_closer_than_the_spacing_count_once() -> None:
    daily = [(d, "dead") for d in range(6)]  # six failures over five days: only 0 and 3 count
    assert run(daily) == ["suspect"] * 6
    assert run([*daily, (6, "unreachable")])[-1] == "confirmed"


def test_transient_answers_never_confirm_nor_reset() -> None:
    weekly_timeouts = [(7 * w, "transient") for w in range(10)]
    assert set(run(weekly_timeouts)) == {"new"}
    mixed = [(0, "dead"), (3, "transient"), (4, "blocked"), (5, "soft404"), (9, "transient"),
             (10, "dead")]
    assert run(mixed) == ["suspect", "suspect", "suspect", "suspect", "suspect", "confirmed"]


def test_recovery_is_fixed_and_alternating_is_flapping() -> None:
    assert run([(0, "dead"), (3, "dead"), (6, "dead"), (9, "ok"), (12, "ok")]) == [
        "suspect", "suspect", "confirmed", "fixed", "ok"]
    alternating = [(3 * i, "dead" if i % 2 == 0 else "ok") for i in range(6)]
    assert run(alternating)[-3:] == ["flapping", "flapping", "flapping"]
    assert "confirmed" not in run(alternating)


def test_ok_resets_the_failure_streak() -> None:
    states = run([(0, "dead"), (3, "dead"), (6, "ok"), (9, "dead"), (12, "dead")])
    assert "confirmed" not in states


def test_policy_from_settings_and_timestamps() -> None:
    policy = Policy.from_settings(Settings(confirm_failures=2, confirm_days=7))
    assert policy == Policy(failures=2, days=7)
    assert run([(0, "dead"), (6, "dead"), (7, "dead")], policy) == [
        "suspect", "suspect", "confirmed"]
    before = LinkState()
    after = advance(before, "dead", T0, Policy(failures=1, days=0))
    assert is_newly_confirmed(before, after) and after.confirmed_at == T0
    assert after.first_failed_at == T0 and after.changed_at == T0


@pytest.mark.parametrize("verdict", ["ok", "redirected"])
def test_live_verdicts(verdict: str) -> None:
    assert run([(0, verdict)]) == ["ok"]


def reference_advance(state: LinkState, verdict: str, at: datetime, policy: Policy
                      ) -> LinkState:
    """advance() as first written (one dataclasses.replace per step), to hold the
    one-replace version to the same answers."""
    from dataclasses import replace

    from pagetrail.tools.linkcheck.linkstate import (
        FAILING_STATES,
        FLAP_CHANGES,
        HISTORY,
        changes,
        outcome_of,
    )

    outcome = outcome_of(verdict)
    base = replace(state, last_checked_at=at, last_verdict=verdict)
    if outcome == "none":
        return base
    history = (state.history + ("F" if outcome == "fail" else "O"))[-HISTORY:]
    if outcome == "fail":
        counted = base.counted
        if not counted or at - counted[-1] >= timedelta(days=policy.days):
            counted = (*counted, at)
        first = base.first_failed_at or at
        if base.state == "confirmed":
            nxt = replace(base, counted=counted, history=history, first_failed_at=first)
        elif len(counted) >= policy.failures:
            nxt = replace(base, state="confirmed", counted=counted, history=history,
                          first_failed_at=first, confirmed_at=at)
        else:
            flapping = changes(history) >= FLAP_CHANGES
            nxt = replace(base, state="flapping" if flapping else "suspect", counted=counted,
                          history=history, first_failed_at=first)
    else:
        cleared = replace(base, counted=(), history=history, first_failed_at=None,
                          confirmed_at=None)
        if changes(history) >= FLAP_CHANGES:
            nxt = replace(cleared, state="flapping")
        elif base.state in FAILING_STATES or base.state == "flapping":
            nxt = replace(cleared, state="fixed")
        else:
            nxt = replace(cleared, state="ok")
    if nxt.state != state.state:
        nxt = replace(nxt, changed_at=at)
    return nxt


def test_advance_matches_the_reference_over_random_histories() -> None:
    import random

    rng = random.Random(8)
    verdicts = ["ok", "redirected", "dead", "soft404", "unreachable", "transient", "blocked"]
    for _ in range(300):
        policy = Policy(failures=rng.randint(1, 4), days=rng.choice([0, 1, 3, 7]))
        ours = theirs = LinkState()
        day = 0.0
        for _ in range(rng.randint(1, 25)):
            day += rng.choice([0.5, 1, 3, 7])
            verdict = rng.choice(verdicts)
            ours = advance(ours, verdict, T0 + timedelta(days=day), policy)
            theirs = reference_advance(theirs, verdict, T0 + timedelta(days=day), policy)
            assert ours == theirs and ours.changed_at == theirs.changed_at
