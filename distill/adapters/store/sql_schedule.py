"""The worker's schedule over named SQL, for every backend (`distill.ports.ScheduleStore`).

A lease is one conditional UPDATE (`schedule_lease`): it names the generation the worker read
and succeeds only while nobody holds the row, so of several workers, on several machines,
one at most runs a pass of a scope for one due time: SQLite writes one transaction at a
time, and PostgreSQL's row lock makes the second UPDATE wait for the first, then find the
lease taken. Finishing is conditional on the lease and the generation in the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from distill.adapters.store import rows
from distill.adapters.store.sql_base import SqlBase
from distill.core.models import Event
from distill.core.schedule import Finish, ScheduleRow


class SqlSchedule(SqlBase):
    """The `ScheduleStore` part of a SQL store."""

    def schedule_projects(self) -> list[str]:
        return [str(r["project"]) for r in self._read("schedule_projects", {})]

    def schedule_add(
        self, project: str, scope: str, pass_names: Sequence[str], now: datetime
    ) -> None:
        if not pass_names:
            return
        at = self.codec.time(now)
        params = [
            {"project": project, "scope": scope, "pass_name": name, "now": at}
            for name in pass_names
        ]
        with self._tx() as db:
            self._many(db, "schedule_add", params)

    def schedule(self, project: str | None = None) -> list[ScheduleRow]:
        return [self._schedule_row(r) for r in self._read("schedule_rows", {"project": project})]

    def take_lease(self, row: ScheduleRow, owner: str, now: datetime, until: datetime) -> bool:
        params = {
            **self._schedule_key(row),
            "owner": owner,
            "now": self.codec.time(now),
            "expires_at": self.codec.time(until),
        }
        return self._write("schedule_lease", params) == 1

    def finish_run(
        self, row: ScheduleRow, owner: str, now: datetime, finish: Finish, report: dict[str, Any]
    ) -> bool:
        c = self.codec
        params = {
            **self._schedule_key(row),
            "owner": owner,
            "ran_at": c.time(now),
            "clean_at": c.time(finish.clean_at),
            "due_at": c.time(finish.due_at),
            "retry_at": c.time(finish.retry_at),
            "report": json.dumps(report, sort_keys=True, default=str),
            "health": finish.health,
            "error": finish.error,
            "failures": finish.failures,
        }
        return self._write("schedule_finish", params) == 1

    def release_lease(self, row: ScheduleRow, owner: str) -> None:
        self._write("schedule_release", {**self._schedule_key(row), "owner": owner})

    def force_due(self, project: str, pass_name: str | None, now: datetime) -> int:
        params = {"project": project, "pass_name": pass_name, "now": self.codec.time(now)}
        return self._write("schedule_force", params)

    def backlog(self, project: str) -> int:
        return int(self._read("backlog_events", {"project": project})[0]["n"])

    def waiting_events(self, project: str, subject: str, limit: int) -> list[Event]:
        params = {"project": project, "subject": subject, "limit": limit}
        return [rows.event_from_row(r, self.codec) for r in self._read("waiting_events", params)]

    def _schedule_key(self, row: ScheduleRow) -> dict[str, Any]:
        return {
            "project": row.project,
            "scope": row.scope,
            "pass_name": row.pass_name,
            "generation": row.generation,
        }

    def _schedule_row(self, r: Any) -> ScheduleRow:
        t = self.codec.read_time
        report = r["last_report"]
        if isinstance(report, str | bytes):
            report = json.loads(report)
        return ScheduleRow(
            project=r["project"],
            scope=r["scope"],
            pass_name=r["pass_name"],
            generation=int(r["generation"]),
            created_at=t(r["created_at"]),
            due_at=t(r["due_at"]),
            retry_at=t(r["retry_at"]),
            last_run_at=t(r["last_run_at"]),
            last_clean_at=t(r["last_clean_at"]),
            last_report=report,
            health=r["health"],
            last_error=r["last_error"],
            failures=int(r["failures"]),
            runs=int(r["runs"]),
            lease_owner=r["lease_owner"],
            lease_expires_at=t(r["lease_expires_at"]),
        )
