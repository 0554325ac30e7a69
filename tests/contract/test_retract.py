"""`Memory.retract`: a person retires a wrong fact with a receipt, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from distill import Memory
from distill.core.models import FactStatus
from distill.errors import InvalidInput, InvalidOperation, NotFound, PinnedFact

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def state(mem: Memory, day: int, value: dict[str, Any], **extra: Any) -> None:
    mem.add_event(
        subject="u1",
        occurred_at=T0 + timedelta(days=day),
        claims=[{"predicate": "home_city", "value": value}],
        **extra,  # the event's source and trust (a claim names claim fields only)
    )
    mem.consolidate()


def test_a_retracted_fact_is_never_served_and_its_receipt_says_why(memory: Memory) -> None:
    state(memory, 0, {"city": "Paris"})
    [wrong] = memory.facts(subject="u1")

    retracted = memory.retract(wrong.id[:12], reason="the user never lived in Paris")

    assert retracted.status is FactStatus.RETRACTED
    assert retracted.valid_to == retracted.valid_from  # it was never true
    assert retracted.retired_at is not None
    assert memory.facts(subject="u1") == []
    assert memory.facts(subject="u1", as_of=T0 + timedelta(days=1)) == []
    [entry] = [e for e in memory.history(wrong.id).audit if e.action == "retract_fact"]
    assert entry.pass_name == "api"
    assert "the user never lived in Paris" in entry.reason
    # Nothing is deleted: the fact and its evidence are still there to read.
    assert memory.fact(wrong.id) == retracted
    assert memory.events(wrong.source_event_ids)


def test_the_identity_gets_a_new_fact_from_the_next_claim(memory: Memory) -> None:
    state(memory, 0, {"city": "Paris"})
    [wrong] = memory.facts(subject="u1")
    memory.retract(wrong.id, reason="wrong city")
    state(memory, 5, {"city": "Lyon"})
    [current] = memory.facts(subject="u1")
    assert current.value == {"city": "Lyon"}
    assert current.supersedes_id is None  # a retracted fact is nobody's predecessor
    assert memory.fact(wrong.id).status is FactStatus.RETRACTED


def test_retract_refuses_what_a_person_must_decide_otherwise(memory: Memory) -> None:
    state(memory, 0, {"city": "Paris"})
    [fact] = memory.facts(subject="u1")
    with pytest.raises(InvalidInput, match="reason"):
        memory.retract(fact.id, reason="  ")
    with pytest.raises(NotFound):
        memory.retract(fact.id, reason="wrong", project="other")

    memory.pin(fact.id)
    with pytest.raises(PinnedFact):
        memory.retract(fact.id, reason="wrong")
    memory.unpin(fact.id)

    # Two sources disagree: the open set is resolved, not one member retracted behind it.
    state(memory, 1, {"city": "Lyon"}, source="crm")
    [conflict] = memory.conflicts(subject="u1")
    with pytest.raises(InvalidOperation, match="open conflict set"):
        memory.retract(conflict.member_ids[0], reason="wrong")

    memory.resolve_conflict(conflict.id, keep=conflict.member_ids[1])
    retired = next(f for f in memory.facts(subject="u1", include_retired=True) if not f.live)
    with pytest.raises(InvalidOperation, match="already"):
        memory.retract(retired.id, reason="wrong")
    assert memory.fact(retired.id) == retired  # refused calls changed nothing
