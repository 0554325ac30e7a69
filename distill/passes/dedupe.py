"""The dedupe pass over stored memories, scope by scope (`core.dedupe` decides).

`Dedupe` is a `Pass` like adjudication: under a subject's lock it reads the subject's active
facts in one call, `core.dedupe.dedupe` plans the merges, and the one applier validates and
writes them (pinned facts untouchable, a receipt for every retired memory). `run_dedupe`
walks the scopes that hold two or more active memories (one store call finds them), within
a project allowlist, with one cap for the whole run; a dry run is the same walk inside a
transaction the store always rolls back, so its report is the plan a real run would apply.

A scope whose plan cannot be applied (a memory edited between the read and the write, say)
is rolled back alone and named in the report; the run goes on with the next scope.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core.dedupe import PASS_NAME, DedupeResult, Group, dedupe
from distill.core.models import Fact, FactKind
from distill.core.passes import Context, Scope
from distill.errors import DistillError
from distill.passes import run_pass
from distill.ports import Store

log = logging.getLogger("distill.dedupe")

# Memories one run retires at most, across every scope (the iii seed's safety cap,
# `max_supersedes_per_run`); the rest wait for the next run.
MAX_SUPERSEDES_PER_RUN = 200


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
        return sum(g.group.merged == "merged" for g in self.groups)

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

    def __init__(self, cap: int | None) -> None:
        self.cap = cap

    def load(self, store: Store, scope: Scope, work: None) -> list[Fact]:
        facts = store.facts(scope.project, scope.subject, include_retired=False, as_of=None)
        return [f for f in facts if f.kind is FactKind.MEMORY]

    def decide(self, snapshot: list[Fact], context: Context) -> DedupeResult:
        return dedupe(snapshot, context.now, self.cap)


def run_dedupe(
    store: Store,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
    max_supersedes: int | None = MAX_SUPERSEDES_PER_RUN,
) -> DedupeReport:
    """Dedupe the memories of every scope of `projects` (empty: every project), or of one
    `subject`, retiring at most `max_supersedes` memories in all (None: no cap)."""
    report = DedupeReport(dry_run=dry_run)
    if dry_run:
        with store.dry_run():
            _walk(store, now, new_id, projects, subject, max_supersedes, report)
    else:
        _walk(store, now, new_id, projects, subject, max_supersedes, report)
    return report


def _walk(
    store: Store,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    projects: Sequence[str],
    subject: str | None,
    budget: int | None,
    report: DedupeReport,
) -> None:
    scopes = [
        (p, s) for p, s in store.memory_scopes(list(projects)) if subject is None or s == subject
    ]
    for project, name in scopes:
        report.scopes += 1
        scope = Scope(project, name)
        try:
            result = run_pass(store, Dedupe(budget), scope, None, now=now(), new_id=new_id)
        except DistillError as exc:  # this scope's plan was rolled back; the others go on
            log.warning("dedupe of %s/%s not applied: %s", project, name, exc)
            report.errors.append(f"{project}/{name}: {type(exc).__name__}: {exc}")
            continue
        assert isinstance(result, DedupeResult)
        report.groups.extend(ScopedGroup(project, name, g) for g in result.groups)
        report.retired += result.retired
        report.capped += sum(len(g.capped) for g in result.groups)
        if budget is not None:
            budget -= result.retired
