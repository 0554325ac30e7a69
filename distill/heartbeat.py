"""The heartbeat of a run: while a run holds jobs, a thread of its own marks them alive, so
that a slow run (a model thinking, a long decision) is never mistaken for a dead one, and the
lease after which a job whose heartbeat stopped is taken back by another run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from distill.errors import DistillError
from distill.ports import Clock, Store

log = logging.getLogger("distill.engine")

# A running job whose heartbeat is older than this is taken back, wherever its claimer was:
# the fallback for when the claimer cannot be seen to be gone (another host, no session to
# watch). A run beats every HEARTBEAT_EVERY_S while it holds jobs, so a live run would have to
# miss four beats in a row to lose them.
LEASE = timedelta(seconds=60)
HEARTBEAT_EVERY_S = 15.0


class Heartbeat:
    """Marks the jobs a run holds as alive every HEARTBEAT_EVERY_S, from a thread of its own,
    while the run waits on a model or decides: a slow run is never mistaken for a dead one.
    One thread for the engine's life (it beats only during runs): a store keeps a connection
    per thread, and a worker runs thousands of times."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._running = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def during_run(self) -> Iterator[None]:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._beat, name="distill-heartbeat", daemon=True
            )
            self._thread.start()
        self._running.set()
        try:
            yield
        finally:
            self._running.clear()

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _beat(self) -> None:
        while not self._done.wait(HEARTBEAT_EVERY_S):
            if not self._running.is_set():
                continue
            try:
                self._store.heartbeat(self._clock.now())
            except DistillError as exc:  # the next beat tries again; the lease is 4 beats
                log.warning("heartbeat failed: %s", exc)
