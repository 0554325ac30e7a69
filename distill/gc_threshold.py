"""The cyclic garbage collector's young threshold, raised while a consolidation runs.

A consolidation allocates many short-lived containers (events read, candidates, plans, rows)
and keeps a few batches of them in flight between reading, embedding and deciding. With
CPython's default threshold (a young collection every 700 net container allocations),
those batches outlive the young generations, and their promotion sets off full
collections over every object of the process: measured on 10,000 of
`bench/consolidate.py`'s events (hashing embedder, `gc.callbacks`, two runs each): 546 young
and 3 full collections, 0.24-0.33 s of a deciding thread's 3.7-4.9 s of CPU. With a young
threshold of 10,000: 10 young collections, no full one, 0.017 s. 5,000 gave 20 and one
middle collection (0.035 s), 50,000 two (0.020 s); 10,000 is the smallest with no full
collection. Nothing else changes: reference counting frees what it always freed, and a
cycle waits for at most 10,000 allocations instead of 700.

The threshold is the process's, not a Memory's, so this is careful with it:
- runs that overlap (a worker's threads, two Memory objects) raise it once between them; the
  last one out restores it;
- it is only ever raised: a host that set a larger young threshold keeps its own, and a
  disabled collector stays disabled (the threshold does not enable it);
- a threshold the host changed during a run is left as the host set it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Net container allocations between young collections during a run (CPython's default is
# 700; 3.13's 2,000). The measurement is in the module's docstring.
RUN_YOUNG_THRESHOLD = 10_000

_lock = threading.Lock()
_runs = 0  # runs inside `fewer_collections` now
_saved: tuple[int, ...] | None = None  # the threshold before the first of them, if raised


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the young threshold to `RUN_YOUNG_THRESHOLD` for the block (see the module)."""
    _enter()
    try:
        yield
    finally:
        _leave()


def _enter() -> None:
    global _runs, _saved
    with _lock:
        _runs += 1
        if _runs > 1:
            return
        current = gc.get_threshold()
        if current[0] >= RUN_YOUNG_THRESHOLD or current[0] == 0:  # the host's own, or off
            _saved = None
            return
        _saved = current
        gc.set_threshold(RUN_YOUNG_THRESHOLD, *current[1:])


def _leave() -> None:
    global _runs, _saved
    with _lock:
        _runs -= 1
        if _runs > 0 or _saved is None:
            return
        if gc.get_threshold() == (RUN_YOUNG_THRESHOLD, *_saved[1:]):  # unchanged since
            gc.set_threshold(*_saved)
        _saved = None
