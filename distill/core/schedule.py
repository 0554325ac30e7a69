"""When a scheduled pass runs, and what its run leaves behind: the worker's schedule as values.

A scheduled pass (dedupe, judge, summarise, prune, promote_rules, and whichever a registry
entry adds) runs per scope on its own interval. What the database keeps per (project, scope,
pass) is a `ScheduleRow`; what decides is here, pure:

* **Due**: a pass is due `interval` after its last *clean* run (`last_clean_at`), or from
  the moment its scope was first seen (`due_at` of a new row is its creation). The due time
  is counted from the last clean run, not from the last due time, so a pass whose time came
  while no worker ran is run **once** shortly after a worker starts (catch-up on boot), then
  `interval` after that run: never once per missed interval.
* **Checkpoint only after a clean run**: an error, a cap or a budget stop leaves
  `last_clean_at` where it was, so the pass stays due; it is retried after a pause
  (`retry_at`) so that a pass that keeps failing does not run in a loop. A fail-soft tier
  (a model that is down, no model at all) is named in the report and does not block the
  checkpoint of the deterministic work: the pass's own cursor keeps what it skipped.
* **Health**: `ok` after a clean run with nothing skipped; `degraded` after a clean run that
  skipped a fail-soft tier, after a cap or budget stop (more work waits), or after fewer
  than `FAILING_AFTER` errors in a row; `failing` after `FAILING_AFTER` errors in a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

Health = Literal["ok", "degraded", "failing"]
Stop = Literal["error", "cap", "budget"]

# Errors in a row before a pass is `failing`: one or two may be a blip (a database restart,
# a provider's bad minute) that the retry absorbs; three in a row at growing pauses is a
# pattern someone must look at.
FAILING_AFTER = 3
# Scopes-wide pass: the scope of a row of a pass run per project.
PROJECT_SCOPE = ""


@dataclass(frozen=True)
class Trigger:
    """When the worker extracts and adjudicates a subject's new events: once its pending job
    holds `min_events` events, or once the oldest has waited `max_wait`; `distill
    consolidate` (force) takes every pending job whatever it holds."""

    min_events: int = 1
    max_wait: timedelta = timedelta(minutes=15)


@dataclass(frozen=True)
class ScheduleRow:
    """One scheduled pass of one scope, as the database keeps it."""

    project: str
    scope: str  # PROJECT_SCOPE, or the subject of a pass run per subject
    pass_name: str
    generation: int  # runs that ended; a lease is taken for the generation read
    created_at: datetime
    due_at: datetime  # the due time written by the last run (or the row's creation)
    retry_at: datetime | None = None  # after an unclean run: not before
    last_run_at: datetime | None = None
    last_clean_at: datetime | None = None  # the checkpoint
    last_report: Mapping[str, Any] | None = None
    health: Health = "ok"
    last_error: str | None = None
    failures: int = 0  # errors in a row
    runs: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.project, self.scope, self.pass_name)


def due_time(row: ScheduleRow, interval: timedelta) -> datetime:
    """When the pass is (or was) due: `interval` after the last clean run, with the interval
    in force now (a shorter one set by a reload applies at once); before any clean run, the
    due time the row holds."""
    if row.last_clean_at is None:
        return row.due_at
    return row.last_clean_at + interval


def is_due(row: ScheduleRow, interval: timedelta, now: datetime) -> bool:
    """Whether the pass's time has come (a retry pause or a lease may still hold it back)."""
    return due_time(row, interval) <= now


def leased(row: ScheduleRow, now: datetime) -> bool:
    """Whether a worker holds the pass now."""
    return (
        row.lease_owner is not None
        and row.lease_expires_at is not None
        and row.lease_expires_at > now
    )


def runnable(row: ScheduleRow, interval: timedelta, now: datetime) -> bool:
    """Due, past any retry pause, and held by nobody: a worker may take its lease."""
    if not is_due(row, interval, now) or leased(row, now):
        return False
    return row.retry_at is None or row.retry_at <= now


@dataclass(frozen=True)
class Outcome:
    """What one run of a scheduled pass says about itself: its report (counts only, fit to be
    kept), whether and why it stopped short (`stop`), the fail-soft tiers it skipped
    (`soft`, each named with why), and the counts the metrics add up."""

    report: Mapping[str, Any]
    stop: Stop | None = None
    detail: str | None = None  # why it stopped: the error, the cap, the budget note
    soft: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return self.stop is None


def failed(error: BaseException | str) -> Outcome:
    """The outcome of a run that raised: nothing applied that the pass did not checkpoint."""
    detail = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return Outcome(report={"error": detail}, stop="error", detail=detail)


@dataclass(frozen=True)
class Finish:
    """What a run writes back to its row."""

    clean_at: datetime | None  # None: the checkpoint stays where it was
    due_at: datetime
    retry_at: datetime | None
    health: Health
    error: str | None
    failures: int


def finish(
    row: ScheduleRow,
    outcome: Outcome,
    now: datetime,
    interval: timedelta,
    retry_pause: timedelta,
) -> Finish:
    """The row after a run (see the module docstring). An error's retry pause doubles with
    each error in a row, up to the interval; a cap or budget stop is retried after one pause
    (the rest of the work waits there)."""
    if outcome.clean:
        return Finish(
            clean_at=now,
            due_at=now + interval,
            retry_at=None,
            health="degraded" if outcome.soft else "ok",
            error="; ".join(outcome.soft) or None,
            failures=0,
        )
    due = due_time(row, interval)
    if outcome.stop == "error":
        failures = row.failures + 1
        pause = min(retry_pause * 2 ** min(failures - 1, 30), max(interval, retry_pause))
        return Finish(
            clean_at=None,
            due_at=due,
            retry_at=now + pause,
            health="failing" if failures >= FAILING_AFTER else "degraded",
            error=outcome.detail,
            failures=failures,
        )
    return Finish(
        clean_at=None,
        due_at=due,
        retry_at=now + retry_pause,
        health="degraded",
        error=outcome.detail,
        failures=row.failures,
    )


def compact(report: Mapping[str, Any]) -> dict[str, Any]:
    """A report fit to be kept in the schedule: its counts and short notes, each list of
    items (groups, facts, rules, refusals: texts an erase must be able to reach) replaced by
    how many it held. Lists of strings (the notes: stopped, errors) are kept."""
    kept: dict[str, Any] = {}
    for key, value in report.items():
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            kept[key] = len(value)
        elif isinstance(value, Mapping):
            kept[key] = compact(value)
        else:
            kept[key] = value
    return kept
