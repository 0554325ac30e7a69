"""The worker loop: threads that consolidate until stopped, each job exactly once, and a
stop that never leaves a job claimed (`distill worker`; DESIGN: jobs)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from distill import Memory
from distill.adapters.llm.fake import FakeLLM, sentence_memories
from distill.core.models import JobStatus
from distill.errors import ConfigurationError
from distill.service.worker import Worker

if TYPE_CHECKING:
    from tests.conftest import FakeClock

MemoryFactory = Callable[..., Memory]


def add_people(mem: Memory, clock: FakeClock, n: int) -> None:
    for i in range(n):
        mem.add_event(subject=f"s{i}", text=f"Person {i} lives in Lyon.")
        clock.advance(seconds=1)


def test_threads_share_the_work_and_do_each_job_once(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """Two threads, each with its own Memory on one database: every job is done by exactly
    one of them and every event is consolidated once."""
    llm = FakeLLM.sentences()
    mem = make_memory(llm=llm, extractor="llm")
    add_people(mem, clock, 12)

    totals = Worker(
        lambda: make_memory(llm=llm, extractor="llm"), concurrency=2, interval=0.05
    ).run(once=True)

    assert totals.jobs_done == 12 and totals.jobs_failed == 0
    assert len(llm.calls) == 12
    assert {j.status for j in mem.jobs()} == {JobStatus.DONE}
    assert sorted(f.subject for f in mem.facts()) == sorted(f"s{i}" for i in range(12))


def test_a_stop_request_leaves_no_job_claimed_and_loses_nothing(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SIGTERM arrives while the model is answering: the worker stops without deciding
    more, every claimed job is back to pending (none left `running`), and the next worker
    finishes them without asking the model again for what it already answered."""
    worker: Worker

    def answer_then_stop(prompt: str) -> str:
        worker.stop()
        return sentence_memories(prompt)

    llm = FakeLLM(default=answer_then_stop)
    mem = make_memory(llm=llm, extractor="llm")
    add_people(mem, clock, 5)
    worker = Worker(lambda: make_memory(llm=llm, extractor="llm"), interval=0.05)

    worker.run()

    assert JobStatus.RUNNING not in {j.status for j in mem.jobs()}
    assert len(llm.calls) == 1
    finished = Worker(lambda: make_memory(llm=FakeLLM.sentences(), extractor="llm")).run(once=True)
    assert finished.jobs_done + worker.totals.jobs_done == 5
    assert {j.status for j in mem.jobs()} == {JobStatus.DONE}
    assert len(mem.facts()) == 5


def test_a_configuration_error_ends_the_worker(make_memory: MemoryFactory) -> None:
    """A worker that cannot even open its store stops at once with the error, instead of
    polling forever."""

    def broken() -> Memory:
        raise ConfigurationError("unsupported database URL 'mysql://x'")

    with pytest.raises(ConfigurationError, match="mysql"):
        Worker(broken, concurrency=3, interval=0.05).run()


def test_a_worker_waits_between_idle_polls_and_stops_promptly(
    make_memory: MemoryFactory,
) -> None:
    """With nothing to do the worker sleeps its interval (no busy loop), and a stop wakes it
    at once."""
    worker = Worker(lambda: make_memory(), interval=30.0)
    thread = threading.Thread(target=worker.run)
    thread.start()
    worker.stop()
    thread.join(timeout=5)

    assert not thread.is_alive()
    assert worker.totals.runs <= 2
