"""The guards that keep two predicates apart however close their embeddings (identity.veto)."""

from __future__ import annotations

import pytest

from distill.core.identity import (
    antonym_differs,
    contrasting,
    negated,
    negation_differs,
    veto,
)


@pytest.mark.parametrize(
    "text",
    [
        "never_publishes_on_monday",
        "A man is not playing a guitar",
        "There is no man in the yard",
        "The dog isn't running",
        "the_dog_isn_t_running",
        "Nobody is riding the bike",
        "A woman is cutting an onion without a knife",
        "He cannot swim",
        "She dont like tea",
    ],
)
def test_negated(text: str) -> None:
    assert negated(text)


@pytest.mark.parametrize(
    "text",
    [
        "always_publishes_on_monday",
        "A man is playing a guitar",
        "notebook_count",
        "the_dog_is_running_in_the_snow",
        "nonetheless_a_note",
        "can_swim",
        "knot_tying",
    ],
)
def test_not_negated(text: str) -> None:
    assert not negated(text)


def test_negation_on_one_side_only_differs() -> None:
    assert negation_differs("always_publishes_on_monday", "never_publishes_on_monday")
    assert negation_differs("eats_meat", "does_not_eat_meat")
    assert not negation_differs("does_not_eat_meat", "never_eats_meat")
    assert not negation_differs("favorite_color", "preferred_color")


def test_antonyms_differ_only_when_each_side_has_one_of_them() -> None:
    assert antonym_differs("likes_tea", "dislikes_tea")
    assert antonym_differs("arrives_before_noon", "arrives_after_noon")
    assert antonym_differs("A dog is near the ball", "A dog is far from the ball")
    assert not antonym_differs("before_or_after_noon", "after_noon")
    assert not antonym_differs("likes_tea", "likes_coffee")


def test_a_negating_prefix_makes_an_opposite() -> None:
    assert antonym_differs("A person is folding a tortilla", "A person is unfolding a tortilla")
    assert antonym_differs("agrees_with_plan", "disagrees_with_plan")
    assert not antonym_differs("unfolding_a_map", "unfolding_the_map")


def test_veto_names_the_first_guard_that_objects() -> None:
    assert veto("personal_best_5k", "personal_best_10k") == "numbers"
    assert veto("publishes_on_monday", "never_publishes_on_monday") == "negation"
    assert veto("likes_tea", "dislikes_tea") == "antonyms"
    assert veto("bike_count", "bikes_owned") is None


def test_the_number_guard_is_unchanged() -> None:
    assert contrasting("q1_revenue", "q2_revenue")
    assert not contrasting("personal_best_5k", "goal_personal_best_time")
