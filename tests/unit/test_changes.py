"""`core.changes`: the words' own evidence that a newer statement replaces an older one, and
the `change` objection that keeps a statement of change from being merged into the state it
changes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distill.core.changes import replacement_evidence
from distill.core.statements import merge_objections


@pytest.mark.parametrize(
    ("older", "newer", "kind"),
    [
        ("I live in Paris.", "I moved to Lyon in March.", "change"),
        ("I use VS Code.", "I switched to Neovim last week.", "change"),
        ("My rent is 1,200 euros.", "My rent went up after the renewal.", "change"),
        ("I eat meat.", "I don't eat meat.", "negated"),
        ("I have 3 kids.", "I have 4 kids.", "value"),
        ("Standup is at 9:30.", "Standup is at 10:00.", "value"),
        ("I like crowded bars.", "I like empty bars.", "opposite"),
        ("Je fume.", "Je ne fume plus, maintenant je cours.", "change"),
        ("Ich wohne in Köln.", "Ich wohne nicht mehr in Köln.", "change"),
    ],
)
def test_the_words_show_a_replacement(older: str, newer: str, kind: str) -> None:
    found = replacement_evidence(older, newer)
    assert found is not None and found.startswith(kind)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("I'm allergic to peanuts.", "I'm allergic to shellfish."),  # one thing for another
        ("I prefer the window seat.", "I prefer the aisle seat."),  # the same shape: no call
        ("My brother lives in Madrid.", "My sister lives in Madrid."),
        ("We live in Austin.", "We're in Denver."),  # a plain new state: contested, by design
        ("My daughter plays the violin.", "I have 3 kids."),  # a number, other words
        ("I moved to Lyon.", "I moved to Lille."),  # the change is said by both
    ],
)
def test_the_words_show_nothing(older: str, newer: str) -> None:
    assert replacement_evidence(older, newer) is None


def test_only_the_newer_statements_change_words_count() -> None:
    # "I moved to Lyon" is older: the newer repeating a state is no evidence it replaces it.
    assert replacement_evidence("I moved to Lyon.", "I live in Lyon.") is None
    assert replacement_evidence("I live in Lyon.", "I moved to Lyon.") is not None


def test_a_statement_of_change_is_never_merged_into_the_state_it_changes() -> None:
    state, change = "My phone is a Pixel 6.", "I replaced my Pixel 6 with an iPhone 15."
    assert [o.code for o in merge_objections(change, state)] == ["change"]
    assert "change" in {o.code for o in merge_objections(state, change)}
    # Both say it: the change objection has nothing to say (the date may).
    both = merge_objections("I moved to Lyon in 2024.", "I moved to Lyon.")
    assert all(o.code != "change" for o in both)


def test_sentence_initial_pronouns_of_other_languages_are_not_names() -> None:
    english, french = "I am allergic to penicillin.", "Je suis allergique à la pénicilline."
    assert merge_objections(english, french) == ()
    # A weekday in German is the weekday, and German capitals mark nouns, not names: either
    # may absorb the other.
    german, english = "Freitags arbeite ich von zu Hause aus.", "I work from home on Fridays."
    assert merge_objections(german, english) == merge_objections(english, german) == ()
    # A name in German is still a name when its spelling says so.
    assert [o.code for o in merge_objections(english, "Ich arbeite mit SAP von zu Hause.")] == [
        "entity"
    ]


words = st.sampled_from(["tea", "coffee", "Lyon", "Paris", "I", "live", "in", "like", "my", "3"])


@given(st.lists(words, min_size=1, max_size=8), st.lists(words, min_size=1, max_size=8))
def test_evidence_is_a_pure_function_of_the_two_texts(a: list[str], b: list[str]) -> None:
    older, newer = " ".join(a), " ".join(b)
    assert replacement_evidence(older, newer) == replacement_evidence(older, newer)
    # A statement is no evidence against itself.
    assert replacement_evidence(older, older) is None


def test_yesterday_said_on_two_days_is_two_times() -> None:
    from datetime import date

    from distill.core.statements import time_objection

    went = "I went hiking yesterday."
    assert time_objection(went, date(2024, 5, 1), went, date(2024, 5, 8)) is not None
    assert time_objection(went, date(2024, 5, 1), went, date(2024, 5, 1)) is None
    later = "We moved last week."
    assert time_objection("We moved.", date(2024, 5, 1), later, date(2024, 6, 1)) is not None
    # A habit is not placed in time: "in the morning" said on two days is one habit.
    run = "I run in the morning."
    assert time_objection(run, date(2024, 5, 1), run, date(2024, 6, 1)) is None
