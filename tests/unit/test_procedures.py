"""Procedures on values (`core.procedures`, `core.patterns`): which pairs are counted, the
lifecycle with its hysteresis (the seed's thresholds: support 3, 0.4 down, 0.6 back up),
the stale transition rejected, preconditions, and the validator's hold on every write.
SCENARIOS 35 and 36 as the seed states them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.apply import validate
from distill.core.cortex_plan import WriteProcedure
from distill.core.event_action import EventAction
from distill.core.event_in import EventIn
from distill.core.models import Event, Trust
from distill.core.patterns import (
    DEMOTE_BELOW,
    PROMOTE_SUPPORT,
    REPROMOTE_AT,
    Procedure,
    ProcedureStatus,
    allowed,
    procedure_id,
    settle,
)
from distill.core.plan import Plan
from distill.core.procedures import (
    CREATED,
    PROMOTED,
    UNCHANGED,
    decide_procedures,
    matches,
    occurrences,
    parse_state,
    record_use,
)
from distill.errors import IntegrityViolation

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
_ids = itertools.count()


def act(
    kind: str,
    outcome: str = "success",
    session: str = "s1",
    seq: int | None = None,
    minutes: int = 0,
    subject: str = "agent",
    **state: str,
) -> Event:
    n = next(_ids)
    return Event(
        id=f"{n:032x}",
        project="p",
        subject=subject,
        text=f"{kind} {outcome}",
        occurred_at=T0 + timedelta(minutes=minutes),
        recorded_at=T0,
        source="agent",
        trust=Trust.TRUSTED,
        idempotency_key=f"k{n}",
        action=EventAction(type=kind, outcome=outcome, session=session, seq=seq, state=state),
    )


def build_then_test(times: int) -> list[Event]:
    """`build` then `test`, both succeeding, once per session."""
    events = []
    for i in range(times):
        events += [act("build", session=f"s{i}", seq=1), act("test", session=f"s{i}", seq=2)]
    return events


def procedure(status: ProcedureStatus, support: int = 3, ok: int = 0, failed: int = 0) -> Procedure:
    return Procedure(
        id=procedure_id("p", "agent", "build", "test"),
        project="p",
        subject="agent",
        action_a="build",
        action_b="test",
        status=status,
        support=support,
        successes=ok,
        failures=failed,
        created_at=T0,
        updated_at=T0,
    )


# -- the seed's thresholds -------------------------------------------------------------------------
def test_the_thresholds_are_the_seeds() -> None:
    assert (PROMOTE_SUPPORT, DEMOTE_BELOW, REPROMOTE_AT) == (3, 0.4, 0.6)


# -- SCENARIOS 35 ----------------------------------------------------------------------------------
def test_scenario_35_twice_is_a_candidate_three_times_active_and_a_rerun_changes_nothing() -> None:
    twice = decide_procedures("p", "agent", build_then_test(2), [], T0)
    [made] = [a.after for a in twice.plan.actions if isinstance(a, WriteProcedure)]
    assert (made.name, made.status, made.support) == ("build → test", "candidate", 2)

    events = build_then_test(3)
    thrice = decide_procedures("p", "agent", events, [made], T0 + timedelta(hours=1))
    [write] = thrice.plan.actions
    assert isinstance(write, WriteProcedure)
    assert (write.after.status, write.after.support) == (ProcedureStatus.ACTIVE, 3)
    assert write.after.id == made.id  # the same row, found again by its deterministic id
    assert thrice.plan.outcomes[PROMOTED] == 1

    again = decide_procedures("p", "agent", events, [write.after], T0 + timedelta(hours=2))
    assert again.plan.actions == []  # counted again, not added: support stays 3
    assert again.plan.outcomes == {UNCHANGED: 1}


def test_three_occurrences_at_once_make_an_active_procedure() -> None:
    result = decide_procedures("p", "agent", build_then_test(3), [], T0)
    [write] = result.plan.actions
    assert isinstance(write, WriteProcedure) and write.after.status is ProcedureStatus.ACTIVE
    assert result.plan.outcomes == {CREATED: 1, PROMOTED: 1}


# -- what is counted -------------------------------------------------------------------------------
def test_only_consecutive_successes_of_one_session_pair() -> None:
    events = [
        act("build", seq=1),
        act("test", "failure", seq=2),  # breaks the chain: no build → test, no test → deploy
        act("deploy", seq=3),
        act("lint", session="s2", seq=1),
        act("build", session="s3", seq=1),  # another session: never paired with s2's lint
    ]
    assert occurrences(events) == {}


def test_seq_orders_a_session_before_the_clock() -> None:
    # Written in the wrong clock order; seq says build came first.
    events = [act("test", seq=2, minutes=0), act("build", seq=1, minutes=5)]
    assert set(occurrences(events)) == {("build", "test")}


def test_without_seq_the_clock_orders() -> None:
    events = [act("test", minutes=5), act("build", minutes=0)]
    assert set(occurrences(events)) == {("build", "test")}


def test_another_subjects_events_are_never_counted() -> None:
    mine = build_then_test(2)
    theirs = [act("build", subject="other", seq=1), act("test", subject="other", seq=2)]
    result = decide_procedures("p", "agent", [*mine, *theirs], [], T0)
    [write] = result.plan.actions
    assert isinstance(write, WriteProcedure) and write.after.support == 2


def test_action_types_are_normalised_into_one_procedure() -> None:
    events = [act("Run Tests", seq=1), act("deploy", seq=2), act("run_tests", "success", "b", 1)]
    events.append(act("Deploy", session="b", seq=2))
    assert occurrences(events)[("run_tests", "deploy")].count == 2


def test_the_precondition_is_what_every_occurrence_shared() -> None:
    events = [
        act("build", session="a", seq=1, repo="py", os="linux"),
        act("test", session="a", seq=2),
        act("build", session="b", seq=1, repo="py", os="mac"),
        act("test", session="b", seq=2),
    ]
    result = decide_procedures("p", "agent", events, [], T0)
    [write] = result.plan.actions
    assert isinstance(write, WriteProcedure) and write.after.precondition == "repo=py"


# -- SCENARIOS 36: the lifecycle -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "effectiveness", "then"),
    [
        (ProcedureStatus.ACTIVE, 0.39, ProcedureStatus.DEPRECATED),
        (ProcedureStatus.ACTIVE, 0.4, ProcedureStatus.ACTIVE),  # exactly 0.4 stays
        (ProcedureStatus.ACTIVE, 0.5, ProcedureStatus.ACTIVE),
        (ProcedureStatus.DEPRECATED, 0.5, ProcedureStatus.DEPRECATED),  # the hysteresis gap
        (ProcedureStatus.DEPRECATED, 0.59, ProcedureStatus.DEPRECATED),
        (ProcedureStatus.DEPRECATED, 0.6, ProcedureStatus.ACTIVE),
        (ProcedureStatus.ACTIVE, None, ProcedureStatus.ACTIVE),  # no use yet: no evidence
        (ProcedureStatus.CANDIDATE, 0.0, ProcedureStatus.CANDIDATE),  # never stale-deprecated
    ],
)
def test_scenario_36_hysteresis(
    status: ProcedureStatus, effectiveness: float | None, then: ProcedureStatus
) -> None:
    support = 2 if status is ProcedureStatus.CANDIDATE else 5
    assert settle(status, support, effectiveness) is then


def test_scenario_36_uses_move_an_active_procedure_down_and_back_up() -> None:
    p = procedure(ProcedureStatus.ACTIVE)
    seen = []
    for success in [True, False, True, False, False]:  # 2/5 = 0.4 stays, then 2/5 ...
        p = record_use(p, success, T0).after
        seen.append((p.successes, p.uses, str(p.status)))
    # 1/1, 1/2 = 0.5, 2/3, 2/4 = 0.5, 2/5 = 0.4 (exactly: stays active)
    assert seen[-1] == (2, 5, "active")
    p = record_use(p, False, T0).after  # 2/6 = 0.33 < 0.4
    assert p.status is ProcedureStatus.DEPRECATED
    for _ in range(3):  # 3/7, 4/8 = 0.5, 5/9 = 0.56: still deprecated, the gap holds
        p = record_use(p, True, T0).after
        assert p.status is ProcedureStatus.DEPRECATED
    p = record_use(p, True, T0).after  # 6/10 = 0.6
    assert (p.effectiveness, p.status) == (0.6, ProcedureStatus.ACTIVE)


def test_the_stale_transition_is_refused_by_the_validator() -> None:
    candidate = procedure(ProcedureStatus.CANDIDATE, support=1, failed=4)
    stale = candidate.model_copy(update={"status": ProcedureStatus.DEPRECATED})
    assert "never deprecated" in (allowed(ProcedureStatus.CANDIDATE, stale) or "")
    plan = Plan()
    plan.add(WriteProcedure(candidate, stale, "stale"))
    with pytest.raises(IntegrityViolation, match="never deprecated"):
        validate(plan, "p", "agent")


def test_a_failed_use_of_a_candidate_keeps_it_a_candidate() -> None:
    p = record_use(procedure(ProcedureStatus.CANDIDATE, support=1), False, T0).after
    assert (p.status, p.failures) == (ProcedureStatus.CANDIDATE, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"status": ProcedureStatus.ACTIVE, "support": 2},  # promoted below its support
        {"status": ProcedureStatus.DEPRECATED, "successes": 2, "failures": 3},  # at 0.4
        {"id": "0" * 32},  # not the id of its pair
        {"failures": -1},
    ],
)
def test_the_validator_refuses_a_write_off_the_lifecycle(change: dict[str, object]) -> None:
    before = procedure(ProcedureStatus.CANDIDATE, support=2)
    if change.get("status") is ProcedureStatus.DEPRECATED:
        before = procedure(ProcedureStatus.ACTIVE)
    plan = Plan()
    plan.add(WriteProcedure(before, before.model_copy(update=change), "bad"))
    with pytest.raises(IntegrityViolation):
        validate(plan, "p", "agent")


# -- preconditions ---------------------------------------------------------------------------------
def test_an_empty_precondition_matches_every_state() -> None:
    p = procedure(ProcedureStatus.ACTIVE)
    assert matches(p, {}) and matches(p, {"repo": "py"})


def test_every_clause_must_hold() -> None:
    p = procedure(ProcedureStatus.ACTIVE).model_copy(update={"precondition": "os=linux,repo=py"})
    assert matches(p, parse_state("repo=py, os=linux, extra=1"))
    assert not matches(p, parse_state("repo=py"))
    assert not matches(p, {"repo": "py", "os": "mac"})


def test_a_state_is_text_or_a_mapping_read_alike() -> None:
    assert parse_state("Repo=py,ci=true") == parse_state({"repo": "py", "CI": True})
    with pytest.raises(ValueError, match="not key=value"):
        parse_state("repo")


# -- the action an event records -------------------------------------------------------------------
def test_an_event_may_be_an_action_alone() -> None:
    spec = EventIn(subject="agent", action={"type": "build", "outcome": "success"})
    assert spec.action is not None and spec.action.type == "build"


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "build"},  # no outcome
        {"type": "build", "outcome": "maybe"},
        {"type": "!!", "outcome": "success"},
        {"type": "build", "outcome": "success", "seq": -1},
        {"type": "build", "outcome": "success", "colour": "red"},  # not an action field
        {"type": "build", "outcome": "success", "state": {"k": "a,b"}},
    ],
)
def test_a_bad_action_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        EventIn(subject="agent", action=bad)


# -- the property: recounting is idempotent whatever order the events come in ----------------------
@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["build", "test", "deploy"]),
            st.sampled_from(["success", "failure"]),
            st.sampled_from(["s1", "s2", "s3"]),
        ),
        max_size=30,
    ),
    data=st.data(),
)
def test_any_order_of_the_same_history_counts_the_same_and_a_rerun_changes_nothing(
    steps: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    events = [
        act(kind, outcome, session, seq=i) for i, (kind, outcome, session) in enumerate(steps)
    ]
    shuffled = data.draw(st.permutations(events))
    first = decide_procedures("p", "agent", events, [], T0)
    made = [a.after for a in first.plan.actions if isinstance(a, WriteProcedure)]
    other = [a.after for a in decide_procedures("p", "agent", shuffled, [], T0).plan.actions]
    assert other == made
    assert decide_procedures("p", "agent", shuffled, made, T0).plan.actions == []
    for p in made:  # support is the number of back-to-back successes, as counted by hand
        seen = 0
        for session in ("s1", "s2", "s3"):
            mine = [(k, o) for k, o, s in steps if s == session]
            seen += sum(
                1
                for (ka, oa), (kb, ob) in itertools.pairwise(mine)
                if (ka, kb) == (p.action_a, p.action_b) and oa == ob == "success"
            )
        assert p.support == seen
        validate_plan = Plan([WriteProcedure(None, p, "made")])
        validate(validate_plan, "p", "agent")
