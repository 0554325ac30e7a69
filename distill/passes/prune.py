"""The prune pass: tombstones whose weight decayed below the floor, deleted scope by scope.

`Prune` is a `Pass` like dedupe: under a subject's lock it reads the subject's facts of every
status and its open conflict sets (two store calls), `core.decay.decide_prune` applies the
prune rule (written out in that module's docstring) and the one applier validates (never a
live or a pinned fact) and writes the plan, with an audit entry per deleted fact.
`run_prune` walks the scopes holding a tombstone (one store call finds them), within a
project allowlist or one subject, with one cap for the whole run; a dry run is the same walk
inside a transaction the store always rolls back, so its report is what a real run would do.

A scope whose plan is refused (a tombstone revived or reinforced between the read and the
write) is rolled back alone and named in the report; the run goes on with the next scope.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core.decay import (
    HALF_LIFE_DAYS,
    KEPT_CAPPED,
    MAX_PRUNES_PER_RUN,
    PASS_NAME,
    PRUNE_FLOOR,
    Kept,
    check_knobs,
    decide_prune,
)
from distill.core.models import ConflictSet, ConflictStatus, Fact
from distill.core.passes import Context, PassResult, Scope
from distill.core.plan import PruneFact
from distill.errors import DistillError
from distill.passes import refused, run_pass, walked_scopes
from distill.ports import Store


@dataclass(frozen=True)
class Retired:
    """A subject's facts of every status and its open conflict sets, read under its lock."""

    facts: list[Fact]
    open_conflicts: list[ConflictSet]


@dataclass
class PruneResult(PassResult):
    kept: list[Kept] = field(default_factory=list)


class Prune:
    """`distill.passes.Pass` for one subject's tombstones."""

    name = PASS_NAME

    def __init__(self, cap: int | None, half_life_days: float, floor: float) -> None:
        self.cap = cap
        self.half_life_days = half_life_days
        self.floor = floor

    def load(self, store: Store, scope: Scope, work: None) -> Retired:
        facts = store.facts(scope.project, scope.subject, include_retired=True, as_of=None)
        conflicts = store.conflicts(scope.project, scope.subject, ConflictStatus.OPEN)
        return Retired(facts, conflicts)

    def decide(self, snapshot: Retired, context: Context) -> PruneResult:
        decided = decide_prune(
            snapshot.facts,
            snapshot.open_conflicts,
            context.now,
            half_life_days=self.half_life_days,
            floor=self.floor,
            cap=self.cap,
        )
        capped = any(k.reason == KEPT_CAPPED for k in decided.kept)
        return PruneResult(decided.plan, capped=capped, kept=decided.kept)


@dataclass(frozen=True)
class Pruned:
    project: str
    subject: str
    fact_id: str
    weight: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "subject": self.subject,
            "fact_id": self.fact_id,
            "weight": round(self.weight, 6),
        }


@dataclass
class PruneReport:
    """What one prune run did, or would do (`dry_run`)."""

    half_life_days: float
    floor: float
    dry_run: bool = False
    scopes: int = 0  # scopes holding a tombstone, looked at
    pruned: list[Pruned] = field(default_factory=list)
    kept: Counter[str] = field(default_factory=Counter)  # tombstones kept, by reason
    errors: list[str] = field(default_factory=list)  # scopes whose plan was refused

    @property
    def capped(self) -> int:
        return self.kept[KEPT_CAPPED]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": PASS_NAME,
            "dry_run": self.dry_run,
            "half_life_days": self.half_life_days,
            "floor": self.floor,
            "scopes": self.scopes,
            "pruned": len(self.pruned),
            "kept": dict(sorted(self.kept.items())),
            "capped": self.capped,
            "facts": [p.to_dict() for p in self.pruned],
            "errors": list(self.errors),
        }


def run_prune(
    store: Store,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
    half_life_days: float = HALF_LIFE_DAYS,
    floor: float = PRUNE_FLOOR,
    max_prunes: int | None = MAX_PRUNES_PER_RUN,
) -> PruneReport:
    """Prune the tombstones of every scope of `projects` (empty: every project), or of one
    `subject`, deleting at most `max_prunes` in all (None: no cap)."""
    check_knobs(half_life_days, floor)  # bad knobs fail before anything is read
    report = PruneReport(half_life_days, floor, dry_run=dry_run)
    budget = max_prunes
    with store.dry_run() if dry_run else nullcontext():
        for scope in walked_scopes(store.tombstone_scopes(list(projects)), subject):
            report.scopes += 1
            pass_ = Prune(budget, report.half_life_days, report.floor)
            try:
                result = run_pass(store, pass_, scope, None, now=now(), new_id=new_id)
            except DistillError as exc:  # this scope's plan was rolled back; the others go on
                report.errors.append(refused("prune", scope, exc))
                continue
            assert isinstance(result, PruneResult)
            pruned = [
                Pruned(scope.project, scope.subject, a.fact.id, a.weight)
                for a in result.plan.actions
                if isinstance(a, PruneFact)
            ]
            report.pruned.extend(pruned)
            report.kept.update(k.reason for k in result.kept)
            if budget is not None:
                budget -= len(pruned)
    return report
