"""`core.dedupe`: the decision on values, without a database."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.apply import validate
from distill.core.dedupe import dedupe, word_bag
from distill.core.models import FactKind, FactStatus
from distill.core.plan import ReviseFact
from tests.factories import PROJECT, SUBJECT, T0, make_fact, make_memory

SPELLINGS = ["Walks the dog.", "walks the dog", "WALKS  THE DOG!", "walks, the dog"]


def test_word_bag_folds_case_and_punctuation_and_keeps_repeats() -> None:
    assert word_bag("The deploy runs on Fridays.") == word_bag("on fridays, the DEPLOY runs")
    assert word_bag("very very good") != word_bag("very good")


def test_only_active_memories_take_part() -> None:
    facts = [
        make_memory("walks the dog"),
        make_memory("Walks the dog", status=FactStatus.CANDIDATE),
        make_memory("walks the dog!", status=FactStatus.SUPERSEDED, superseded_by="x"),
        make_fact("walks", {"what": "dog"}, kind=FactKind.EVENT, text="walks the dog"),
    ]
    result = dedupe(facts, T0)
    assert result.groups == [] and result.plan.actions == []


def test_a_cap_of_zero_retires_nothing_and_says_so() -> None:
    facts = [make_memory(t) for t in SPELLINGS]
    result = dedupe(facts, T0, max_retired=0)
    assert result.plan.actions == [] and result.capped
    [group] = result.groups
    assert len(group.capped) == 3


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(0, 3), min_size=2, max_size=4),
    pinned=st.lists(st.booleans(), min_size=4, max_size=4),
    order=st.permutations(range(4)),
)
def test_the_outcome_does_not_depend_on_input_order_and_passes_the_validator(
    counts: list[int], pinned: list[bool], order: list[int]
) -> None:
    facts = [
        make_memory(
            SPELLINGS[i],
            id=f"m{i}",
            reinforcement_count=c,
            pinned=pinned[i],
            recorded_at=T0 + timedelta(minutes=i),
        )
        for i, c in enumerate(counts)
    ]
    shuffled = [facts[i] for i in order if i < len(facts)]

    first, second = dedupe(facts, T0), dedupe(shuffled, T0)

    assert first.groups == second.groups
    assert [a.after for a in first.plan.actions] == [a.after for a in second.plan.actions]
    validate(first.plan, PROJECT, SUBJECT)  # pinned untouched, every retirement a receipt
    retired = {
        a.after.id
        for a in first.plan.actions
        if isinstance(a, ReviseFact) and a.after.status is FactStatus.SUPERSEDED
    }
    assert not any(f.pinned for f in facts if f.id in retired)
    # Every statement is counted once in the survivor (when it may be revised).
    [group] = first.groups
    survivor = next(f for f in facts if f.id == group.survivor)
    if not survivor.pinned:
        [absorbed] = [a.after for a in first.plan.actions if a.after.id == survivor.id]
        losers = [f for f in facts if f.id in group.retired]
        assert absorbed.reinforcement_count == survivor.reinforcement_count + sum(
            f.reinforcement_count + 1 for f in losers
        )
