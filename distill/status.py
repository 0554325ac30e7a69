"""`Status`: what a store holds, as `distill status` and `Memory.status` show it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from distill.core.schedule import ScheduleRow
from distill.ports import StoreCounts


@dataclass(frozen=True)
class Status:
    counts: StoreCounts
    embedder: str
    database: str
    llm: str = "none"
    at: datetime | None = None  # when it was read (how old running claims are)
    # (project, subject) of the subjects whose derived facts drift (`core.drift`).
    unstable: tuple[tuple[str, str], ...] = ()
    schedule: tuple[ScheduleRow, ...] = ()  # the worker's scheduled passes (distill.scheduler)

    def to_dict(self) -> dict[str, Any]:
        usage = self.counts.llm_usage
        return {
            "database": self.database,
            "embedder": self.embedder,
            "llm": self.llm,
            "llm_usage": {
                "calls": usage.calls,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
            },
            "events": self.counts.events,
            "facts": self.counts.facts_by_status,
            "jobs": self.counts.jobs_by_status,
            "open_conflicts": self.counts.open_conflicts,
            "open_conflicts_by_kind": self.counts.open_conflicts_by_kind,
            "consolidations": self.counts.consolidations,
            "facts_consolidated": self.counts.facts_consolidated,
            "derive": {
                "cycles": self.counts.derive_cycles,
                "facts_derived": self.counts.facts_derived,
                "facts_invalidated": self.counts.facts_invalidated,
            },
            "procedures": dict(self.counts.procedures_by_status),
            "topics": dict(self.counts.topics_by_status),
            "unstable_subjects": [{"project": p, "subject": s} for p, s in self.unstable],
            "failed_jobs": [
                {
                    "id": j.id,
                    "project": j.project,
                    "subject": j.subject,
                    "attempts": j.attempts,
                    "error": j.error,
                }
                for j in self.counts.failed_jobs
            ],
            "running_jobs": [
                {
                    "id": j.id,
                    "project": j.project,
                    "subject": j.subject,
                    "owner": j.owner,
                    "claimed_at": j.claimed_at.isoformat() if j.claimed_at else None,
                    "age": _age(self.at, j.claimed_at),
                }
                for j in self.counts.running_jobs
            ],
            "schedule": [_scheduled(r, self.at) for r in self.schedule],
        }


def _scheduled(row: ScheduleRow, now: datetime | None) -> dict[str, Any]:
    """A scheduled pass as `status` shows it: when it ran and is due, its health and last
    report (counts only), and who holds it now."""

    def at(value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    held = row.lease_owner if row.lease_expires_at and now and row.lease_expires_at > now else None
    return {
        "project": row.project,
        "scope": row.scope,
        "pass": row.pass_name,
        "runs": row.runs,
        "last_run_at": at(row.last_run_at),
        "last_clean_at": at(row.last_clean_at),
        "due_at": at(row.due_at),
        "retry_at": at(row.retry_at),
        "health": row.health,
        "last_error": row.last_error,
        "last_report": dict(row.last_report) if row.last_report is not None else None,
        "running_on": held,
    }


def _age(now: datetime | None, since: datetime | None) -> str:
    """How long ago, as a person reads it: 42 s, 3 min, 2 h."""
    if now is None or since is None:
        return "?"
    seconds = max((now - since).total_seconds(), 0.0)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"
