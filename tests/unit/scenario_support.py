"""Helpers the scenario tests share: a timeline, one-claim events, and small finders."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from distill import Memory
from distill.core.models import Event, Fact

MemoryFactory = Callable[..., Memory]
T = TypeVar("T")

SUBJECT = "u1"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def at(minutes: float = 0, *, days: float = 0) -> datetime:
    """World time of an event: minutes (or days) after T0."""
    return T0 + timedelta(minutes=minutes, days=days)


def say(
    mem: Memory,
    predicate: str,
    value: dict[str, Any],
    *,
    when: datetime,
    subject: str = SUBJECT,
    project: str = "default",
    trust: str = "trusted",
    **claim: Any,
) -> Event:
    """One event carrying one structured claim."""
    return mem.add_event(
        subject=subject,
        project=project,
        text=f"{predicate} is {value}",
        occurred_at=when,
        trust=trust,
        claims=[{"predicate": predicate, "value": value, **claim}],
    )


def every_fact(mem: Memory, subject: str = SUBJECT, project: str = "default") -> list[Fact]:
    return mem.facts(subject=subject, project=project, include_retired=True)


def only(items: Sequence[T]) -> T:
    assert len(items) == 1, items
    return items[0]


def by_value(facts: Sequence[Fact], **value: Any) -> Fact:
    return only([f for f in facts if f.value == value])
