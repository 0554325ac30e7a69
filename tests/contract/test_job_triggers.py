"""The worker's trigger for extraction and adjudication, on every backend: a subject's
pending job is taken once it holds N events OR once it waited long enough; `consolidate`
without a trigger (force: `distill consolidate`, `POST /v1/consolidate`) takes them all."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from distill import Memory
from distill.core.schedule import Trigger

if TYPE_CHECKING:
    from tests.conftest import FakeClock

TRIGGER = Trigger(min_events=3, max_wait=timedelta(minutes=15))


def subjects_with_facts(memory: Memory) -> list[str]:
    return sorted({f.subject for f in memory.facts()})


def test_a_subject_is_extracted_at_n_events_or_after_the_timer(
    memory: Memory, clock: FakeClock
) -> None:
    for n in range(3):
        memory.add_event(subject="busy", text=f"Busy fact number {n}.")
    memory.add_event(subject="quiet", text="Quiet lives in Lyon.")

    first = memory.consolidate(trigger=TRIGGER)
    assert first.jobs_done == 1 and subjects_with_facts(memory) == ["busy"]

    clock.advance(minutes=14, seconds=59)
    assert memory.consolidate(trigger=TRIGGER).jobs_done == 0
    clock.advance(seconds=1)  # the quiet subject's event waited 15 min
    assert memory.consolidate(trigger=TRIGGER).jobs_done == 1
    assert subjects_with_facts(memory) == ["busy", "quiet"]


def test_force_takes_every_pending_job_whatever_it_holds(memory: Memory) -> None:
    memory.add_event(subject="a", text="A lives in Lyon.")
    memory.add_event(subject="b", text="B lives in Paris.")
    assert memory.consolidate(trigger=TRIGGER).jobs_done == 0
    assert memory.consolidate().jobs_done == 2  # no trigger: force
    assert subjects_with_facts(memory) == ["a", "b"]


def test_a_trigger_of_one_event_is_every_pending_job_at_once(memory: Memory) -> None:
    memory.add_event(subject="a", text="A lives in Lyon.")
    assert memory.consolidate(trigger=Trigger(min_events=1)).jobs_done == 1
