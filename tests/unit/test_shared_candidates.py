"""A candidate held in two sets: a person's answer to one answers the other.

A trusted value can be held in a value set against the current version and, at once, in a
quarantine set against a less trusted claim that came in while it was current. A person
who resolves the quarantine set without keeping it says it was never true; the value set
that asked "this or the current value?" was left open over a fact that was no longer live,
and keeping it there then retired the current version in favour of a fact never true: no
version of the name was active and three receipts ran in a circle. Found by the random
search over a person's decisions (hygiene class 32, seed 1313915); these are its minimal
histories.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from distill import Memory
from distill.core.models import (
    ConflictKind,
    ConflictSet,
    ConflictStatus,
    Fact,
    FactStatus,
    Resolver,
)
from distill.core.plan import Plan, ReviseConflict, ReviseFact
from distill.core.resolve import resolve_conflict
from tests.factories import T0, make_conflict, make_fact
from tests.unit.scenario_support import MemoryFactory

NAME = "bike_class_count"


def revised_facts(plan: Plan) -> dict[str, Fact]:
    return {a.after.id: a.after for a in plan.actions if isinstance(a, ReviseFact)}


def revised_sets(plan: Plan) -> dict[str, ConflictSet]:
    return {a.after.id: a.after for a in plan.actions if isinstance(a, ReviseConflict)}


def said(mem: Memory, count: int, day: int, trust: str, action: str) -> None:
    mem.add_event(
        subject="alice",
        text=f"{NAME} is {count}",
        occurred_at=T0 + timedelta(days=day),
        trust=trust,
        claims=[{"predicate": NAME, "value": {"count": count}, "action": action}],
    )


def by_count(mem: Memory) -> dict[int, Fact]:
    return {f.value["count"]: f for f in mem.facts(subject="alice", include_retired=True)}


def held_twice(mem: Memory) -> tuple[str, str]:
    """A trusted 5 held against the current 4 (a value set) and, with a third party's
    earlier 3, in a quarantine set opened while the 5 was current: (value set, quarantine)."""
    said(mem, 5, 240, "trusted", "create")
    mem.consolidate()
    said(mem, 4, 37, "third_party", "supersede")
    mem.consolidate()
    said(mem, 4, 25, "trusted", "create")
    said(mem, 3, 14, "third_party", "supersede")
    mem.consolidate()
    facts = by_count(mem)
    assert facts[4].status is FactStatus.ACTIVE and facts[5].status is FactStatus.CANDIDATE
    sets = {c.kind: c for c in mem.conflicts(subject="alice")}
    assert set(sets[ConflictKind.CONFLICT].member_ids) == {facts[5].id, facts[4].id}
    assert set(sets[ConflictKind.QUARANTINE].member_ids) == {facts[5].id, facts[3].id}
    return sets[ConflictKind.CONFLICT].id, sets[ConflictKind.QUARANTINE].id


@pytest.mark.parametrize("keep_the_three", [True, False])
def test_a_candidate_a_person_rejects_leaves_the_other_set_it_was_held_in(
    make_memory: MemoryFactory, keep_the_three: bool
) -> None:
    mem = make_memory()
    value_set, quarantine = held_twice(mem)
    three = by_count(mem)[3].id

    mem.resolve_conflict(quarantine, keep=three if keep_the_three else None)

    facts = by_count(mem)
    assert not facts[5].live  # never true, by the person's word
    assert facts[4].status is FactStatus.ACTIVE
    (answered,) = [c for c in mem.conflicts(subject="alice", status=None) if c.id == value_set]
    assert answered.status is ConflictStatus.RESOLVED
    assert answered.resolved_by is Resolver.PERSON
    assert answered.kept_fact_id == facts[4].id
    assert mem.conflicts(subject="alice") == []
    if keep_the_three:  # filed where it falls: before the 4
        assert facts[3].status is FactStatus.SUPERSEDED
        assert (facts[3].valid_from, facts[3].valid_to) == (
            T0 + timedelta(days=14),
            T0 + timedelta(days=25),
        )
    else:
        assert facts[3].status is FactStatus.RETRACTED


def test_a_rejected_candidate_leaves_a_set_that_holds_another_candidate_open() -> None:
    current = make_fact(value={"count": 4})
    rejected = make_fact(
        value={"count": 5}, status=FactStatus.CANDIDATE, valid_from=T0 + timedelta(days=3)
    )
    other = make_fact(
        value={"count": 6}, status=FactStatus.CANDIDATE, valid_from=T0 + timedelta(days=4)
    )
    held = make_fact(
        value={"count": 3}, status=FactStatus.CANDIDATE, valid_from=T0 + timedelta(days=5)
    )
    quarantine = make_conflict([rejected.id, held.id], kind=ConflictKind.QUARANTINE)
    value_set = make_conflict([current.id, rejected.id, other.id])
    members = {f.id: f for f in (current, rejected, other, held)}

    plan = resolve_conflict(
        quarantine, members, held.id, T0 + timedelta(days=9), current, others=[value_set]
    )

    moved = revised_sets(plan)[value_set.id]
    assert moved.status is ConflictStatus.OPEN
    assert moved.member_ids == (current.id, other.id)


def test_keeping_a_member_no_longer_live_changes_no_version() -> None:
    current = make_fact(value={"count": 4})
    rejected = make_fact(
        value={"count": 5},
        status=FactStatus.SUPERSEDED,
        valid_from=T0 + timedelta(days=3),
        valid_to=T0 + timedelta(days=3),
        superseded_by="someone",
        retired_at=T0 + timedelta(days=4),
    )
    value_set = make_conflict([rejected.id, current.id])
    members = {f.id: f for f in (current, rejected)}

    plan = resolve_conflict(value_set, members, rejected.id, T0 + timedelta(days=9), current)

    assert revised_facts(plan) == {}  # the current 4 stays current: nothing else to retire
    assert revised_sets(plan)[value_set.id].status is ConflictStatus.RESOLVED


def test_keeping_an_older_version_retires_no_current_fact() -> None:
    older = make_fact(
        value={"count": 5},
        status=FactStatus.SUPERSEDED,
        valid_to=T0 + timedelta(days=5),
        retired_at=T0 + timedelta(days=5),
    )
    current = make_fact(
        value={"count": 4}, valid_from=T0 + timedelta(days=5), supersedes_id=older.id
    )
    older = older.model_copy(update={"superseded_by": current.id})
    late = make_fact(
        value={"count": 3}, status=FactStatus.CANDIDATE, valid_from=T0 + timedelta(days=2)
    )
    value_set = make_conflict([older.id, current.id, late.id])
    members = {f.id: f for f in (older, current, late)}

    plan = resolve_conflict(value_set, members, older.id, T0 + timedelta(days=9), current)

    after = revised_facts(plan)
    assert current.id not in after  # the present is not the older version's to displace
    assert after[late.id].status is FactStatus.SUPERSEDED
    assert after[late.id].valid_to == late.valid_from
