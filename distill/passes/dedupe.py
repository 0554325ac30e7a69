"""The dedupe pass over stored memories, scope by scope (`core.dedupe` decides).

`Dedupe` is a `Pass` like adjudication: under a subject's lock it reads the subject's active
facts in one call, `core.dedupe.dedupe` plans the merges, and the one applier validates and
writes them (pinned facts untouchable, a receipt for every retired memory). `run_dedupe`
walks the scopes that hold two or more active memories (one store call finds them), within
a project allowlist, with one cap for the whole run; a dry run is the same walk inside a
transaction the store always rolls back, so its report is the plan a real run would apply.

A scope whose plan cannot be applied (a memory edited between the read and the write, say)
is rolled back alone and named in the report; the run goes on with the next scope.

With `offline` (an `Offline`: the embedder's calibrated distance), each scope's memories are
embedded (through the cache) and each is looked up in the scope's vector arm before the
lock is taken; the neighbours within the distance go to `core.dedupe` with the snapshot,
which merges only those pairs whose current texts pass every guard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core.dedupe import MERGING, PASS_NAME, DedupeResult, Group, Near, dedupe
from distill.core.memory_judge import held_facts
from distill.core.models import ConflictStatus, Fact, FactKind, FactStatus
from distill.core.passes import Context, Scope
from distill.errors import DistillError
from distill.passes import refused, run_pass, walked_scopes
from distill.ports import RecallScope, Store, Vector

# Memories one run retires at most, across every scope (the iii seed's safety cap,
# `max_supersedes_per_run`); the rest wait for the next run.
MAX_SUPERSEDES_PER_RUN = 200
# Neighbours of each memory looked at by the offline tier: the pairs within its distance are
# almost always the first one or two (a memory's paraphrases), and the guards decide.
OFFLINE_NEIGHBOURS = 4


@dataclass(frozen=True)
class Offline:
    """The offline tier's means: embedding through the cache, the model whose recall vectors
    are searched, and its calibrated merge distance."""

    embed: Callable[[Sequence[str]], dict[str, Vector]]
    model_id: str
    max_distance: float


@dataclass(frozen=True)
class ScopedGroup:
    project: str
    subject: str
    group: Group

    def to_dict(self) -> dict[str, Any]:
        return {"project": self.project, "subject": self.subject, **self.group.to_dict()}


@dataclass
class DedupeReport:
    """What one dedupe run did, or would do (`dry_run`)."""

    dry_run: bool = False
    scopes: int = 0  # scopes looked at
    retired: int = 0  # memories retired into a survivor
    capped: int = 0  # memories left for the next run by the cap
    groups: list[ScopedGroup] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # scopes whose plan was refused

    @property
    def merged_groups(self) -> int:
        return sum(g.group.merged in MERGING for g in self.groups)

    @property
    def offline_groups(self) -> int:
        return sum(g.group.merged == "offline" for g in self.groups)

    @property
    def report_only(self) -> int:
        return sum(g.group.merged == "report_only" for g in self.groups)

    @property
    def pinned_skipped(self) -> int:
        return sum(len(g.group.pinned_skipped) for g in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": PASS_NAME,
            "dry_run": self.dry_run,
            "scopes": self.scopes,
            "groups_merged": self.merged_groups,
            "groups_offline": self.offline_groups,
            "groups_report_only": self.report_only,
            "retired": self.retired,
            "pinned_skipped": self.pinned_skipped,
            "capped": self.capped,
            "groups": [g.to_dict() for g in self.groups],
            "errors": list(self.errors),
        }


class Dedupe:
    """`distill.passes.Pass` for one subject's memories."""

    name = PASS_NAME

    def __init__(self, cap: int | None, max_distance: float | None = None) -> None:
        self.cap = cap
        self.max_distance = max_distance

    def load(self, store: Store, scope: Scope, work: Sequence[Near]) -> Memories:
        sets = store.conflicts(scope.project, scope.subject, ConflictStatus.OPEN)
        return Memories(_memories(store, scope), tuple(work), held_facts(sets))

    def decide(self, snapshot: Memories, context: Context) -> DedupeResult:
        return dedupe(
            snapshot.facts,
            context.now,
            self.cap,
            snapshot.near,
            self.max_distance,
            snapshot.held,
        )


@dataclass(frozen=True)
class Memories:
    """A subject's memories read under its lock, and the offline tier's pairs (if any)."""

    facts: list[Fact]
    near: tuple[Near, ...] = ()
    held: frozenset[str] = frozenset()  # what an open conflict set holds: left to that set


def _memories(store: Store, scope: Scope) -> list[Fact]:
    facts = store.facts(scope.project, scope.subject, include_retired=False, as_of=None)
    return [f for f in facts if f.kind is FactKind.MEMORY]


def _near(store: Store, scope: Scope, offline: Offline) -> list[Near]:
    """Each memory's neighbours within the offline distance, read outside the lock (the
    pass checks them against its own read)."""
    memories = [f for f in _memories(store, scope) if f.status is FactStatus.ACTIVE]
    if len(memories) < 2:
        return []
    vectors = offline.embed(sorted({m.text for m in memories}))
    arm = RecallScope(scope.project, scope.subject, offline.model_id, ("memory",))
    found: dict[tuple[str, str], Near] = {}
    for m in memories:
        for n in store.recall_nearest(arm, vectors[m.text], OFFLINE_NEIGHBOURS + 1):
            if n.fact_id != m.id and n.distance <= offline.max_distance:
                key = (min(m.id, n.fact_id), max(m.id, n.fact_id))
                found.setdefault(key, Near(key[0], key[1], n.distance))
    return list(found.values())


def run_dedupe(
    store: Store,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
    max_supersedes: int | None = MAX_SUPERSEDES_PER_RUN,
    offline: Offline | None = None,
) -> DedupeReport:
    """Dedupe the memories of every scope of `projects` (empty: every project), or of one
    `subject`, retiring at most `max_supersedes` memories in all (None: no cap); with
    `offline`, the offline tier too (module docstring)."""
    report = DedupeReport(dry_run=dry_run)
    if dry_run:
        with store.dry_run():
            _walk(store, now, new_id, projects, subject, max_supersedes, report, offline)
    else:
        _walk(store, now, new_id, projects, subject, max_supersedes, report, offline)
    return report


def _walk(
    store: Store,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    projects: Sequence[str],
    subject: str | None,
    budget: int | None,
    report: DedupeReport,
    offline: Offline | None,
) -> None:
    for scope in walked_scopes(store.memory_scopes(list(projects)), subject):
        report.scopes += 1
        try:
            near = _near(store, scope, offline) if offline is not None else []
            distance = offline.max_distance if offline is not None else None
            result = run_pass(
                store, Dedupe(budget, distance), scope, near, now=now(), new_id=new_id
            )
        except DistillError as exc:  # this scope's plan was rolled back; the others go on
            report.errors.append(refused("dedupe", scope, exc))
            continue
        assert isinstance(result, DedupeResult)
        report.groups.extend(ScopedGroup(scope.project, scope.subject, g) for g in result.groups)
        report.retired += result.retired
        report.capped += sum(len(g.capped) for g in result.groups)
        if budget is not None:
            budget -= result.retired
