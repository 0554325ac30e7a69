"""The merge guard for free-text memories (statements.merge_objections) and the offline
tier's decision (statements.offline_merge): each objection with cases that must object and
paraphrases with the same details that must not, SCENARIOS 22 and 23, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.statements import (
    CODES,
    Objection,
    OfflineMerge,
    merge_objections,
    offline_merge,
)


def codes(survivor: str, loser: str) -> set[str]:
    return {o.code for o in merge_objections(survivor, loser)}


def both_ways(a: str, b: str) -> set[str]:
    return codes(a, b) | codes(b, a)


# -- SCENARIOS 22 and 23 ---------------------------------------------------------------------
def test_scenario_22_always_and_never_publishing_never_merge() -> None:
    always, never = "User always publishes on Tuesdays", "User never publishes on Tuesdays"
    assert "negation" in codes(always, never)
    assert "negation" in codes(never, always)
    # Whatever the distance of their embeddings (0.05 for the default model), the offline
    # tier refuses, in both orders.
    assert not offline_merge(always, never, 0.0, 0.3)
    assert not offline_merge(never, always, 0.0, 0.3)
    decision = offline_merge(always, never, 0.05, 0.3)
    assert decision.objections and decision.objections[0].code == "negation"


def test_scenario_23_a_role_swap_is_never_a_merge() -> None:
    found = merge_objections("Alice manages Bob", "Bob manages Alice")
    assert [o.code for o in found] == ["role_swap"]
    assert "Alice" not in found[0].detail or "manages" in found[0].detail
    assert not offline_merge("Alice manages Bob", "Bob manages Alice", 0.02, 0.3)
    assert not offline_merge("Bob manages Alice", "Alice manages Bob", 0.02, 0.3)


# -- each code: must object ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("survivor", "loser", "code"),
    [
        # number: the loser's number is lost
        ("User has bikes", "User has 3 bikes", "number"),
        ("User has 3 bikes", "User has 4 bikes", "number"),
        ("User has three bikes", "User has four bikes", "number"),
        ("The rent is 1,200 euros", "The rent is 1,500 euros", "number"),
        ("User runs twenty-three km a week", "User runs 24 km a week", "number"),
        ("Two dogs are playing", "Three dogs are playing", "number"),
        # negation on one side only, either side
        ("User likes tea", "User doesn't like tea", "negation"),
        ("User doesn't like tea", "User likes tea", "negation"),
        ("User can swim", "User can't swim", "negation"),
        ("User eats meat", "User never eats meat", "negation"),
        ("A man is playing a guitar", "There is no man playing a guitar", "negation"),
        ("Someone is at home", "Nobody is at home", "negation"),
        # antonyms split across the sides
        ("User likes tea", "User dislikes tea", "antonym"),
        ("The office is near the station", "The office is far from the station", "antonym"),
        ("User works at night", "User works during the day", "antonym"),
        ("User always drinks coffee", "User sometimes drinks coffee", "antonym"),
        ("The runner is running outside", "The runner is running indoors", "antonym"),
        ("User is able to drive", "User is unable to drive", "antonym"),
        # action: each side does something the other does not
        ("A dog is running in the park", "A dog is standing in the park", "action"),
        ("User is learning Spanish", "User is teaching Spanish", "action"),
        # entity: the loser names someone or something the survivor does not
        ("User moved to Lyon", "User moved to Paris", "entity"),
        ("User works at a bank", "User works at HSBC", "entity"),
        ("She manages the team", "Alice manages the team", "entity"),
        ("User bought a phone", "User bought an iPhone", "entity"),
        # date: the loser's day, month, year or time of day is lost
        ("User publishes every week", "User publishes on Tuesdays", "date"),
        ("User publishes on Tuesdays", "User publishes on Tuesday mornings", "date"),
        ("The trip is in June", "The trip is in July", "date"),
        ("User moved here", "User moved here in 2019", "date"),
        ("The meeting is on 2024-05-01", "The meeting is on 2024-06-01", "date"),
        ("User visits her mother", "User visits her mother in May", "date"),
        ("User calls her mother", "User calls her mother tomorrow", "date"),
        # condition: the loser holds only under a condition the survivor does not state
        ("User drinks coffee", "User drinks coffee only when tired", "condition"),
        ("User takes the train", "User takes the train if it rains", "condition"),
        ("User works from home", "User works from home unless there is a meeting", "condition"),
        ("User eats everything", "User eats everything except fish", "condition"),
        ("User cycles to work", "User cycles to work as long as it is dry", "condition"),
        # role swap: the same words, two arguments exchanged
        ("Alice manages Bob", "Bob manages Alice", "role_swap"),
        ("The woman is picking up a kangaroo", "The kangaroo is picking up a woman", "role_swap"),
        ("The turtle is following the fish", "The fish is following the turtle", "role_swap"),
        ("A dog is chased by a cat", "A cat is chased by a dog", "role_swap"),
    ],
)
def test_objects(survivor: str, loser: str, code: str) -> None:
    assert code in codes(survivor, loser), merge_objections(survivor, loser)
    assert not offline_merge(survivor, loser, 0.0, 2.0)


# -- each code: must not object (the same details, said another way) ------------------------
@pytest.mark.parametrize(
    ("survivor", "loser"),
    [
        # number: digits and words, separators, "a" for one, more detail on the survivor
        ("User has 3 bikes", "User has three bikes"),
        ("User has three bikes", "user has 3 BIKES!"),
        ("The rent is 1200 euros", "The rent is 1,200 euros"),
        ("User runs 23 km a week", "User runs twenty-three km a week"),
        ("User has a bike", "User has one bike"),
        ("User has 3 bikes and 2 cars", "User has 3 bikes"),
        ("Nobody is playing", "No one is playing"),
        # negation: the same denial, contracted or not, or none on either side
        ("User doesn't like tea", "User does not like tea"),
        ("User does not eat meat", "User doesn’t eat meat"),
        ("User cannot swim", "User can't swim"),
        ("User likes tea", "user LIKES tea."),
        # antonym: the same side of a pair on both sides
        ("The office is near the station", "The office is near the train station"),
        ("User dislikes tea", "User dislikes tea a lot"),
        # action: the same verb, or one side with none
        ("A man is playing a guitar", "A guitar is being played by a man"),
        ("A man is slicing a tomato", "A man is slicing a tomato in the kitchen"),
        ("A man rides a horse", "A man is riding a horse"),
        # entity: the survivor keeps the name, in any case or form
        ("User moved to Paris in 2019", "user moved to paris in 2019"),
        ("Alice manages Bob's team", "Alice manages Bob's team"),
        ("The User lives in Lyon", "User lives in Lyon"),
        ("User works at HSBC in London", "User works at HSBC"),
        # date: plural days, the survivor more precise, ambiguous months that are verbs
        ("User publishes on Tuesday mornings", "user publishes on tuesdays"),
        ("User publishes on Tuesdays", "User publishes on Tuesday"),
        ("User may go to the gym", "User may go to the gym"),
        ("Soldiers march through the town", "soldiers march through the town"),
        ("User moved here in 2019", "User moved here in 2019"),
        # condition: the survivor states it too
        ("User drinks coffee only when tired", "User drinks coffee only when tired"),
        ("User takes the train if it rains", "User takes the train if it rains"),
        # role swap: word order that keeps the roles, passive against active
        ("The deploy runs on Fridays", "On Fridays the deploy runs"),
        ("Alice manages Bob", "Bob is managed by Alice"),
        ("A dog is chasing a cat", "A cat is being chased by a dog"),
        ("User publishes on Tuesday mornings.", "user publishes on tuesday mornings"),
    ],
)
def test_does_not_object(survivor: str, loser: str) -> None:
    assert merge_objections(survivor, loser) == ()


def test_a_survivor_with_more_detail_may_absorb_one_with_less_but_not_the_reverse() -> None:
    more, less = "User publishes on Tuesday mornings at 9", "User publishes on Tuesdays"
    assert merge_objections(more, less) == ()
    assert {"date", "number"} <= codes(less, more)
    # The offline tier needs both directions clean: either text may be the one kept.
    assert not offline_merge(more, less, 0.05, 0.3)


def test_objections_say_what_is_lost() -> None:
    (found,) = merge_objections("User moved to Lyon", "User moved to Paris")
    assert found == Objection("entity", "the loser's name 'paris' is not in the survivor")
    (number,) = merge_objections("User has 3 bikes", "User has 4 bikes")
    assert "4" in number.detail
    assert all(o.code in CODES for o in merge_objections("A b 3", "C d 4 never if"))


def test_offline_merge_needs_both_closeness_and_no_objection() -> None:
    same = ("User has three bikes", "user has 3 bikes")
    assert offline_merge(*same, 0.10, 0.27) == OfflineMerge(
        True, "distance 0.100 ≤ 0.27, no objection"
    )
    assert offline_merge(*same, 0.27, 0.27).merge  # the bound is inclusive
    far = offline_merge(*same, 0.2701, 0.27)
    assert not far and far.objections == () and "0.270 > 0.27" in far.reason
    vetoed = offline_merge("User has 3 bikes", "User has 4 bikes", 0.01, 0.27)
    assert not vetoed.merge
    assert {o.code for o in vetoed.objections} == {"number"}
    assert vetoed.reason == vetoed.objections[0].detail


# -- properties ------------------------------------------------------------------------------
WORDS = st.sampled_from(
    ["user", "Alice", "Bob", "never", "always", "likes", "dislikes", "3", "three", "tea",
     "on", "Tuesdays", "if", "it", "rains", "manages", "is", "running", "standing", "not",
     "doesn't", "in", "May", "2019", "near", "far", "the", "a", "by", "was"]
)  # fmt: skip
SENTENCES = st.lists(WORDS, min_size=1, max_size=9).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(SENTENCES)
def test_a_text_never_objects_to_merging_with_itself(text: str) -> None:
    assert merge_objections(text, text) == ()
    assert offline_merge(text, text, 0.0, 0.0).merge


@settings(max_examples=300, deadline=None)
@given(SENTENCES, SENTENCES, st.sampled_from([", ", " , ", " - "]), st.sampled_from(["", ".", "!"]))
def test_punctuation_between_words_never_changes_the_verdict(
    a: str, b: str, comma: str, end: str
) -> None:
    def punctuated(text: str) -> str:
        return comma.join(text.split()) + end

    assert merge_objections(punctuated(a), punctuated(b)) == merge_objections(a, b)


@settings(max_examples=300, deadline=None)
@given(SENTENCES, SENTENCES, st.sampled_from([str.lower, str.upper, str.title, str.swapcase]))
def test_the_survivors_case_never_changes_the_verdict(a: str, b: str, change: object) -> None:
    """Only the loser's capitals are read (they mark its names); the survivor keeps a name
    in any case. "May" is the one word whose case decides what it is (a month or a verb)."""
    assert callable(change)
    if "may" in a.casefold().split():
        a = a.replace("May", "June").replace("may", "june")
    assert merge_objections(change(a), b) == merge_objections(a, b)


@settings(max_examples=300, deadline=None)
@given(SENTENCES, SENTENCES)
def test_the_symmetric_checks_object_in_both_directions(a: str, b: str) -> None:
    symmetric = {"negation", "antonym", "action", "role_swap"}
    assert codes(a, b) & symmetric == codes(b, a) & symmetric
