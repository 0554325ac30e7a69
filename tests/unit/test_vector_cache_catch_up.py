"""`VectorCache.catch_up` with a scripted change log: what two threads read at once.

A catch-up reads outside the lock; a read older than one another thread folded first must
not leave the index behind what was committed before the catch-up began.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from distill.adapters.store.vector_cache import Changes, ScopeKey, VectorCache, VectorScope

DIM = 8
KEY: ScopeKey = (VectorScope("p", "s", "m", True, None), DIM)


def built() -> VectorCache:
    cache = VectorCache(min_vectors=1)
    vectors = np.eye(DIM, dtype=np.float32)[:3]
    cache.start_build(KEY, lambda: (["x", "y", "z"], vectors, 0))
    cache.wait_for_builds()
    return cache


def mark(cache: VectorCache) -> object:
    return cache._scopes[KEY].mark


def test_a_read_overtaken_by_an_older_one_is_read_again() -> None:
    """B read the log before x was retired (mark 1) and folds after A has read; A read it
    after (x gone, mark 2). A must not search an index that still holds x."""
    cache = built()
    b_has_read, a_has_read = threading.Event(), threading.Event()

    def older(key: ScopeKey, since: object) -> tuple[Changes, object]:
        b_has_read.set()
        a_has_read.wait(10)  # B folds only once A has read
        return {}, 1

    def newer(key: ScopeKey, since: object) -> tuple[Changes, object]:
        if since == 0:  # A's first read: B's older one gets folded before A can fold this
            a_has_read.set()
            deadline = time.monotonic() + 10
            while mark(cache) != 1 and time.monotonic() < deadline:
                time.sleep(0.001)
        return {"x": None}, 2

    b = threading.Thread(target=cache.catch_up, args=(KEY[0], older))
    b.start()
    assert b_has_read.wait(10)
    cache.catch_up(KEY[0], newer)
    b.join(10)
    found = cache.lookup(KEY, np.eye(DIM, dtype=np.float32)[:1], 3)
    assert found is not None
    assert [n.fact_id for n in found[0]] == ["y", "z"]
    assert mark(cache) == 2


def test_no_index_no_read() -> None:
    cache = VectorCache(min_vectors=1)
    calls: list[object] = []
    cache.catch_up(KEY[0], lambda key, since: calls.append(since) or ({}, since))
    assert calls == []
    assert cache.lookup(KEY, np.eye(DIM, dtype=np.float32)[:1], 1) is None
