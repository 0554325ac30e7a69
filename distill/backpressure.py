"""Backpressure on ingest: a bounded backlog per project, as a `Memory` mixin.

A project's backlog is the events its open jobs hold (pending or running: what no worker has
consolidated yet). With `max_backlog` set, a write whose events would take a project's
backlog past it is refused whole, before anything is stored (`BacklogFull`, carrying the
backlog and a retry-after; HTTP 429 with `Retry-After`), or, when the caller gives a `wait`,
retried until the workers made room or the wait ran out. Nothing accepted is ever dropped:
an event is either stored (and consolidated in time) or refused with the error.

The bound is soft by what arrives at the same instant: two writers that both read room may
both store their batch, so the backlog may pass the bound by one batch per concurrent
writer, never more (checking and storing in one transaction would serialise every writer
of a project for a count nobody needs exact).

The library's default is no bound (a bulk import followed by `consolidate` must work); the
service's (`distill serve`, `[backlog]` in the configuration file) is 10,000 events.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from distill.errors import BacklogFull, ConfigurationError

if TYPE_CHECKING:
    from distill.core.models import Event
    from distill.ports import Store

# Seconds a refused writer is told to wait: about what a worker takes to consolidate a
# claim batch of jobs at the measured rate (BENCHMARKS.md, soak), so that a retry finds room.
BACKLOG_RETRY_AFTER_S = 2.0
BACKLOG_POLL_S = 0.2  # how often a waiting writer looks again


class Backpressure:
    """`Memory.backlog` and the check `Memory.append` makes (see the module docstring)."""

    store: Store
    max_backlog: int | None = None
    backlog_retry_after: float = BACKLOG_RETRY_AFTER_S

    def set_backlog_bound(self, max_backlog: int | None, retry_after: float | None = None) -> None:
        """Bound each project's backlog to `max_backlog` events (None: no bound)."""
        if max_backlog is not None and (not isinstance(max_backlog, int) or max_backlog < 1):
            raise ConfigurationError("max_backlog: a whole number of events, 1 or more, or None")
        self.max_backlog = max_backlog
        if retry_after is not None:
            if retry_after <= 0:
                raise ConfigurationError("backlog retry_after: a positive number of seconds")
            self.backlog_retry_after = retry_after

    def backlog(self, project: str = "default") -> int:
        """The project's events waiting for consolidation."""
        return int(self.store.backlog(project))

    def backlogs(self) -> dict[str, int]:
        """Every project's backlog (`distill status`)."""
        projects = self.store.schedule_projects()
        return {project: self.backlog(project) for project in projects}

    def _admit(self, events: Sequence[Event], wait: float | None) -> None:
        """Return when every project of `events` has room for them; else raise `BacklogFull`
        (at once, or when `wait` seconds ran out)."""
        limit = self.max_backlog
        if limit is None or not events:
            return
        deadline = None if wait is None else time.monotonic() + wait
        for project, arriving in sorted(Counter(e.project for e in events).items()):
            while True:
                backlog = self.backlog(project)
                # A batch bigger than the bound is let in on an empty backlog: it could never
                # be, otherwise, and it is one batch past the bound, as two writers can be.
                if backlog + arriving <= limit or backlog == 0:
                    break
                if deadline is None or time.monotonic() >= deadline:
                    raise BacklogFull.at(project, backlog, limit, self.backlog_retry_after)
                time.sleep(min(BACKLOG_POLL_S, max(deadline - time.monotonic(), 0.0)))
