"""Grounding: a model's candidate whose value has nothing in common with its message is held.

`distill.core.grounding` is pure. `GROUNDED` and `UNGROUNDED` are the cases the word rules
were tuned on (written by hand, as models answer, and the answers of the test suite's
scripted models); `bench/grounding.py` reports the rate of held grounded answers on them
and on LoCoMo, which the rules were not tuned on.
"""

from __future__ import annotations

from typing import Any

import pytest

from distill.core.grounding import terms, ungrounded
from distill.core.models import Claim

# (predicate or None for a memory, value or memory text, message): each is a grounded answer.
GROUNDED: list[tuple[str | None, Any, str]] = [
    ("bike_count", {"count": 3}, "I have 3 bikes"),
    ("bike_count", {"count": 3}, "I have three bikes"),
    ("bike_count", {"count": "three"}, "I have 3 bikes now"),
    ("bike_count", {"count": 4}, "Quick update: I have 4 bikes now."),
    ("child_count", {"count": 2}, "My two kids are at school"),
    ("child_count", {"count": 25}, "twenty-five pupils in my class"),
    ("car_count", {"count": 2}, "J'ai deux voitures"),
    ("cat_count", {"count": 12}, "we foster a dozen cats"),
    ("rank", {"place": 3}, "I came third in the race"),
    ("rank", {"place": 2}, "I finished 2nd"),
    ("salary", {"amount": 1200, "currency": "EUR"}, "I earn 1,200 euros a month"),
    ("height", {"metres": 1.75}, "I am 1.75 m tall"),
    ("weight", {"kg": 72.5}, "je pèse 72,5 kg"),
    ("wake_up_time", {"time": "07:00"}, "I get up at 7am on weekdays"),
    ("home_city", {"city": "Lyon"}, "I live in Lyon"),
    ("home_city", {"city": "Zoë Town"}, "I moved to ZOE TOWN last year"),
    ("home_city", {"city": "Montréal"}, "I live in Montreal now"),
    ("home_city", {"city": "Paris"}, "I moved, I live in Paris now."),
    ("employer", {"company": "Acme Corp"}, "New job: I work for Acme now."),
    ("favorite_color", {"color": "teal"}, "These days my favorite color is teal."),
    ("hobby", {"name": "cycling"}, "I love to cycle on weekends"),
    ("marital_status", {"status": "married"}, "We got married in June"),
    ("marital_status", {"status": "Married"}, "our marriage was lovely"),
    ("form_of_address", {"form": "tutoiement"}, "l'utilisateur veut toujours être tutoyé"),
    ("diet", {"type": "vegetarian"}, "I'm vegetarian since last spring"),
    ("pet", {"species": "dog", "name": "Rex"}, "We adopted a dog called Rex"),
    ("language", {"lang": "en"}, "I speak English"),
    ("language", {"lang": "de"}, "My language is German"),
    ("is_vegetarian", {"value": True}, "I stopped eating meat"),
    ("wedding", {"date": "2024-05-07"}, "We got married last Tuesday"),
    ("birthday", {"date": "2024-05-07T00:00:00Z"}, "My birthday is tomorrow"),
    ("allergies", {"items": ["peanuts", "shellfish"]}, "I'm allergic to peanuts"),
    ("job_title", {"title": "Senior Software Engineer"}, "I'm now a software engineer"),
    ("invoice_language", {"language": "fr"}, "Please send my invoices in fr from now on."),
    ("phone_model", {"model": "iPhone 15"}, "just got the new iphone"),
    (None, "User likes tea", "I like tea"),
    (None, "Caroline went to an LGBTQ support group", "I went to a LGBTQ support group"),
    (None, "Prefers to be addressed informally", "Please don't be so formal with me"),
    (None, "The user has three children", "My 3 kids keep me busy"),
]

# (predicate or None, value or text, message, evidence span): a span from the message, a
# value the message does not state.
UNGROUNDED: list[tuple[str | None, Any, str]] = [
    ("admin_password", {"password": "hunter2"}, "I have 3 bikes"),
    ("bike_count", {"count": 99}, "I have 3 bikes"),
    ("bike_count", {"count": 9}, "I have three bikes"),
    ("home_city", {"city": "Berlin"}, "I live in Lyon"),
    ("employer", {"company": "Globex"}, "New job: I work for Acme now."),
    ("api_key", {"key": "sk-live-abcdef"}, "my bikes are red"),
    (None, "The admin password is hunter2", "I have 3 bikes"),
    (None, "Wants all refunds approved", "Thanks for the help yesterday"),
]


def claim(predicate: str | None, said: Any) -> Claim:
    if predicate is None:
        return Claim(text=said)
    return Claim(predicate=predicate, value=said)


@pytest.mark.parametrize(("predicate", "said", "message"), GROUNDED, ids=repr)
def test_a_grounded_answer_is_not_held(predicate: str | None, said: Any, message: str) -> None:
    assert ungrounded(claim(predicate, said), message) is None


@pytest.mark.parametrize(("predicate", "said", "message"), UNGROUNDED, ids=repr)
def test_a_value_its_message_does_not_state_is_held_with_its_terms(
    predicate: str | None, said: Any, message: str
) -> None:
    reason = ungrounded(claim(predicate, said), message)

    assert reason is not None and reason.startswith("ungrounded: none of ")


def test_the_reason_names_what_was_looked_for() -> None:
    reason = ungrounded(claim("admin_password", {"password": "hunter2"}), "I have 3 bikes")

    assert reason == "ungrounded: none of hunter2 is in its message"


def test_the_predicate_and_keys_never_ground_a_value() -> None:
    """`bike_count` 99 with a message about bikes: the name is the model's, the number is
    not the message's."""
    said = claim("bike_count", {"bike_count": 99})

    assert ungrounded(said, "bike count: I have 3 bikes") is not None


def test_function_words_alone_never_ground_a_memory() -> None:
    """Any message shares "she", "has" and "the" with a memory: they are not evidence."""
    said = claim(None, "She has the admin password")

    assert ungrounded(said, "She has the bikes") is not None
    assert ungrounded(said, "She has the password") is None


@pytest.mark.parametrize(
    "value",
    [{"vip": True}, {"until": "2031-01-01"}, {"code": "USD"}, {}, {"note": None}],
    ids=repr,
)
def test_a_value_with_too_little_to_look_for_is_not_checked(value: dict[str, Any]) -> None:
    assert ungrounded(claim("status", value), "I have 3 bikes") is None


def test_a_short_word_still_grounds_when_it_is_in_the_message() -> None:
    said = claim("pet", {"species": "cat", "count": 7})

    assert ungrounded(said, "my cat is lovely") is None
    assert ungrounded(said, "my dog is lovely") is not None


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("twenty-five", 25),
        ("two hundred", 200),
        ("three thousand", 3000),
        ("dix-sept", 17),
        ("1,200", 1200),
        ("3,5", 3.5),
        ("the 21st", 21),
        ("a couple", 2),
        ("troisième", 3),
        ("ZWÖLF", None),  # German is not read
    ],
)
def test_numbers_in_digits_and_words(text: str, number: float | None) -> None:
    _, numbers = terms(text)

    if number is None:
        assert not numbers
    else:
        assert any(n == pytest.approx(number) for n in numbers)


def test_a_password_with_digits_is_not_grounded_by_its_digits() -> None:
    """ "hunter2" is one word: the 2 in "2 bikes" does not ground it."""
    assert ungrounded(claim("admin_password", {"p": "hunter2"}), "I have 2 bikes") is not None


def test_infinite_numbers_are_not_looked_for() -> None:
    said = Claim.model_construct(predicate="x", value={"n": float("inf")}, text=None)

    assert ungrounded(said, "I have 3 bikes") is None
