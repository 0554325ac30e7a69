"""Evidence never changes, on every backend: an event is stored exactly as given or not at
all, and a retried add is a duplicate.

Each test goes through `Memory` on SQLite and on PostgreSQL: what one backend stores and
the other refuses (a NUL character), or what one encoder turns into null (NaN), is refused
before either sees it, with the field named, and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from distill import Memory
from distill.core.event_in import EVENT_MAX_BYTES
from distill.errors import InvalidInput
from tests.conftest import FakeClock

WHEN = "2024-05-01T10:00:00+00:00"

# Values a JSON encoder or a database could quietly change: every one must read back equal.
AWKWARD_VALUES: dict[str, Any] = {
    "unicode": "José, 東京, emoji 🚲, right-to-left שלום",
    "escapes": 'quote " backslash \\ tab \t newline \n bell \x07',
    "small_float": 0.1,
    "tiny_float": 5e-324,
    "big_float": 9007199254740991.0,  # 2^53 - 1: the largest float accepted
    "float_with_exponent": 1.25e-7,
    "float_with_fraction": 12345.678,
    "whole_float": 2.0,
    "negative": -3,
    "big_int": 2**63 + 1,
    "bools": [True, False],
    "null": None,
    "empty": {"list": [], "object": {}, "string": ""},
    "nested": {"a": [{"b": [1, 2, {"c": "d"}]}]},
    "keys with dots.and spaces": 1,
}


@pytest.fixture
def memory(open_memory: Callable[..., Memory], database: str) -> Memory:
    return open_memory(database)


def stored_count(mem: Memory) -> int:
    return mem.status().counts.events


@pytest.mark.parametrize("name", sorted(AWKWARD_VALUES))
def test_what_is_read_back_equals_what_was_given(memory: Memory, name: str) -> None:
    value = {name: AWKWARD_VALUES[name]}
    given = {
        "subject": "u1",
        "text": "a value",
        "occurred_at": WHEN,
        "claims": [{"predicate": "p", "value": value, "qualifiers": {"q": 1.5, "r": "x"}}],
    }
    event = memory.add_event(**given)
    [stored] = memory.events([event.id])
    assert stored == event
    [claim] = stored.claims
    assert claim.value == value
    assert [type(v) for v in claim.value.values()] == [type(v) for v in value.values()]
    assert claim.qualifiers == {"q": 1.5, "r": "x"}
    assert stored.occurred_at.isoformat() == WHEN


@pytest.mark.parametrize(
    ("claim", "field"),
    [
        ({"predicate": "p", "value": {"v": float("nan")}}, "claims.0.value.v"),
        ({"predicate": "p", "value": {"v": [1, float("inf")]}}, "claims.0.value.v.1"),
        ({"predicate": "p", "value": {"v": 1.7976931348623157e308}}, "claims.0.value.v"),
        (
            {"predicate": "p", "value": {"v": 1}, "qualifiers": {"q": -float("inf")}},
            "claims.0.qualifiers.q",
        ),
        ({"predicate": "p", "value": {"v": "a\x00b"}}, "claims.0.value.v"),
        ({"predicate": "p", "value": {"k\x00": 1}}, "claims.0.value.k\x00"),
        ({"text": "nul \x00 in a memory"}, "claims.0.text"),
    ],
)
def test_values_json_or_a_database_would_change_are_refused_and_nothing_is_stored(
    memory: Memory, claim: dict[str, Any], field: str
) -> None:
    memory.add_event(subject="u1", text="kept", occurred_at=WHEN)
    with pytest.raises(InvalidInput) as caught:
        memory.add_events(
            [
                {"subject": "u1", "text": "fine", "occurred_at": WHEN},
                {"subject": "u1", "text": "x", "occurred_at": WHEN, "claims": [claim]},
            ]
        )
    assert str(caught.value).startswith(f"event 1: {field}: ")
    assert stored_count(memory) == 1  # the batch is refused whole


@pytest.mark.parametrize("field", ["subject", "text", "source", "project", "idempotency_key"])
def test_a_nul_character_anywhere_in_an_event_is_refused_on_every_backend(
    memory: Memory, field: str
) -> None:
    event = {"subject": "u1", "text": "hello", field: "with \x00 inside"}
    with pytest.raises(InvalidInput, match=f"{field}: contains a NUL character"):
        memory.add_event(**event)
    assert stored_count(memory) == 0


def test_a_retry_without_a_time_is_a_duplicate_and_no_reinforcement(
    open_memory: Callable[..., Memory], database: str
) -> None:
    mem = open_memory(database)
    clock = mem.clock
    assert isinstance(clock, FakeClock)
    said = {"subject": "u1", "text": "I have 3 bikes"}
    claims = [{"predicate": "bike_count", "value": {"count": 3}}]
    first = mem.append([{**said, "claims": claims}])
    mem.consolidate()
    clock.advance(minutes=5)  # the retry comes later: a defaulted time would differ
    again = mem.append([{**said, "claims": claims}])
    assert (first.added, again.added, again.duplicates) == (1, 0, 1)
    assert again.events == first.events  # the stored event, with its first time
    assert mem.consolidate().counters()["jobs_done"] == 0
    [fact] = mem.facts(subject="u1")
    assert fact.reinforcement_count == 0
    assert stored_count(mem) == 1


def test_a_stated_time_trust_or_source_makes_another_event(memory: Memory) -> None:
    base = {"subject": "u1", "text": "I have 3 bikes"}
    variants = [
        base,
        {**base, "occurred_at": WHEN},
        {**base, "occurred_at": "2024-05-01T11:00:00+01:00"},  # the same instant: one event
        {**base, "occurred_at": "2024-05-02T10:00:00+00:00"},
        {**base, "trust": "untrusted"},
        {**base, "source": "web"},
    ]
    added = memory.append(variants)
    assert added.already_stored == (False, False, True, False, False, False)
    assert stored_count(memory) == 5
    trusted, untrusted = added.events[0], added.events[4]
    assert (trusted.trust.value, untrusted.trust.value) == ("trusted", "untrusted")


def test_a_given_idempotency_key_alone_decides(memory: Memory) -> None:
    first = memory.add_event(subject="u1", text="one", idempotency_key="k1")
    again = memory.append([{"subject": "u1", "text": "one, said again", "idempotency_key": "k1"}])
    assert again.already_stored == (True,)
    assert again.events[0].text == "one" == first.text


def test_one_subject_however_its_name_is_spelt_in_unicode(memory: Memory) -> None:
    decomposed, composed = "Jose\u0301", "José"
    memory.add_event(
        subject=decomposed, occurred_at=WHEN, claims=[{"predicate": "city", "value": {"n": "A"}}]
    )
    memory.add_event(
        subject=f"  {composed} ",
        occurred_at="2024-05-02T10:00:00+00:00",
        claims=[{"predicate": "pets", "value": {"n": 2}}],
    )
    memory.consolidate()
    facts = memory.facts(subject=composed)
    assert sorted(f.predicate or "" for f in facts) == ["city", "pets"]
    assert {f.subject for f in facts} == {composed}
    with pytest.raises(InvalidInput, match="subject: is blank"):
        memory.add_event(subject=" \t\u3000", text="nobody")


def test_a_predicate_keeps_its_letters_and_does_not_collide(memory: Memory) -> None:
    memory.add_event(
        subject="u1",
        occurred_at=WHEN,
        claims=[
            {"predicate": "Prénom", "value": {"name": "Zoé"}},
            {"predicate": "pr_nom", "value": {"name": "ASCII"}},
        ],
    )
    memory.consolidate()
    found = {f.predicate: f.value for f in memory.facts(subject="u1")}
    assert found == {"prénom": {"name": "Zoé"}, "pr_nom": {"name": "ASCII"}}


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"occurred_at": "0001-01-01T00:00:00+01:00"}, "occurred_at: 0001-01-01T00:00:00+01:00"),
        ({"occurred_at": "9999-12-31T23:59:59-01:00"}, "occurred_at: 9999-12-31T23:59:59-01:00"),
        ({"occurred_at": "2204-01-01T00:00:00Z"}, "occurred_at: 2204-01-01T00:00:00+00:00 is"),
    ],
)
def test_times_that_cannot_be_stored_or_have_not_happened_are_refused(
    memory: Memory, fields: dict[str, Any], problem: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(problem)):
        memory.add_event(subject="u1", text="when?", **fields)
    assert stored_count(memory) == 0


def test_claims_may_name_the_future_and_the_margin_is_configurable(
    open_memory: Callable[..., Memory], database: str
) -> None:
    mem = open_memory(database)
    now = mem.clock.now()
    mem.add_event(
        subject="u1",
        occurred_at=now,
        claims=[{"predicate": "lease", "value": {"ends": "2204"}, "valid_to": "2204-01-01T00:00Z"}],
    )
    tomorrow = now + timedelta(hours=23)
    mem.add_event(subject="u1", text="scheduled", occurred_at=tomorrow)
    with pytest.raises(InvalidInput, match="more than 1 day past the present"):
        mem.add_event(subject="u1", text="too far", occurred_at=now + timedelta(days=2))
    strict = Memory(database, embedder=mem.embedder, clock=mem.clock, future_margin=timedelta(0))
    try:
        with pytest.raises(InvalidInput, match="more than 0 s past the present"):
            strict.add_event(
                subject="u1", text="a second early", occurred_at=now + timedelta(seconds=1)
            )
    finally:
        strict.close()
    assert stored_count(mem) == 2


def test_an_event_over_the_size_limit_is_refused(memory: Memory) -> None:
    fits = "x" * (EVENT_MAX_BYTES - 1_000)
    memory.add_event(subject="u1", claims=[{"predicate": "notes", "value": {"v": fits}}])
    with pytest.raises(InvalidInput, match=f"over the limit of {EVENT_MAX_BYTES:,}"):
        memory.add_event(subject="u1", claims=[{"predicate": "notes", "value": {"v": fits * 2}}])
    assert stored_count(memory) == 1
