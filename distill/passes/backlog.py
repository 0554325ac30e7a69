"""A scope's backlog of memories a pass has not read (the extraction watermark), and the
walk that asks a model about it across scopes: what the memory judge, rule promotion and the
summariser share.

**The backlog** (`core.watermark`): the scope's live memories the pass holds no mark of their
present text for (`Store.unmarked_memories`: new, or their text changed), least recently
reinforced first, with the marks they had when read (`Backlog.read`: a changed text's old
signature). A pass marks what it finished with (`marking`) in the transaction that applies
what it derived; under the scope's lock it reads those marks again, and a mark that moved
since means another run did the work (`moved_meanwhile`).

**The walk** (`walk`). Every scope's backlog is read first; the items that need the model are
asked about in batches filled across scopes (a subject's last few memories share a call with
the next subject's), through an `asking.Asker`; then each scope's answers are applied, under
its lock, with the items before its first one not asked about marked. So a mark covers only
items fully answered and applied, and a stop (a provider error, the budget) leaves every item
not yet asked about unmarked. When more waits than one run takes (`capped`), a short last
batch is left for the next run, whose first batch it fills, so that every call carries a full
batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from distill.core.models import Fact
from distill.core.passes import PassResult, Scope
from distill.core.plan import MarkFacts
from distill.core.watermark import Mark, signature
from distill.errors import DistillError
from distill.passes import Pass, run_pass
from distill.passes.asking import Stop
from distill.ports import Store

log = logging.getLogger("distill.passes")

T = TypeVar("T")
V = TypeVar("V")
W = TypeVar("W")


def unmarked(store: Store, project: str, subject: str, pass_name: str) -> list[Fact]:
    """The scope's live memories `pass_name` has not read as they are now (the backlog)."""
    return store.unmarked_memories(project, subject, pass_name)


@dataclass(frozen=True)
class Backlog(Generic[T]):
    """One scope's items to go through, in backlog order, and the marks the pass held of
    their facts when it read them (`read`: fact id to signature; a new fact has none)."""

    scope: Scope
    items: list[T]
    read: dict[str, str]


def marks_read(store: Store, scope: Scope, pass_name: str, facts: Sequence[Fact]) -> dict[str, str]:
    """The marks `pass_name` holds of `facts`: one batched read."""
    return store.fact_marks(scope.project, pass_name, [f.id for f in facts])


def marking(
    scope: Scope,
    mark_pass: str,
    facts: Sequence[Fact],
    read: Mapping[str, str],
    at: datetime,
    reason: str,
) -> MarkFacts:
    """The watermark's move over `facts` as the pass read them (their text then), from the
    marks it read, signed by the pass."""
    marks = tuple(Mark(f.id, read.get(f.id), signature(f.text)) for f in facts)
    return MarkFacts(scope.project, scope.subject, mark_pass, marks, at, reason, mark_pass)


def moved_meanwhile(read: Mapping[str, str], now: Mapping[str, str], ids: Iterable[str]) -> bool:
    """Whether any of `ids` is marked otherwise than when the backlog was read: another run
    did that work meanwhile."""
    return any(read.get(i) != now.get(i) for i in ids)


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
    apply with its marks); a refused plan is rolled back, nothing marked, and said in a
    `note` (None is returned)."""
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
    """Ask about the items of `backlogs` that `asks` (the others need no answer; they are
    marked all the same), `batch` at a time, then `apply(backlog, done, answers)` for each
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
