"""`core.dedupe`: the decision on values, without a database."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.apply import validate
from distill.core.dedupe import Near, dedupe, word_bag
from distill.core.models import FactKind, FactStatus, Trust
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


# -- the offline tier ------------------------------------------------------------------------
PARAPHRASES = ["I like jazz music a lot.", "I really like jazz music a lot.", "I like jazz a lot."]


@settings(max_examples=40, deadline=None)
@given(
    pinned=st.lists(st.booleans(), min_size=3, max_size=3),
    order=st.permutations(range(3)),
    pairs=st.permutations([("m0", "m1", 0.1), ("m1", "m2", 0.05), ("m0", "m2", 0.2)]),
)
def test_the_offline_tier_merges_each_memory_once_whatever_the_order(
    pinned: list[bool], order: list[int], pairs: list[tuple[str, str, float]]
) -> None:
    facts = [
        make_memory(text, id=f"m{i}", pinned=pinned[i], recorded_at=T0 + timedelta(minutes=i))
        for i, text in enumerate(PARAPHRASES)
    ]
    near = [Near(a, b, d) for a, b, d in pairs]
    first = dedupe(facts, T0, near=near, max_distance=0.24)
    second = dedupe([facts[i] for i in order], T0, near=list(reversed(near)), max_distance=0.24)

    assert first.groups == second.groups
    validate(first.plan, PROJECT, SUBJECT)
    retired = [a.before.id for a in first.plan.actions if a.op == "merge"]
    assert len(retired) == len(set(retired)) <= 1  # one merge per memory per run
    assert not any(f.pinned for f in facts if f.id in retired)
    if not (pinned[1] and pinned[2]):  # the closest pair (0.05) goes first
        assert first.groups[0].members in (("m1", "m2"), ("m2", "m1"))


def test_the_offline_tier_refuses_what_a_guard_objects_to_and_what_is_too_far() -> None:
    always = make_memory("I always publish on Tuesdays.", id="a")
    never = make_memory("I never publish on Tuesdays.", id="b", recorded_at=T0)
    assert dedupe([always, never], T0, near=[Near("a", "b", 0.05)], max_distance=0.24).retired == 0
    close = [make_memory(PARAPHRASES[0], id="x"), make_memory(PARAPHRASES[1], id="y")]
    assert dedupe(close, T0, near=[Near("x", "y", 0.3)], max_distance=0.24).retired == 0
    assert dedupe(close, T0, near=[Near("x", "y", 0.1)]).retired == 0  # no distance: off
    assert dedupe(close, T0, near=[Near("x", "y", 0.1)], max_distance=0.24).retired == 1


def test_the_survivor_takes_the_best_trust_of_the_duplicates_it_absorbs() -> None:
    # The more corroborated third party's copy survives; the person's own statement of the
    # same words is evidence it keeps, with its trust.
    kept = make_memory("walks the dog", id="m0", reinforcement_count=2, trust=Trust.THIRD_PARTY)
    said = make_memory("Walks the dog.", id="m1", trust=Trust.TRUSTED)
    result = dedupe([kept, said], T0)
    absorbed = [
        a.after for a in result.plan.actions if isinstance(a, ReviseFact) and a.op == "absorb"
    ]
    assert [(f.id, f.trust) for f in absorbed] == [("m0", Trust.TRUSTED)]
