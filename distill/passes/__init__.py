"""Consolidation passes, and the one way to run any of them.

A pass is a `Pass`: `load` reads its snapshot through the store in a few batched calls,
`decide` turns the snapshot into a `PassResult` (decisions and a plan) without I/O (the
decision logic lives in `distill.core`), and `run_pass` does the rest the same way for every
pass: take the scope's lock, load, decide, apply through the one applier. The engine runs
adjudication this way for each job; a new pass needs a `Pass` and a call to `run_pass`, not
a change to the engine's run loop.

What `decide` may not do is enforced after it, not trusted: `distill.applier` validates every
plan (scope, pins, one active fact per identity, receipts) before anything is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Protocol, TypeVar

from distill.applier import apply_plan
from distill.core.passes import Context, PassResult, Scope
from distill.errors import DistillError
from distill.ports import Store

log = logging.getLogger("distill.passes")

Snapshot = TypeVar("Snapshot")
Work = TypeVar("Work", contravariant=True)


class Pass(Protocol[Snapshot, Work]):
    """One consolidation step. `name` signs its actions and audit entries; `cap` bounds how
    many items one run may change (None: no cap), the rest waiting for the next run."""

    name: str
    cap: int | None

    def load(self, store: Store, scope: Scope, work: Work) -> Snapshot:
        """What `decide` may see of the scope, read in a few batched calls (never one per
        fact), under the scope's lock. `work` is what the run brings: a job's candidates, a
        cursor, nothing."""
        ...

    def decide(self, snapshot: Snapshot, context: Context) -> PassResult:
        """The decisions and the plan. Pure: no I/O, no clock (the time is in `context`)."""
        ...


def run_pass(
    store: Store,
    pass_: Pass[Snapshot, Work],
    scope: Scope,
    work: Work,
    *,
    now: datetime,
    new_id: Callable[[], str],
    job_id: str | None = None,
    before: Callable[[], None] | None = None,
    after: Callable[[PassResult], None] | None = None,
) -> PassResult:
    """Lock the scope, load, decide and apply, in one transaction.

    `before` runs first under the lock (a check that may raise to call the run off); `after`
    runs last in the same transaction (work that must commit or roll back with the plan).
    """
    with store.serialised(scope.project, scope.subject):
        if before is not None:
            before()
        snapshot = pass_.load(store, scope, work)
        result = pass_.decide(snapshot, Context(now, new_id))
        apply_plan(store, result.plan, scope, job_id=job_id, now=now, new_id=new_id)
        if after is not None:
            after(result)
    return result


def walked_scopes(found: Iterable[tuple[str, str]], subject: str | None) -> list[Scope]:
    """The scopes a walk over stored memory visits: those a store call found, or only those
    of `subject`."""
    return [Scope(p, s) for p, s in found if subject is None or s == subject]


def refused(what: str, scope: Scope, exc: DistillError) -> str:
    """Log a scope whose plan was refused (and rolled back alone, the walk going on) and
    say it as a report's error line."""
    log.warning("%s of %s/%s not applied: %s", what, scope.project, scope.subject, exc)
    return f"{scope.project}/{scope.subject}: {type(exc).__name__}: {exc}"
