"""The store's reads for the procedures and topics passes, written once over named SQL
(their writes are plan actions: `cortex_rows.write_cortex`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from distill.adapters.store import rows
from distill.adapters.store.cortex_rows import mention_from_row, procedure_from_row, topic_from_row
from distill.adapters.store.sql_base import SqlBase
from distill.core.models import Event
from distill.core.patterns import Mention, Procedure, ProcedureStatus, Topic


class SqlCortex(SqlBase):
    def _projects(self, projects: Sequence[str]) -> Any:
        return self._array(list(projects)) if projects else None

    def action_events(self, project: str, subject: str) -> list[Event]:
        """The subject's events that record an action, in (occurred_at, id) order."""
        params = {"project": project, "subject": subject}
        return [rows.event_from_row(r, self.codec) for r in self._read("action_events", params)]

    def action_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope with an action event, in order."""
        found = self._read("action_scopes", {"projects": self._projects(projects)})
        return [(r["project"], r["subject"]) for r in found]

    def procedures(
        self, project: str, subject: str | None, status: ProcedureStatus | None = None
    ) -> list[Procedure]:
        params = {
            "project": project,
            "subject": subject,
            "status": None if status is None else str(status),
        }
        found = self._read("procedures_of", params)
        return [procedure_from_row(r, self.codec) for r in found]

    def event_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope with an event, in order."""
        found = self._read("event_scopes", {"projects": self._projects(projects)})
        return [(r["project"], r["subject"]) for r in found]

    def events_recorded_after(
        self, project: str, subject: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[tuple[Event, bool]]:
        """The subject's events recorded after `after` (recorded_at, id), in that order, at
        most `limit`, each with whether a job holding it is still to run."""
        params = {
            "project": project,
            "subject": subject,
            "after_time": self.codec.time(after[0]) if after else None,
            "after_id": self.codec.id(after[1]) if after else None,
            "limit": limit,
        }
        return [
            (rows.event_from_row(r, self.codec), bool(r["waiting"]))
            for r in self._read("topic_events_after", params)
        ]

    def mentions(self, project: str, subject: str) -> list[Mention]:
        params = {"project": project, "subject": subject}
        return [mention_from_row(r, self.codec) for r in self._read("mentions_of", params)]

    def topics(
        self, project: str, subject: str | None, include_retired: bool = False
    ) -> list[Topic]:
        params = {"project": project, "subject": subject, "include_retired": include_retired}
        return [topic_from_row(r, self.codec) for r in self._read("topics_of", params)]
