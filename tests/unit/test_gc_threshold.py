"""A consolidation raises the collector's young threshold while it runs and leaves the
process's threshold as it found it, however runs overlap and whatever the host set."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from distill import Memory
from distill.gc_threshold import RUN_YOUNG_THRESHOLD, fewer_collections


@pytest.fixture(autouse=True)
def host_threshold() -> Iterator[tuple[int, ...]]:
    """A known host threshold for each test, the real one put back after it."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_a_consolidation_runs_with_the_raised_threshold_and_restores_the_hosts(
    mem: Memory, host_threshold: tuple[int, ...]
) -> None:
    mem.add_event(
        subject="u", text="x", claims=[{"predicate": "home_city", "value": {"city": "Lyon"}}]
    )
    seen: list[tuple[int, ...]] = []
    mem.consolidate(progress=lambda done, total: seen.append(gc.get_threshold()))
    assert [f.value for f in mem.facts("u")] == [{"city": "Lyon"}]
    assert seen and all(t == (RUN_YOUNG_THRESHOLD, 10, 10) for t in seen)
    assert gc.get_threshold() == host_threshold


def test_a_dry_run_restores_it_too(mem: Memory, host_threshold: tuple[int, ...]) -> None:
    mem.add_event(subject="u", text="x", claims=[{"predicate": "pet", "value": {"name": "Rex"}}])
    seen: list[tuple[int, ...]] = []
    mem.consolidate(dry_run=True, progress=lambda done, total: seen.append(gc.get_threshold()))
    assert seen == [(RUN_YOUNG_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == host_threshold


def test_a_run_that_fails_restores_it(host_threshold: tuple[int, ...]) -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == host_threshold


def test_overlapping_runs_restore_it_when_the_last_one_ends(
    host_threshold: tuple[int, ...],
) -> None:
    first_in, second_out = threading.Event(), threading.Event()
    during: list[tuple[int, ...]] = []

    def second() -> None:
        first_in.wait()
        with fewer_collections():
            pass
        during.append(gc.get_threshold())  # the first run is still on
        second_out.set()

    thread = threading.Thread(target=second)
    thread.start()
    with fewer_collections():
        first_in.set()
        second_out.wait()
        assert gc.get_threshold()[0] == RUN_YOUNG_THRESHOLD
    thread.join()
    assert during == [(RUN_YOUNG_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == host_threshold


def test_a_larger_host_threshold_is_kept() -> None:
    gc.set_threshold(50_000, 5, 5)
    with fewer_collections():
        assert gc.get_threshold() == (50_000, 5, 5)
    assert gc.get_threshold() == (50_000, 5, 5)


def test_a_threshold_of_zero_stays_zero() -> None:
    gc.set_threshold(0, 10, 10)
    with fewer_collections():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0


def test_a_change_the_host_made_during_a_run_is_kept() -> None:
    with fewer_collections():
        gc.set_threshold(2_000, 10, 10)
    assert gc.get_threshold() == (2_000, 10, 10)
