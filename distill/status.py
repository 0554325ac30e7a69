"""`Status`: what a store holds, as `distill status` and `Memory.status` show it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
