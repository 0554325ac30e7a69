"""Claims seen from a run: a run that lost its job to another writes nothing of it, the
heartbeat thread keeps a slow run's claims alive, and a run says what it found of others.

Two `Memory` objects on one file stand for two runs; the scripted model lets a test act
between a job's extraction and its decision.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from distill import engine
from distill.adapters.llm.fake import FakeLLM
from distill.core.models import JobStatus
from distill.engine import LEASE, MAX_ATTEMPTS
from tests.factories import at

if TYPE_CHECKING:
    from tests.conftest import FakeClock, MemoryFactory

ANSWER = '{"facts": [{"text": "likes green tea", "evidence_span": "I like green tea"}]}'


def test_a_run_whose_job_is_taken_back_meanwhile_writes_nothing_of_it(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """While the first run waits for the model, its claim looks stale to a second run, which
    takes the job and decides it. The first run's decision is then rolled back whole: the
    job is decided once, by the run that holds it."""
    other: list[object] = []

    def slow(prompt: str) -> str:
        clock.advance(seconds=LEASE.total_seconds() * 2)  # longer than a lease, no heartbeat
        second = other[0]
        assert second.consolidate().jobs_done == 1  # type: ignore[attr-defined]
        return ANSWER

    first = make_memory("shared.db", llm=FakeLLM(default=slow), extractor="llm")
    second = make_memory("shared.db", llm=FakeLLM(default=ANSWER), extractor="llm")
    other.append(second)
    first.add_event(subject="alice", text="I like green tea", occurred_at=at(0))

    report = first.consolidate()

    assert (report.jobs_done, report.jobs_lost, report.jobs_failed) == (0, 1, 0)
    [job] = first.jobs()
    assert job.status is JobStatus.DONE
    [fact] = first.facts(subject="alice")
    assert fact.text == "likes green tea" and fact.reinforcement_count == 0
    assert len(first.history(fact.id).observations) == 1  # observed once, by the second run


def test_the_heartbeat_thread_keeps_a_slow_runs_claims_fresh(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model call longer than the lease: the run's claims are renewed meanwhile by its
    heartbeat thread, not only after the call returns."""
    monkeypatch.setattr(engine, "HEARTBEAT_EVERY_S", 0.05)

    def slow(prompt: str) -> str:
        time.sleep(0.4)
        return ANSWER

    mem = make_memory(llm=FakeLLM(default=slow), extractor="llm")
    mem.add_event(subject="alice", text="I like green tea", occurred_at=at(0))
    calls: list[object] = []
    real = mem.store.heartbeat

    def counting(now: object) -> None:
        calls.append(now)
        real(now)  # type: ignore[arg-type]

    monkeypatch.setattr(mem.store, "heartbeat", counting)
    assert mem.consolidate().jobs_done == 1
    assert len(calls) >= 3  # the thread beat several times during the 0.4 s call


def test_a_run_reports_jobs_taken_back_from_a_stale_claim(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    mem = make_memory()
    mem.add_event(subject="alice", text="I like green tea", occurred_at=at(0))
    mem.store.claim_jobs(clock.now(), 10, MAX_ATTEMPTS)  # a run that stopped beating
    clock.advance(seconds=LEASE.total_seconds() + 1)

    report = mem.consolidate()

    assert (report.jobs_reclaimed, report.jobs_done) == (1, 1)
    assert report.claim_notes() == [
        "reclaimed 1 job(s) from a run that is no longer running (1 job(s) whose heartbeat stopped)"
    ]


def test_a_run_with_nothing_to_do_is_idle(make_memory: MemoryFactory) -> None:
    report = make_memory().consolidate()
    assert report.idle and report.claim_notes() == []
