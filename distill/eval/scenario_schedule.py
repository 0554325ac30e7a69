"""The scenario steps of the worker's schedule (SCENARIOS 38 and 40 through the schedule).

Action `scheduled`: run the scheduled passes that are due now, one after another, as a
worker's idle polls would (`distill.scheduler`), until none is; `passes` names the passes of
the registry to run (default: every one), `settings` gives their settings by name (as the
configuration file's `[schedule.passes.<name>]`), and `fail` makes a pass raise a distill
error instead of running (`{"dedupe": "StoreError"}`: the database went away mid-pass).
Check `schedule`: a pass's row for a project: whether it is `due` now, its `health`, whether
its last run was `checkpointed` (the checkpoint is the last run), its `runs`, what its last
error says (`error_contains`), its last report's counters (`report`), and what the last
`scheduled` step ran (`ran`, a list of pass names).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from distill import errors
from distill.core.schedule import Outcome, ScheduleRow, is_due
from distill.eval.scenario_checks import CaseFailed, expect
from distill.memory import Memory
from distill.scheduled_passes import PASSES, PassSettings, ScheduledPass
from distill.scheduler import Scheduler, ScheduleSettings

SCHEDULE_ACTIONS: dict[str, set[str]] = {"scheduled": {"passes", "settings", "fail"}}
MAX_RUNS = 100  # scheduled runs one step may make: a schedule that never settles is a failure


class ScheduleSteps:
    """`do_scheduled` and `check_schedule` (see the module docstring)."""

    mem: Memory
    scheduled_settings: ScheduleSettings | None = None
    scheduled_ran: list[str] | None = None

    def do_scheduled(self, step: Mapping[str, Any]) -> None:
        names = step.get("passes", list(PASSES))
        failing = step.get("fail", {})
        registry = {name: _failing(PASSES[name], failing.get(name)) for name in names}
        passes = {n: PassSettings.model_validate(s) for n, s in step.get("settings", {}).items()}
        # Every pass named is on, whatever its default: the case says which to run.
        passes = {
            n: passes.get(n, PassSettings()).model_copy(update={"enabled": True}) for n in names
        }
        settings = ScheduleSettings(passes=passes)
        self.scheduled_settings = settings
        scheduler = Scheduler(self.mem, settings, "scenario", registry=registry)
        ran: list[str] = []
        while (done := scheduler.run_next()) is not None:
            ran.append(done.row.pass_name)
            if len(ran) > MAX_RUNS:
                raise CaseFailed(f"the schedule did not settle after {MAX_RUNS} runs")
        self.scheduled_ran = ran

    def check_schedule(self, step: Mapping[str, Any]) -> None:
        if "ran" in step:
            expect("passes the last `scheduled` step ran", self.scheduled_ran, step["ran"])
        if "pass" not in step:
            return
        name, project = step["pass"], step.get("project", "default")
        row = self._row(name, project)
        label = f"schedule of {name} in {project}"
        if "due" in step:
            settings = self.scheduled_settings or ScheduleSettings()
            interval = timedelta(hours=settings.of(name).interval_hours)
            expect(f"{label}: due", is_due(row, interval, self.mem.clock.now()), step["due"])
        if "health" in step:
            expect(f"{label}: health", row.health, step["health"])
        if "checkpointed" in step:
            checkpointed = row.last_clean_at is not None and row.last_clean_at == row.last_run_at
            expect(f"{label}: last run checkpointed", checkpointed, step["checkpointed"])
        if "runs" in step:
            expect(f"{label}: runs", row.runs, step["runs"])
        wanted = step.get("error_contains")
        if wanted is not None and wanted not in (row.last_error or ""):
            raise CaseFailed(f"{label}: the last error {row.last_error!r} does not say {wanted!r}")
        report = row.last_report or {}
        for key, want in step.get("report", {}).items():
            expect(f"{label}: last report's {key}", report.get(key), want)

    def _row(self, name: str, project: str) -> ScheduleRow:
        rows = self.mem.store.schedule(project)
        found = [r for r in rows if r.pass_name == name]
        if not found:
            raise CaseFailed(f"no schedule row for {name} in {project}")
        return found[0]


def _failing(entry: ScheduledPass, error: str | None) -> ScheduledPass:
    """The pass, or one that raises the named distill error in its place."""
    if error is None:
        return entry
    cls = getattr(errors, error)

    def run(memory: Memory, project: str, settings: PassSettings) -> Outcome:
        raise cls(f"{entry.name} of {project}: {error} (injected by the case)")

    return ScheduledPass(entry.name, run, entry.default_enabled, entry.needs_model)
