"""`Scheduler`: runs the scheduled passes that are due, one at a time, under a lease.

The worker calls `run_next` when it has no job to do (work before timers): it makes sure
every project has a row for every enabled pass (`schedule_add`, new ones due at once), reads
the schedule, and of the passes that may run now (`core.schedule.runnable`; the oldest due
first) runs the first whose lease it gets, then writes the run's end. One run per call, so
that new jobs are taken between two scheduled passes.

Isolation: whatever a pass raises (its own configuration error too) is that pass's run of
that project failing: recorded on its row (health, last error, a retry after a pause) and
logged with the scope; the other passes and projects, and the worker, carry on. Only the
schedule's own store calls raise to the worker (a database that went away), which pauses
and polls again as it does for jobs.

The cortex gate: a pass with `every_cycles` N > 1 is considered on every Nth call only, so
that the slow passes are looked at less often than the worker cycles.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from distill.core.schedule import (
    PROJECT_SCOPE,
    Finish,
    Outcome,
    ScheduleRow,
    compact,
    due_time,
    failed,
    finish,
    runnable,
)
from distill.log_scope import scoped
from distill.scheduled_passes import PASSES, PassSettings, ScheduledPass

if TYPE_CHECKING:
    from distill.memory import Memory

log = logging.getLogger("distill.schedule")

# How often the scheduler lists the projects to give new ones their rows: a new project's
# passes wait at most this long (seconds) to be seen; listing them on every idle poll would
# cost a query per poll for nothing.
PROJECTS_EVERY_S = 60.0


class ScheduleSettings(BaseModel):
    """The schedule's settings: on or off, the pause before an unclean run is retried, how
    long a lease holds a pass, and each pass's own settings by name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    # An unclean run is retried after this many minutes (an error: doubled per error in a
    # row, up to the pass's interval). 15 min: the seed's timer; a provider's bad minute or
    # a database restart is over by then, and a pass that keeps failing costs 4 runs an hour.
    retry_minutes: float = Field(15.0, gt=0)
    # How long a worker holds a pass it runs: past it, another worker may take the pass (the
    # first one died). 60 min: well above the longest pass measured (the judge at its
    # default budget of 100 calls, about 10 min with a slow provider).
    lease_minutes: float = Field(60.0, gt=0)
    passes: dict[str, PassSettings] = Field(default_factory=dict)

    @field_validator("passes")
    @classmethod
    def _known(cls, value: dict[str, PassSettings]) -> dict[str, PassSettings]:
        unknown = sorted(set(value) - set(PASSES))
        if unknown:
            raise ValueError(
                f"unknown pass(es) {', '.join(unknown)}; the passes are {', '.join(PASSES)}"
            )
        return value

    def of(self, name: str) -> PassSettings:
        return self.passes.get(name) or PassSettings()


@dataclass(frozen=True)
class Ran:
    """One scheduled run, as the worker logs it and the metrics count it."""

    row: ScheduleRow
    outcome: Outcome
    finish: Finish
    seconds: float
    kept: bool  # False: the lease ran out during the run and the end was not written


class Scheduler:
    """See the module docstring. `settings` may be replaced between calls (a reload)."""

    def __init__(
        self,
        memory: Memory,
        settings: ScheduleSettings | Callable[[], ScheduleSettings],
        owner: str,
        registry: Mapping[str, ScheduledPass] | None = None,
        on_run: Callable[[Ran], None] | None = None,
    ) -> None:
        self.memory = memory
        self.store = memory.store
        self._settings = settings if callable(settings) else (lambda: settings)
        self.owner = owner
        self.registry = PASSES if registry is None else registry
        self.on_run = on_run
        self.cycles = 0
        self._listed_at: float | None = None
        self._listed_for: tuple[str, ...] = ()
        self._known: set[str] = set()  # projects given their rows since the last listing
        self._seen: set[str] = set()  # projects the worker saw since (`saw`)

    @property
    def settings(self) -> ScheduleSettings:
        return self._settings()

    def enabled(self, settings: ScheduleSettings) -> dict[str, PassSettings]:
        """The passes the settings turn on, with their settings; a pass that needs a model
        is left out when the worker has none (it is not due, rather than failing daily)."""
        if not settings.enabled:
            return {}
        no_model = self.memory.llm is None
        return {
            name: settings.of(name)
            for name, entry in self.registry.items()
            if entry.enabled(settings.of(name)) and not (entry.needs_model and no_model)
        }

    def due(self, now: datetime | None = None) -> list[ScheduleRow]:
        """The rows that may run now, the oldest due first (this cycle's cortex gate aside)."""
        now = now or self.memory.clock.now()
        passes = self.enabled(self.settings)
        found = [
            row
            for row in self.store.schedule()
            if row.pass_name in passes
            and passes[row.pass_name].allows(row.project)
            and runnable(row, _interval(passes[row.pass_name]), now)
        ]
        found.sort(key=lambda r: (due_time(r, _interval(passes[r.pass_name])), r.key))
        return found

    def run_next(self, stop: threading.Event | None = None) -> Ran | None:
        """Run one due pass (see the module docstring); None when none was due and free."""
        self.cycles += 1
        settings = self.settings
        passes = self.enabled(settings)
        if not passes:
            return None
        now = self.memory.clock.now()
        self._add_rows(passes, now)
        gated = {n for n, s in passes.items() if self.cycles % s.every_cycles == 0}
        lease = timedelta(minutes=settings.lease_minutes)
        for row in self.due(now):
            if row.pass_name not in gated:
                continue
            if stop is not None and stop.is_set():
                return None
            if self.store.take_lease(row, self.owner, now, now + lease):
                return self._run(row, passes[row.pass_name], settings)
        return None

    def saw(self, projects: Iterable[str]) -> None:
        """Projects the worker just consolidated jobs of: a new one gets its rows at the next
        call, without waiting for the next listing of every project."""
        self._seen.update(p for p in projects if p not in self._known)

    def _add_rows(self, passes: Mapping[str, PassSettings], now: datetime) -> None:
        names = tuple(sorted(passes))
        moment = time.monotonic()
        fresh = self._listed_at is not None and moment - self._listed_at < PROJECTS_EVERY_S
        if fresh and names == self._listed_for:
            projects = sorted(self._seen)
        else:
            projects = self.store.schedule_projects()
            self._listed_at, self._listed_for = moment, names
            self._known = set()
        for project in projects:
            wanted = [n for n in names if passes[n].allows(project)]
            self.store.schedule_add(project, PROJECT_SCOPE, wanted, now)
            self._known.add(project)
        self._seen.clear()

    def _run(self, row: ScheduleRow, settings: PassSettings, all_settings: ScheduleSettings) -> Ran:
        entry = self.registry[row.pass_name]
        scope = f"{row.project}/{row.scope}" if row.scope else row.project
        started = time.monotonic()
        with scoped(project=row.project, subject=row.scope or None, pass_name=row.pass_name):
            log.info("pass %s of %s: starting", row.pass_name, scope)
            try:
                outcome = entry.run(self.memory, row.project, settings)
            except Exception as exc:  # one pass of one scope failing never stops the others
                log.exception("pass %s of %s failed", row.pass_name, scope)
                outcome = failed(exc)
        seconds = time.monotonic() - started
        now = self.memory.clock.now()
        retry = timedelta(minutes=all_settings.retry_minutes)
        end = finish(row, outcome, now, _interval(settings), retry)
        report = {**compact(outcome.report), "soft": list(outcome.soft)}
        if outcome.stop is not None:
            report["stopped"] = {"why": outcome.stop, "detail": outcome.detail}
        kept = self.store.finish_run(row, self.owner, now, end, report)
        if not kept:
            log.warning(
                "pass %s of %s: the lease ran out during the run; its end is not recorded "
                "(raise schedule.lease_minutes above the pass's run time)",
                row.pass_name,
                scope,
                extra=_fields(row),
            )
        log.info(
            "pass %s of %s: %s in %.2f s, health %s",
            row.pass_name,
            scope,
            "clean" if outcome.clean else f"stopped ({outcome.stop})",
            seconds,
            end.health,
            extra=_fields(row),
        )
        ran = Ran(row, outcome, end, seconds, kept)
        if self.on_run is not None:
            self.on_run(ran)
        return ran


def _interval(settings: PassSettings) -> timedelta:
    return timedelta(hours=settings.interval_hours)


def _fields(row: ScheduleRow) -> dict[str, Any]:
    """The structured fields of a log line about a scheduled run."""
    return {"project": row.project, "scope": row.scope, "pass_name": row.pass_name}
