"""A scope's backlog of changed memories behind a pass's cursor, and the walk that asks a
model about it across scopes: what the memory judge and rule promotion share.

**Positions.** A pass's cursor (`pass_cursors`, moved by `MoveCursor`) is the audit entry of
the last memory it has finished with, as ``at|id``. Its backlog is every active memory with a
fact action after that entry (created, reinforced, revised, merged into: an edited or
resurrected memory comes back), each at its latest change, oldest first (`changed_memories`).

**The walk** (`walk`). Every scope's backlog is read first; the items that need the model are
asked about in batches filled across scopes (a subject's last few memories share a call with
the next subject's), through an `asking.Asker`; then each scope's answers are applied, under
its lock, with its cursor moved past the items before its first one not asked about. So a
cursor advances only over items fully answered and applied, and a stop (a provider error,
the budget) leaves every item not yet asked about behind its scope's cursor. When more waits
than one run takes (`capped`), a short last batch is left for the next run, whose first
batch it fills, so that every call carries a full batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from distill.core.models import Fact, FactKind, FactStatus
from distill.core.passes import PassResult, Scope
from distill.core.plan import MoveCursor
from distill.errors import DistillError
from distill.passes import Pass, run_pass
from distill.passes.asking import Stop
from distill.ports import Store

log = logging.getLogger("distill.passes")

T = TypeVar("T")
V = TypeVar("V")
W = TypeVar("W")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_BEFORE = timedelta(microseconds=1)  # the store reads changes strictly after an instant


def position_key(position: str) -> tuple[datetime, str]:
    """A position (``at|id``) as what orders positions: the instant, then the entry's id."""
    at, _, entry = position.partition("|")
    return datetime.fromisoformat(at), entry


def changed_memories(
    store: Store, project: str, subject: str, cursor: str | None
) -> list[tuple[Fact, str]]:
    """The scope's active memories changed after `cursor` (None: ever), each with the
    position of its latest change, oldest change first."""
    since = position_key(cursor)[0] - _BEFORE if cursor else EPOCH
    after = position_key(cursor) if cursor else None
    latest: dict[str, str] = {}
    for e in store.fact_changes_after(project, subject, since):
        position = f"{e.at.isoformat()}|{e.id}"
        if e.fact_id and (after is None or position_key(position) > after):
            latest[e.fact_id] = max(latest.get(e.fact_id, position), position, key=position_key)
    facts = store.facts_by_ids(project, sorted(latest))
    live = [
        (f, latest[f.id])
        for f in facts
        if f.kind is FactKind.MEMORY and f.status is FactStatus.ACTIVE
    ]
    return sorted(live, key=lambda fp: position_key(fp[1]))


@dataclass(frozen=True)
class Backlog(Generic[T]):
    """One scope's items to go through, in cursor order, with each one's position, and
    where the scope's cursor was read."""

    scope: Scope
    items: list[T]
    positions: list[str]
    cursor: str | None


def cursor_move(
    scope: Scope, cursor_pass: str, before: str | None, after: str, at: datetime, reason: str
) -> MoveCursor:
    """The move of a pass's cursor from where it was read (`before`) past a batch (`after`),
    signed by the pass."""
    return MoveCursor(
        scope.project, scope.subject, cursor_pass, before, after, at, reason, cursor_pass
    )


def apply_batch(
    store: Store,
    pass_: Pass[Any, W],
    backlog: Backlog[T],
    work: W,
    *,
    now: datetime,
    new_id: Callable[[], str],
    note: Callable[[str], None],
) -> PassResult | None:
    """Run `pass_` over one scope's answered batch (`run_pass`: lock, read again, decide,
    apply with its cursor's move); a refused plan is rolled back, its cursor left, and said
    in a `note` (None is returned)."""
    scope = backlog.scope
    try:
        return run_pass(store, pass_, scope, work, now=now, new_id=new_id)
    except DistillError as exc:
        note(f"{scope.project}/{scope.subject}: {type(exc).__name__}: {exc}")
        return None


def over_scopes(
    store: Store,
    scopes: Callable[[], Sequence[tuple[str, str]]],
    subject: str | None,
    dry_run: bool,
    run: Callable[[list[tuple[str, str]]], None],
) -> None:
    """`run` over the (project, subject) pairs `scopes` reads (only `subject`'s when given),
    inside a transaction the store rolls back when it is a `dry_run`."""

    def go() -> None:
        run([(p, s) for p, s in scopes() if subject is None or s == subject])

    if dry_run:
        with store.dry_run():
            go()
    else:
        go()


def walk(
    backlogs: Sequence[Backlog[T]],
    *,
    asks: Callable[[T], bool],
    ask: Callable[[Sequence[T]], list[V]],
    key: Callable[[T], str],
    batch: int,
    capped: bool,
    apply: Callable[[Backlog[T], int, list[V]], None],
    note: Callable[[str], None],
) -> None:
    """Ask about the items of `backlogs` that `asks` (the others need no answer; the cursor
    still moves past them), `batch` at a time, then `apply(backlog, done, answers)` for each
    scope whose first `done` items are through. `ask` raises `Stop` to end the asking; each
    scope it leaves work in gets a `note` with the reason. `key` names an item."""
    asking = [i for b in backlogs for i in b.items if asks(i)]
    if capped and len(asking) > batch:
        asking = asking[: len(asking) - len(asking) % batch]
    answers: list[V] = []
    asked: set[str] = set()
    stop = ""
    for start in range(0, len(asking), batch):
        chunk = asking[start : start + batch]
        try:
            answers.extend(ask(chunk))
        except Stop as stopped:
            stop = str(stopped)
            log.warning("stopped: %s", stop)
            break
        asked.update(key(i) for i in chunk)
    for b in backlogs:
        done = 0
        while done < len(b.items) and (not asks(b.items[done]) or key(b.items[done]) in asked):
            done += 1
        if done < len(b.items) and stop:
            note(f"{b.scope.project}/{b.scope.subject}: {stop}")
        if done:
            apply(b, done, answers)
