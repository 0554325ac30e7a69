"""The procedures pass: a subject's action events counted into procedures, scope by scope.

`PromoteProcedures` is a `Pass`: under a subject's lock it reads the subject's action events
and its procedures (two store calls), `core.procedures.decide_procedures` recounts every pair
and promotes candidates at their support, and the one applier validates (ids, the lifecycle)
and writes the plan with an audit entry per change. `run_procedures` walks the scopes that
hold an action event (one store call finds them), within a project allowlist or one subject;
a dry run is the same walk inside a transaction the store always rolls back.

Every run counts the whole history again, which is what makes a re-run change nothing; a
subject's action events are a few thousand rows at most, read in one query.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core.cortex_plan import PROCEDURES_PASS, WriteProcedure
from distill.core.models import Event
from distill.core.passes import Context, PassResult, Scope
from distill.core.patterns import Procedure
from distill.core.procedures import CREATED, PROMOTED, decide_procedures
from distill.errors import DistillError
from distill.passes import refused, run_pass, walked_scopes
from distill.ports import Store


@dataclass(frozen=True)
class History:
    events: list[Event]
    procedures: list[Procedure]


class PromoteProcedures:
    """`distill.passes.Pass` for one subject's procedures."""

    name: str = PROCEDURES_PASS
    # A subject's procedures are a handful of rows: all are recounted on each run.
    cap: int | None = None

    def load(self, store: Store, scope: Scope, work: None) -> History:
        return History(
            store.action_events(scope.project, scope.subject),
            store.procedures(scope.project, scope.subject),
        )

    def decide(self, snapshot: History, context: Context) -> PassResult:
        scope = self.scope
        return decide_procedures(
            scope.project, scope.subject, snapshot.events, snapshot.procedures, context.now
        )

    def __init__(self, scope: Scope) -> None:
        self.scope = scope


@dataclass
class ProceduresReport:
    """What one procedures run did, or would do (`dry_run`)."""

    dry_run: bool = False
    scopes: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    changes: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def created(self) -> int:
        return self.outcomes[CREATED]

    @property
    def promoted(self) -> int:
        return self.outcomes[PROMOTED]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": PROCEDURES_PASS,
            "dry_run": self.dry_run,
            "scopes": self.scopes,
            "procedures_created": self.created,
            "procedures_promoted": self.promoted,
            "outcomes": dict(sorted(self.outcomes.items())),
            "changes": list(self.changes),
            "errors": list(self.errors),
        }


def run_procedures(
    store: Store,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
) -> ProceduresReport:
    """Count the procedures of every scope of `projects` (empty: every project) that holds
    an action event, or of one `subject`."""
    report = ProceduresReport(dry_run=dry_run)
    with store.dry_run() if dry_run else nullcontext():
        for scope in walked_scopes(store.action_scopes(list(projects)), subject):
            report.scopes += 1
            try:
                result = run_pass(
                    store, PromoteProcedures(scope), scope, None, now=now(), new_id=new_id
                )
            except DistillError as exc:  # this scope's plan was rolled back; the others go on
                report.errors.append(refused("procedures", scope, exc))
                continue
            report.outcomes.update(result.outcomes)
            for action in result.plan.actions:
                if isinstance(action, WriteProcedure):
                    report.changes.append(change(action))
    return report


def change(action: WriteProcedure) -> dict[str, Any]:
    p = action.after
    return {
        "project": p.project,
        "subject": p.subject,
        "id": p.id,
        "procedure": p.name,
        "status": str(p.status),
        "was": None if action.before is None else str(action.before.status),
        "support": p.support,
        "reason": action.reason,
    }
