"""Claims seen from a run: a run that lost its job to another writes nothing of it, the
heartbeat thread keeps a slow run's claims alive, and a run says what it found of others.

Two `Memory` objects on one file stand for two runs; the scripted model lets a test act
between a job's extraction and its decision.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from distill import heartbeat
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.llm.fake import FakeLLM
from distill.core.models import JobStatus
from distill.engine import MAX_ATTEMPTS
from distill.errors import ProviderTimeout
from distill.heartbeat import LEASE
from tests.factories import at

if TYPE_CHECKING:
    from tests.conftest import FakeClock, MemoryFactory

BIKES = {"predicate": "bike_count", "value": {"count": 3}}
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
    monkeypatch.setattr(heartbeat, "HEARTBEAT_EVERY_S", 0.05)

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


def test_a_worker_runs_many_times_on_a_bounded_number_of_connections(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The heartbeat thread lives as long as the engine, not a run: a store keeps one
    connection per thread, so a thread per run would leak one connection a run."""
    monkeypatch.setattr(heartbeat, "HEARTBEAT_EVERY_S", 0.01)
    mem = make_memory()
    for i in range(15):
        mem.add_event(subject="alice", text=f"I like tea number {i}", occurred_at=at(i))
        mem.consolidate()
        time.sleep(0.03)  # let the thread beat during and between runs
    assert len(mem.store._connections._opened) <= 3  # type: ignore[attr-defined]


def test_an_embedder_that_is_down_stops_the_run_and_fails_no_job(
    make_memory: MemoryFactory,
) -> None:
    """An embedding server that does not answer would fail every job the same way: the
    claimed jobs go back to pending, untouched, and the run says why it stopped."""

    class Down(HashingEmbedder):
        def embed_batch(self, texts: Sequence[str]) -> Any:
            raise ProviderTimeout("embeddings at http://127.0.0.1:9/v1 did not answer")

    mem = make_memory(embedder=Down(256), max_distance=0.12)
    for s in range(3):
        mem.add_event(subject=f"s{s}", text="I have 3 bikes", occurred_at=at(s), claims=[BIKES])

    report = mem.consolidate()

    assert (report.jobs_done, report.jobs_failed, report.jobs_released) == (0, 0, 3)
    assert "the embedder failed" in report.stopped_by_provider
    assert {j.status for j in mem.jobs()} == {JobStatus.PENDING}
    assert all(j.attempts == 0 for j in mem.jobs())
