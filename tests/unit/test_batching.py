"""How the LLM extractor cuts a job into calls and reads a batched answer back, without a model.

`distill.core.extraction` is pure: which events share one call (`plan_batches`), what the model
is shown (`render_prompt`), and which event each candidate of a batched answer belongs to
(`attribute`). DESIGN invariant 2 ("the model proposes, code applies"): a candidate stays on
the message it names, where the write gate checks it; one that names a message the batch did
not show is rejected, never given to a message that happens to hold its span.
"""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.extraction import (
    MESSAGE_OVERHEAD_TOKENS,
    attribute,
    estimate_tokens,
    plan_batches,
    render_prompt,
    validate_candidates,
)
from distill.core.models import Claim, Event
from tests.factories import at, make_event, make_fact, make_memory

TEMPLATE = "S={subject}\nK:\n{known_facts}\nM:\n{messages}\nEND"


def cost(event: Event) -> int:
    """What one message weighs against a batch's token budget."""
    return estimate_tokens(event.text) + MESSAGE_OVERHEAD_TOKENS


def events_of(*texts: str) -> list[Event]:
    return [
        make_event(text, id=f"e{n}", occurred_at=at(n), source=f"src{n}")
        for n, text in enumerate(texts, start=1)
    ]


def candidate(span: str, message: Any = None, **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "predicate": "note",
        "value": {"said": span},
        "action": "create",
        "evidence_span": span,
        **extra,
    }
    if message is not None:
        item["message"] = message
    return item


def owners(found: dict[str, list[Any]]) -> dict[str, list[str]]:
    """Which event each candidate ended on, by its evidence span."""
    return {
        event_id: [i["evidence_span"] if isinstance(i, dict) else repr(i) for i in items]
        for event_id, items in found.items()
    }


# -- plan_batches --------------------------------------------------------------------------------


def test_plan_batches_keeps_order_and_caps_the_number_of_events_per_call() -> None:
    """A job's events reach the model oldest first, at most `max_events` per call: the model
    must see a change after the state it changes."""
    events = events_of("a one", "b two", "c three", "d four", "e five")

    batches = plan_batches(events, max_tokens=10_000, max_events=2)

    assert [[e.id for e in b] for b in batches] == [["e1", "e2"], ["e3", "e4"], ["e5"]]


def test_plan_batches_caps_the_tokens_per_call() -> None:
    """A batch never goes over the token budget: with room for two messages, three messages
    of the same size take two calls, not one."""
    events = events_of("x" * 40, "y" * 40, "z" * 40)
    budget = 2 * cost(events[0])

    batches = plan_batches(events, max_tokens=budget, max_events=16)

    assert [[e.id for e in b] for b in batches] == [["e1", "e2"], ["e3"]]
    assert all(sum(map(cost, b)) <= budget for b in batches)


def test_plan_batches_gives_an_oversized_event_its_own_call_and_never_cuts_it() -> None:
    """A message longer than the whole budget is still sent, whole and alone: cutting it
    would lose evidence, and merging it would blow the budget for its neighbours."""
    big = "word " * 200
    events = events_of("small one", big, "small two")
    assert cost(events[1]) > 50

    batches = plan_batches(events, max_tokens=50, max_events=16)

    assert [[e.id for e in b] for b in batches] == [["e1"], ["e2"], ["e3"]]
    assert batches[1][0].text == big


def test_plan_batches_of_nothing_is_no_call() -> None:
    """A job with no events for the model makes no call."""
    assert plan_batches([], max_tokens=2000, max_events=16) == []


@st.composite
def batch_inputs(draw: st.DrawFn) -> tuple[list[Event], int, int]:
    sizes = draw(st.lists(st.integers(min_value=0, max_value=400), max_size=40))
    events = [
        make_event("w" * size, id=f"e{n:03d}", occurred_at=at(n)) for n, size in enumerate(sizes)
    ]
    max_tokens = draw(st.integers(min_value=1, max_value=600))
    max_events = draw(st.integers(min_value=1, max_value=20))
    return events, max_tokens, max_events


@settings(max_examples=200, deadline=None, database=None)
@given(batch_inputs())
def test_plan_batches_partitions_in_order_within_both_limits(
    case: tuple[list[Event], int, int],
) -> None:
    """Property: whatever the events and limits, the batches are the events in order, each
    exactly once, no batch is empty, and every batch of more than one event is within both
    the event cap and the token budget (only a lone oversized event may exceed it)."""
    events, max_tokens, max_events = case

    batches = plan_batches(events, max_tokens=max_tokens, max_events=max_events)

    assert [e.id for b in batches for e in b] == [e.id for e in events]
    assert all(batches), "an empty batch would be a wasted call"
    for batch in batches:
        assert len(batch) <= max_events
        if len(batch) > 1:
            assert sum(map(cost, batch)) <= max_tokens
    # A call is only closed when the next event would not fit: no needless extra calls.
    for batch, following in itertools.pairwise(batches):
        fuller = [*batch, following[0]]
        assert len(fuller) > max_events or sum(map(cost, fuller)) > max_tokens


# -- attribute -----------------------------------------------------------------------------------


def test_a_message_number_is_trusted_when_its_message_holds_the_span() -> None:
    """The model's own attribution wins when the evidence is in that message, even if
    another message says the same words."""
    events = events_of("I have 3 bikes", "I have 3 bikes, really")

    found = attribute([candidate("I have 3 bikes", message=2)], events)

    assert owners(found) == {"e1": [], "e2": ["I have 3 bikes"]}


def test_a_wrong_message_number_is_never_moved_to_the_message_holding_the_span() -> None:
    """A candidate numbered 2 whose evidence is only in message 1 stays on message 2, where
    the gate rejects it: a span found elsewhere is no evidence for what message 2 says."""
    events = events_of("I live in Lyon", "I work at Acme")

    found = attribute([candidate("live in Lyon", message=2)], events)

    assert owners(found) == {"e1": [], "e2": ["live in Lyon"]}
    checked = validate_candidates(found["e2"], events[1], "llm", require_evidence=True)
    assert checked.claims == []
    assert [r.reason for r in checked.rejections] == ["evidence_not_in_event"]


@pytest.mark.parametrize("number", [2, "2", 2.0, " 2 "], ids=repr)
def test_a_number_written_as_text_or_float_names_its_message(number: Any) -> None:
    events = events_of("I like tea", "I work at Acme", "Acme is where I work")

    found = attribute([candidate("acme", message=number)], events)

    assert owners(found) == {"e1": [], "e2": ["acme"], "e3": []}


@pytest.mark.parametrize("number", [0, 4, 99, -1, True, 1.5, "two", [1]], ids=repr)
def test_a_message_the_batch_did_not_show_is_rejected_as_unknown_never_reattributed(
    number: Any,
) -> None:
    """Out of range, a boolean, a fraction, a word: the candidate names no message of the
    batch. It is not given to the message that holds its span (the issue's case: message 99
    of one, span "bikes"); it is rejected as `unknown_message`, with the number in the
    reason, under the batch's first event."""
    events = events_of("I like tea", "I work at Acme", "Acme is where I work")

    found = attribute([candidate("acme", message=number)], events)

    assert owners(found) == {"e1": ["acme"], "e2": [], "e3": []}
    checked = validate_candidates(found["e1"], events[0], "llm", require_evidence=True)
    assert checked.claims == []
    [rejection] = checked.rejections
    assert rejection.reason == "unknown_message"
    assert repr(number) in rejection.detail and "messages 1-3" in rejection.detail
    assert rejection.candidate is not None and "unknown_message" not in rejection.candidate


def test_without_a_number_the_only_message_holding_the_span_takes_it() -> None:
    """No number is no claim about the position: the one message holding the evidence takes
    the candidate (nothing is moved away from a message it named)."""
    events = events_of("I like tea", "I work at Acme", "My sister is a nurse")

    found = attribute([candidate("acme", message=None)], events)

    assert owners(found) == {"e1": [], "e2": ["acme"], "e3": []}


@pytest.mark.parametrize(
    ("texts", "where"),
    [(("I work at Acme", "Acme is where I work"), "2 of them"), (("tea", "coffee"), "none")],
    ids=["two-holders", "no-holder"],
)
def test_without_a_number_an_ambiguous_candidate_is_rejected_as_unknown(
    texts: tuple[str, ...], where: str
) -> None:
    events = events_of(*texts)

    found = attribute([candidate("acme", message=None)], events)

    checked = validate_candidates(found["e1"], events[0], "llm", require_evidence=True)
    assert checked.claims == []
    [rejection] = checked.rejections
    assert rejection.reason == "unknown_message"
    assert "names no message" in rejection.detail and where in rejection.detail


def test_a_batch_of_one_message_takes_a_candidate_without_a_number() -> None:
    """With one message there is nothing to choose: an unnumbered candidate is that
    message's, and the gate checks its evidence there."""
    events = events_of("I have 3 bikes")

    found = attribute([candidate("I have 9 cars"), candidate("3 bikes")], events)

    assert owners(found) == {"e1": ["I have 9 cars", "3 bikes"]}


def test_a_models_own_unknown_message_key_is_dropped() -> None:
    """The key that marks an unattributable candidate cannot be forged by the model."""
    events = events_of("I like tea")
    item = candidate("like tea", message=1, unknown_message="forged")

    [kept] = attribute([item], events)["e1"]

    assert "unknown_message" not in kept
    checked = validate_candidates([kept], events[0], "llm", require_evidence=True)
    assert checked.rejections == [] and len(checked.claims) == 1


def test_a_span_in_no_message_stays_on_the_message_it_names_where_the_gate_rejects_it() -> None:
    """Evidence that no message contains is not dropped silently: the candidate stays on the
    message it named and the write gate rejects it there, so it is counted and audited as
    `evidence_not_in_event`."""
    events = events_of("I have 3 bikes", "I work at Acme")

    found = attribute([candidate("I have 9 cars", message=2)], events)

    assert owners(found) == {"e1": [], "e2": ["I have 9 cars"]}
    checked = validate_candidates(found["e2"], events[1], "llm", require_evidence=True)
    assert checked.claims == []
    assert [r.reason for r in checked.rejections] == ["evidence_not_in_event"]


def test_items_that_are_not_objects_are_kept_so_that_validation_rejects_them() -> None:
    """A model answering `["oops", 42]` inside its list of facts: those items are not lost
    (which would hide the model's failure) but rejected as invalid candidates."""
    events = events_of("I like tea", "I work at Acme")

    found = attribute(["oops", 42, candidate("Acme", message=2)], events)

    assert found["e1"] == ["oops", 42]
    checked = validate_candidates(found["e1"], events[0], "llm", require_evidence=True)
    assert [r.reason for r in checked.rejections] == ["invalid_candidate"] * 2
    assert checked.claims == []


def test_every_event_of_the_batch_gets_an_entry_even_when_nothing_was_found() -> None:
    """An event with no durable fact is answered (an empty list), so it is never asked about
    again; events outside the batch get nothing."""
    events = events_of("hello", "I like tea", "bye")

    assert attribute([], events) == {"e1": [], "e2": [], "e3": []}
    found = attribute([candidate("like tea", message=2)], events)
    assert set(found) == {"e1", "e2", "e3"}
    assert found["e1"] == [] and found["e3"] == []


def test_the_message_number_is_dropped_from_the_candidate() -> None:
    """The batch position means nothing once the candidate sits on its event: it is not
    stored with it, and the rest of the candidate is kept as the model said it."""
    events = events_of("I like tea", "I work at Acme")
    item = candidate("work at Acme", message=2, confidence=0.7, qualifiers={"since": "2020"})

    found = attribute([item], events)

    [kept] = found["e2"]
    assert "message" not in kept
    assert kept == {k: v for k, v in item.items() if k != "message"}
    assert item["message"] == 2, "the model's answer itself is not modified"


# -- dates tidied on the way through attribute -----------------------------------------------------


def one_tidied(**dates: Any) -> dict[str, Any]:
    events = events_of("I moved to Lyon")
    [item] = attribute([candidate("moved to Lyon", message=1, **dates)], events)["e1"]
    return dict(item)


def test_a_null_date_is_no_date() -> None:
    """`"valid_from": null` (a model filling every field of the schema) means the event's own
    time applies, not an invalid candidate."""
    item = one_tidied(valid_from=None, valid_to=None)

    assert "valid_from" not in item and "valid_to" not in item
    claim = Claim.model_validate(item)
    assert claim.valid_from is None and claim.valid_to is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-05-07", datetime(2024, 5, 7, tzinfo=UTC)),
        ("2024-05-07T09:30:00", datetime(2024, 5, 7, 9, 30, tzinfo=UTC)),
        ("2024-05-07T09:30:00Z", datetime(2024, 5, 7, 9, 30, tzinfo=UTC)),
    ],
)
def test_a_date_without_a_time_zone_is_read_as_utc(raw: str, expected: datetime) -> None:
    """Models write "2024-05-07" for "last Tuesday": taken as UTC, it validates, where the
    claim model alone would reject a naive time."""
    item = one_tidied(valid_from=raw)

    claim = Claim.model_validate(item)
    assert claim.valid_from == expected
    assert claim.valid_from is not None and claim.valid_from.utcoffset() is not None


def test_a_date_with_its_own_offset_keeps_it() -> None:
    """A date that says its zone is not rewritten to UTC."""
    item = one_tidied(valid_from="2024-05-07T09:30:00+02:00")

    claim = Claim.model_validate(item)
    assert claim.valid_from == datetime(2024, 5, 7, 7, 30, tzinfo=UTC)


def test_a_garbage_date_is_left_for_validation_to_reject_with_a_reason() -> None:
    """`"valid_from": "last spring"` is not guessed at: the candidate is rejected as invalid,
    with the field named in the reason."""
    events = events_of("I moved to Lyon")
    found = attribute([candidate("moved to Lyon", message=1, valid_from="last spring")], events)

    assert found["e1"][0]["valid_from"] == "last spring"
    checked = validate_candidates(found["e1"], events[0], "llm", require_evidence=True)
    assert checked.claims == []
    [rejection] = checked.rejections
    assert rejection.reason == "invalid_candidate"
    assert "valid_from" in rejection.detail


# -- render_prompt -------------------------------------------------------------------------------


def test_the_prompt_numbers_messages_from_one_with_time_and_source() -> None:
    """The model sees each message as `[n] <time> from <source>` then its text, numbered from
    1 in batch order: the numbers it answers with are the ones `attribute` reads."""
    events = events_of("I have 3 bikes", "I sold one bike")

    prompt = render_prompt(TEMPLATE, "alice", events, [])

    assert "S=alice" in prompt
    first = f"[1] {events[0].occurred_at.isoformat()} from src1\nI have 3 bikes"
    second = f"[2] {events[1].occurred_at.isoformat()} from src2\nI sold one bike"
    assert first in prompt and second in prompt
    assert prompt.index(first) < prompt.index(second)
    assert "[0]" not in prompt and "[3]" not in prompt


def test_the_prompt_lists_known_facts_with_their_qualifiers() -> None:
    """Known facts are shown by predicate, qualifiers and value, so the model can reuse a
    predicate or supersede a value instead of inventing a synonym."""
    known = [
        make_fact("bike_count", {"count": 3}),
        make_fact("wake_up_time", {"time": "08:00"}, qualifiers={"day": "weekend"}),
    ]

    prompt = render_prompt(TEMPLATE, "alice", events_of("I sold a bike"), known)

    section = prompt.split("K:\n", 1)[1].split("\nM:", 1)[0]
    lines = section.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("- bike_count") and '"count"' in lines[0] and "3" in lines[0]
    assert lines[1].startswith("- wake_up_time") and "day=weekend" in lines[1]
    assert "08:00" in lines[1]
    value = json.loads(lines[0].split("=", 1)[1])
    assert value == {"count": 3}


def test_the_prompt_says_none_yet_when_nothing_is_known() -> None:
    """A subject with no facts is shown "(none yet)", never an empty section the model might
    fill with guesses."""
    prompt = render_prompt(TEMPLATE, "alice", events_of("hi"), [])

    assert "K:\n(none yet)\nM:" in prompt


def test_the_shipped_prompt_carries_subject_known_facts_and_messages() -> None:
    """The prompt Distill ships fills every slot: a placeholder left unfilled would reach
    the model as literal braces."""
    template = resources.files("distill").joinpath("prompts/extract_v2.txt").read_text("utf-8")
    events = events_of("I have 3 bikes")

    prompt = render_prompt(template, "alice", events, [make_fact("home_city", {"city": "Lyon"})])

    assert "alice" in prompt
    assert "- home_city" in prompt and "Lyon" in prompt
    assert "[1] " in prompt and "I have 3 bikes" in prompt
    assert "{subject}" not in prompt and "{messages}" not in prompt
    assert "{known_facts}" not in prompt


def test_free_text_memories_are_not_listed_as_known_facts() -> None:
    """Known facts are attributes the model may reuse or supersede; a free-text memory has no
    predicate to reuse and is not shown as one."""
    known = [make_memory("likes green tea")]

    prompt = render_prompt(TEMPLATE, "alice", events_of("hi"), known)

    assert "green tea" not in prompt


# -- estimate_tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100)]
)
def test_token_estimate_is_about_four_characters_per_token_rounded_up(
    text: str, tokens: int
) -> None:
    """The budget check before a call: never zero for a non-empty text, so a flood of tiny
    messages still fills a batch."""
    assert estimate_tokens(text) == tokens


@given(st.text(max_size=300), st.text(max_size=300))
@settings(max_examples=100, database=None)
def test_token_estimate_grows_with_the_text(a: str, b: str) -> None:
    """A longer text never costs less: the estimate is monotone and additive within one token."""
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))
    assert estimate_tokens(a + b) <= estimate_tokens(a) + estimate_tokens(b)
