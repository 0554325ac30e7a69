"""`core.decay`: the derived weight (SCENARIOS 29) and the prune rule, decided on values."""

from __future__ import annotations

from datetime import timedelta

import pytest

from distill.core.apply import validate
from distill.core.decay import (
    HALF_LIFE_DAYS,
    KEPT_CAPPED,
    KEPT_CONFLICT,
    KEPT_EVIDENCE,
    KEPT_PINNED,
    KEPT_RECEIPT,
    KEPT_RECENT,
    KEPT_WEIGHT,
    PRUNE_FLOOR,
    RECEIPT_MIN_AGE_DAYS,
    decide_prune,
    weight,
)
from distill.core.models import Fact, FactStatus
from distill.core.plan import Plan, PruneFact
from distill.errors import IntegrityViolation, InvalidInput, PinnedFact
from tests.factories import T0, make_conflict, make_memory

HALF = timedelta(days=HALF_LIFE_DAYS)
LONG_AGO = T0 - 10 * HALF  # weight 2**-10, far below the floor


def memory(
    events: tuple[str, ...],
    *,
    status: FactStatus = FactStatus.ACTIVE,
    reinforced: object = LONG_AGO,
    **overrides: object,
) -> Fact:
    return make_memory(
        "likes green tea",
        status=status,
        source_event_ids=events,
        last_reinforced_at=reinforced,
        valid_from=LONG_AGO,
        recorded_at=LONG_AGO,
        **overrides,
    )


def merged_pair(**tombstone: object) -> tuple[Fact, Fact]:
    """A survivor that absorbed the tombstone's event (a dedupe merge), and the tombstone."""
    survivor = memory(("e1", "e2"), reinforced=T0)
    dead = memory(("e2",), status=FactStatus.SUPERSEDED, superseded_by=survivor.id, **tombstone)
    return survivor, dead


# -- the weight (SCENARIOS 29) ------------------------------------------------------------------


def test_five_runs_at_one_half_life_give_one_half_each_time() -> None:
    fact = memory(("e1",), reinforced=T0)
    assert [weight(fact, T0 + HALF) for _ in range(5)] == [0.5] * 5


@pytest.mark.parametrize(("half_lives", "expected"), [(1, 0.5), (2, 0.25), (3, 0.125)])
def test_one_two_three_half_lives_halve_the_weight_each_time(
    half_lives: int, expected: float
) -> None:
    fact = memory(("e1",), reinforced=T0)
    assert weight(fact, T0 + half_lives * HALF) == pytest.approx(expected, rel=1e-12)


def test_a_reinforcement_refreshes_the_weight() -> None:
    fact = memory(("e1",), reinforced=T0)
    later = T0 + 2 * HALF
    reinforced = fact.model_copy(update={"last_reinforced_at": later})
    assert weight(fact, later) == pytest.approx(0.25)
    assert weight(reinforced, later) == 1.0
    assert weight(reinforced, later + HALF) == pytest.approx(0.5)


def test_the_half_life_is_a_knob_in_days_and_a_clock_behind_never_raises_above_one() -> None:
    fact = memory(("e1",), reinforced=T0)
    assert weight(fact, T0 + timedelta(days=30), half_life_days=30) == pytest.approx(0.5)
    assert weight(fact, T0 - timedelta(days=5)) == 1.0
    with pytest.raises(InvalidInput, match="half_life_days"):
        weight(fact, T0, half_life_days=0)


def test_a_zero_weight_tombstone_is_never_raised_by_time_or_by_prune() -> None:
    _, dead = merged_pair(reinforced=T0)
    instants = [T0 + k * HALF for k in range(0, 40, 3)]
    weights = [weight(dead, t) for t in instants]
    assert weights == sorted(weights, reverse=True)  # only ever falls
    assert weights[-1] < 1e-10
    # Deciding about it changes nothing it is computed from: the plan only deletes.
    decided = decide_prune([dead], [], instants[-1], floor=0.0)
    assert all(isinstance(a, PruneFact) for a in decided.plan.actions)


def test_the_default_floor_is_about_thirteen_months_at_the_default_half_life() -> None:
    fact = memory(("e1",), reinforced=T0)
    assert weight(fact, T0 + timedelta(days=388)) > PRUNE_FLOOR
    assert weight(fact, T0 + timedelta(days=390)) < PRUNE_FLOOR


# -- the prune rule ------------------------------------------------------------------------------


def test_a_stale_merged_tombstone_whose_survivor_holds_its_evidence_is_pruned() -> None:
    survivor, dead = merged_pair()
    decided = decide_prune([survivor, dead], [], T0)
    assert decided.pruned == [dead.id] and decided.kept == []
    [action] = decided.plan.actions
    assert isinstance(action, PruneFact) and action.weight < PRUNE_FLOOR


def test_a_receipt_outlives_the_cycle_that_wrote_it_whatever_its_weight() -> None:
    # A stale memory retired today (a summary consumed it, say) keeps its post-decay weight,
    # under the floor, and is kept as a receipt for RECEIPT_MIN_AGE_DAYS.
    survivor, dead = merged_pair(retired_at=T0)
    assert weight(dead, T0, HALF_LIFE_DAYS) < PRUNE_FLOOR
    soon = decide_prune([survivor, dead], [], T0 + timedelta(days=RECEIPT_MIN_AGE_DAYS - 1))
    assert soon.pruned == [] and [k.reason for k in soon.kept] == [KEPT_RECENT]
    later = decide_prune([survivor, dead], [], T0 + timedelta(days=RECEIPT_MIN_AGE_DAYS))
    assert later.pruned == [dead.id]


def test_live_facts_are_never_candidates_however_stale() -> None:
    stale = memory(("e1",))
    candidate = memory(("e2",), status=FactStatus.CANDIDATE)
    decided = decide_prune([stale, candidate], [], T0 + 100 * HALF)
    assert decided.pruned == [] and decided.kept == []


@pytest.mark.parametrize(
    ("overrides", "conflicted", "reason"),
    [
        ({"pinned": True}, False, KEPT_PINNED),
        ({"reinforced": T0 - HALF}, False, KEPT_WEIGHT),
        ({}, True, KEPT_CONFLICT),
    ],
)
def test_pinned_fresh_or_conflicted_tombstones_are_kept_with_the_reason(
    overrides: dict[str, object], conflicted: bool, reason: str
) -> None:
    survivor, dead = merged_pair(**overrides)
    conflicts = [make_conflict([dead.id, survivor.id], identity_key=None)] if conflicted else []
    decided = decide_prune([survivor, dead], conflicts, T0)
    assert decided.pruned == []
    assert [(k.fact_id, k.reason) for k in decided.kept] == [(dead.id, reason)]


def test_a_tombstone_whose_events_nothing_else_cites_is_kept() -> None:
    survivor = memory(("e1",), reinforced=T0)  # superseded it without absorbing its event
    dead = memory(("e2",), status=FactStatus.SUPERSEDED, superseded_by=survivor.id)
    retracted = memory(("e3",), status=FactStatus.RETRACTED)
    decided = decide_prune([survivor, dead, retracted], [], T0)
    assert decided.pruned == []
    assert {k.fact_id: k.reason for k in decided.kept} == {
        dead.id: KEPT_EVIDENCE,
        retracted.id: KEPT_EVIDENCE,
    }


def test_a_retracted_fact_whose_events_a_live_fact_cites_is_pruned() -> None:
    live = memory(("e1", "e2"), reinforced=T0)
    retracted = memory(("e2",), status=FactStatus.RETRACTED)
    assert decide_prune([live, retracted], [], T0).pruned == [retracted.id]


def test_a_tombstone_a_live_fact_says_it_replaced_is_kept() -> None:
    old = memory(("e1",), status=FactStatus.SUPERSEDED)
    new = memory(("e1", "e2"), reinforced=T0, supersedes_id=old.id)
    old = old.model_copy(update={"superseded_by": new.id})
    decided = decide_prune([old, new], [], T0)
    assert [(k.fact_id, k.reason) for k in decided.kept] == [(old.id, KEPT_RECEIPT)]


def test_a_chain_goes_whole_or_keeps_what_a_staying_receipt_names() -> None:
    survivor = memory(("e1", "e2", "e3"), reinforced=T0)
    middle = memory(("e2", "e3"), status=FactStatus.SUPERSEDED, superseded_by=survivor.id)
    first = memory(("e3",), status=FactStatus.SUPERSEDED, superseded_by=middle.id)
    assert set(decide_prune([survivor, middle, first], [], T0).pruned) == {middle.id, first.id}
    # The first one pinned stays, and its receipt keeps the middle one: it must point at a fact.
    pinned = first.model_copy(update={"pinned": True})
    decided = decide_prune([survivor, middle, pinned], [], T0)
    assert decided.pruned == []
    assert {k.fact_id: k.reason for k in decided.kept} == {
        pinned.id: KEPT_PINNED,
        middle.id: KEPT_RECEIPT,
    }


def test_a_loop_of_receipts_is_kept_rather_than_guessed() -> None:
    a = memory(("e1",), status=FactStatus.SUPERSEDED)
    b = memory(("e1",), status=FactStatus.SUPERSEDED, superseded_by=a.id)
    a = a.model_copy(update={"superseded_by": b.id})
    decided = decide_prune([a, b], [], T0)
    assert decided.pruned == [] and {k.reason for k in decided.kept} == {KEPT_EVIDENCE}


def test_the_cap_keeps_the_rest_for_the_next_run_and_never_strands_a_receipt() -> None:
    survivor = memory(tuple(f"e{i}" for i in range(5)), reinforced=T0)
    dead = [
        memory(
            (f"e{i}",),
            status=FactStatus.SUPERSEDED,
            superseded_by=survivor.id,
            reinforced=LONG_AGO + timedelta(minutes=i),
        )
        for i in range(5)
    ]
    decided = decide_prune([survivor, *dead], [], T0, cap=2)
    assert decided.pruned == [dead[0].id, dead[1].id]  # the stalest first
    assert [k.reason for k in decided.kept] == [KEPT_CAPPED] * 3
    # A capped receipt keeps the tombstone it names.
    middle = memory(
        ("e0",),
        status=FactStatus.SUPERSEDED,
        superseded_by=survivor.id,
        reinforced=LONG_AGO + timedelta(days=1),
    )
    first = memory(
        ("e0",),
        status=FactStatus.SUPERSEDED,
        superseded_by=middle.id,
        reinforced=LONG_AGO + timedelta(days=2),
    )
    decided = decide_prune([survivor, middle, first], [], T0, cap=1)
    assert decided.pruned == []
    assert {k.fact_id: k.reason for k in decided.kept} == {
        first.id: KEPT_CAPPED,
        middle.id: KEPT_RECEIPT,
    }
    assert decide_prune([survivor, *dead], [], T0, cap=0).pruned == []


def test_the_floor_decides_and_bad_knobs_are_refused() -> None:
    survivor, dead = merged_pair(reinforced=T0 - 2 * HALF)  # weight 0.25
    assert decide_prune([survivor, dead], [], T0, floor=0.3).pruned == [dead.id]
    assert decide_prune([survivor, dead], [], T0, floor=0.2).pruned == []
    with pytest.raises(InvalidInput, match="floor"):
        decide_prune([survivor, dead], [], T0, floor=1.5)


# -- the validator: the invariants, whatever the pass decided ------------------------------------


def test_the_validator_refuses_to_prune_a_live_or_a_pinned_fact_or_for_a_person() -> None:
    survivor, dead = merged_pair()
    project, subject = dead.project, dead.subject
    validate(Plan([PruneFact(dead, "stale", 0.001)]), project, subject)
    with pytest.raises(IntegrityViolation, match="only a tombstone"):
        validate(Plan([PruneFact(survivor, "stale", 0.001)]), project, subject)
    pinned = dead.model_copy(update={"pinned": True})
    with pytest.raises(PinnedFact):
        validate(Plan([PruneFact(pinned, "stale", 0.001)]), project, subject)
    with pytest.raises(IntegrityViolation, match="erasing"):
        validate(Plan([PruneFact(dead, "stale", 0.001, pass_name="api")]), project, subject)
    with pytest.raises(IntegrityViolation, match="outside the scope"):
        validate(Plan([PruneFact(dead, "stale", 0.001)]), project, "someone else")
