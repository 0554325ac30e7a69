"""The second time axis: `facts(known_at=T)` answers as Distill would have answered at T.

World time (`as_of`: when something was true) and system time (`known_at`: when Distill knew
it) are independent: a fact learnt late was true before it was known; a fact later
superseded, retracted or kept from quarantine read differently before that happened.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from distill import Memory
from distill.core.models import FactStatus
from distill.errors import InvalidInput
from tests.conftest import FakeClock

WORLD = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)  # when things happened


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2025, 1, 1, tzinfo=UTC))  # when Distill learnt them


def say(mem: Memory, day: int, predicate: str, value: dict[str, Any], **event: Any) -> None:
    action = event.pop("action", "create")
    mem.add_event(
        subject="u1",
        occurred_at=WORLD + timedelta(days=day),
        claims=[{"predicate": predicate, "value": value, "action": action}],
        **event,
    )
    mem.consolidate()


def values(found: list[Any], predicate: str = "bike_count") -> list[Any]:
    return [f.value for f in found if f.predicate == predicate]


def test_what_was_believed_at_each_moment(memory: Memory, clock: FakeClock) -> None:
    before_anything = clock.now()
    clock.advance(days=1)
    say(memory, 0, "bike_count", {"count": 3})
    knew_three = clock.now()
    clock.advance(days=1)
    say(memory, 30, "bike_count", {"count": 4}, action="supersede")
    knew_four = clock.now()
    clock.advance(days=1)

    assert memory.facts(subject="u1", known_at=before_anything) == []
    assert values(memory.facts(subject="u1", known_at=knew_three)) == [{"count": 3}]
    assert values(memory.facts(subject="u1", known_at=knew_four)) == [{"count": 4}]
    assert memory.facts(subject="u1", known_at=knew_four) == memory.facts(subject="u1")
    # At the time, the first count was believed open-ended: its end came with the second.
    [then] = memory.facts(subject="u1", known_at=knew_three)
    assert then.status is FactStatus.ACTIVE and then.valid_to is None and then.superseded_by is None
    [now] = [f for f in memory.facts(subject="u1", include_retired=True) if f.id == then.id]
    assert now.status is FactStatus.SUPERSEDED and now.valid_to == WORLD + timedelta(days=30)


def test_both_axes_together(memory: Memory, clock: FakeClock) -> None:
    say(memory, 0, "bike_count", {"count": 3})
    knew_three = clock.now()
    clock.advance(days=1)
    say(memory, 30, "bike_count", {"count": 4}, action="supersede")
    clock.advance(days=1)
    late_world = WORLD + timedelta(days=60)
    # Believed at knew_three about day 60: still 3 (the change was not known yet).
    assert values(memory.facts(known_at=knew_three, as_of=late_world)) == [{"count": 3}]
    # Believed now about day 60: 4; about day 10: 3 (a historical version).
    assert values(memory.facts(as_of=late_world)) == [{"count": 4}]
    assert values(memory.facts(known_at=clock.now(), as_of=WORLD + timedelta(days=10))) == [
        {"count": 3}
    ]


def test_a_fact_learnt_late_was_true_before_it_was_known(memory: Memory, clock: FakeClock) -> None:
    clock.advance(days=400)  # learnt more than a year after it happened
    say(memory, 0, "home_city", {"city": "Lyon"})
    learnt = clock.now()
    day_10 = WORLD + timedelta(days=10)
    assert values(memory.facts(as_of=day_10), "home_city") == [{"city": "Lyon"}]
    assert memory.facts(as_of=day_10, known_at=learnt - timedelta(seconds=1)) == []


def test_a_retraction_and_a_kept_candidate_read_as_they_were(
    memory: Memory, clock: FakeClock
) -> None:
    say(memory, 0, "home_city", {"city": "Paris"})
    [wrong] = memory.facts(subject="u1")
    served = clock.now()
    clock.advance(hours=1)
    memory.retract(wrong.id, reason="never lived there")
    clock.advance(hours=1)
    assert values(memory.facts(known_at=served), "home_city") == [{"city": "Paris"}]
    assert memory.facts(subject="u1") == []

    say(memory, 1, "employer", {"name": "Acme"})
    say(memory, 2, "employer", {"name": "Initech"}, source="web", trust="third_party")
    held = clock.now()
    clock.advance(hours=1)
    [held_set] = memory.conflicts(subject="u1")
    [kept] = [m for m in held_set.member_ids if memory.fact(m).status is FactStatus.CANDIDATE]
    memory.resolve_conflict(held_set.id, keep=kept)
    clock.advance(hours=1)
    # Held in quarantine then: the trusted value was served; kept since: the new one is.
    assert values(memory.facts(known_at=held), "employer") == [{"name": "Acme"}]
    assert values(memory.facts(), "employer") == [{"name": "Initech"}]
    [candidate] = [
        f
        for f in memory.facts(known_at=held, include_retired=True)
        if f.value == {"name": "Initech"}
    ]
    assert candidate.status is FactStatus.CANDIDATE


def test_known_at_is_checked_like_as_of(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="known_at"):
        memory.facts(known_at="last week")
    with pytest.raises(InvalidInput, match="known_at"):
        memory.facts(known_at=7)  # type: ignore[arg-type]
