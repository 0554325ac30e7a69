"""Backpressure on ingest, on every backend: past a project's bound of waiting events, a
write is refused whole (`BacklogFull`, with the backlog and a retry-after) or waits for
room; nothing refused is stored and nothing accepted is lost; other projects are not held
back."""

from __future__ import annotations

import threading
import time

import pytest

from distill import Memory
from distill.errors import BacklogFull


def event(n: int, project: str = "default") -> dict[str, object]:
    return {"subject": f"s{n % 2}", "text": f"Person {n} lives in Lyon.", "project": project}


def stored_events(memory: Memory, project: str = "default") -> int:
    return sum(1 for _ in memory.store.iter_events(project))


def test_past_the_bound_a_write_is_refused_whole_and_stores_nothing(memory: Memory) -> None:
    memory.set_backlog_bound(3, retry_after=4.0)
    memory.add_events([event(0), event(1)])
    memory.add_event(**event(2))
    assert memory.backlog() == 3

    with pytest.raises(BacklogFull) as refused:
        memory.add_events([event(3), event(4)])
    assert (refused.value.backlog, refused.value.limit, refused.value.retry_after) == (3, 3, 4.0)
    assert "send them again in 4 s" in str(refused.value)
    assert stored_events(memory) == 3  # refused whole
    memory.add_event(**event(9, project="other"))  # another project has room of its own

    memory.consolidate()
    assert memory.backlog() == 0
    memory.add_events([event(3), event(4)])
    memory.consolidate()
    # Every accepted event became a fact; none was dropped.
    assert len(memory.facts(subject="s0")) + len(memory.facts(subject="s1")) == 5


def test_a_writer_that_waits_is_let_in_once_the_worker_made_room(memory: Memory) -> None:
    memory.set_backlog_bound(2)
    memory.add_events([event(0), event(1)])
    drained = threading.Timer(0.3, memory.consolidate)
    drained.start()
    started = time.monotonic()
    try:
        memory.add_events([event(2)], backlog_wait=10.0)
    finally:
        drained.join()
    assert 0.2 < time.monotonic() - started < 10.0
    assert stored_events(memory) == 3


def test_a_wait_that_runs_out_raises(memory: Memory) -> None:
    memory.set_backlog_bound(1)
    memory.add_event(**event(0))
    with pytest.raises(BacklogFull):
        memory.add_events([event(1)], backlog_wait=0.3)


def test_a_batch_bigger_than_the_bound_enters_an_empty_backlog(memory: Memory) -> None:
    memory.set_backlog_bound(2)
    memory.add_events([event(n) for n in range(5)])
    assert memory.backlog() == 5


def test_no_bound_by_default(memory: Memory) -> None:
    memory.add_events([event(n) for n in range(50)])
    assert memory.backlog() == 50 and memory.backlogs() == {"default": 50}
