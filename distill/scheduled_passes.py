"""The passes the worker runs on a schedule, as a registry: one entry per pass.

Every entry has the same runner signature, `run(memory, project, settings) -> Outcome`: run
the pass over one project with that pass's settings (dry run, caps, budgets), and say what
happened as a `distill.core.schedule.Outcome` (its report, counts only; whether it stopped
short on an error, a cap or a budget; the fail-soft tiers it skipped). Adding a pass to the
schedule is one `register(ScheduledPass(...))` here (or in the pass's own module): the
worker's loop, the schedule's table, `distill status` and the metrics take it from there.

What runs by default, and why (`default_enabled`): the passes that only merge what is
provably the same (`dedupe`) or ask the model to judge new memories (`judge`, fail-soft:
without a model, or with one that is down, it is skipped and named in the report) run every
24 hours per project, the iii seed's default. `summarise` (retires memories into a summary),
`prune` (deletes tombstones for good) and `promote_rules` (adds standing instructions) change
what an agent reads the most, and are turned on by the configuration file. `derive`,
`procedures` and `topics` (no model, and nothing to do unless votes, actions or new events
wait) are on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from distill.core.identity_judge import JUDGE_BATCH
from distill.core.schedule import Outcome, Stop

if TYPE_CHECKING:
    from distill.memory import Memory
    from distill.passes.asking import ModelRun

DAY_HOURS = 24.0  # the iii seed's interval_hours default for every hygiene pass


class PassSettings(BaseModel):
    """One scheduled pass's settings (every field hot-reloads: the next cycle uses them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool | None = None  # None: the pass's own default (`ScheduledPass.default_enabled`)
    interval_hours: float = Field(DAY_HOURS, gt=0)
    dry_run: bool = False  # scheduled runs plan and report, writing nothing
    projects: tuple[str, ...] = ()  # allowlist; empty: every project
    max_changes: int | None = Field(None, ge=0)  # memories retired or deleted per run
    max_calls: int | None = Field(None, ge=0)  # model calls per run
    max_tokens: int | None = Field(None, ge=0)  # model tokens per run
    every_cycles: int = Field(1, ge=1)  # the cortex gate: considered every N worker cycles

    def allows(self, project: str) -> bool:
        return not self.projects or project in self.projects


Runner = Callable[["Memory", str, PassSettings], Outcome]


@dataclass(frozen=True)
class ScheduledPass:
    """A registry entry: the pass's name (its schedule rows', its report's), its runner, and
    the settings it has when the configuration says nothing of it."""

    name: str
    run: Runner
    default_enabled: bool = True
    needs_model: bool = False

    def enabled(self, settings: PassSettings) -> bool:
        return self.default_enabled if settings.enabled is None else settings.enabled


PASSES: dict[str, ScheduledPass] = {}


def register(entry: ScheduledPass) -> ScheduledPass:
    """Add a pass to the schedule (a name taken twice is a programming error)."""
    if entry.name in PASSES:
        raise ValueError(f"a scheduled pass named {entry.name!r} is registered already")
    PASSES[entry.name] = entry
    return entry


# -- what every runner shares ----------------------------------------------------------------------
def _caps(settings: PassSettings, **names: str) -> dict[str, Any]:
    """The per-run caps the settings give, under the pass method's argument names; a cap the
    settings leave unset keeps the method's own default."""
    found = {
        arg: getattr(settings, field)
        for arg, field in names.items()
        if getattr(settings, field) is not None
    }
    return found


def _model_outcome(
    report: ModelRun, as_dict: Mapping[str, Any], counts: Mapping[str, int]
) -> Outcome:
    """A model pass's outcome: a budget stop keeps it due; a provider that stopped the run
    is a fail-soft tier (named; the pass's cursor keeps what was not asked about); more
    memories than one run takes is a cap."""
    budget = [s for s in report.stopped if s.startswith("budget")]
    soft = tuple(f"model: {s}" for s in report.stopped if not s.startswith("budget"))
    stop: Stop | None = None
    detail = None
    if budget:
        stop, detail = "budget", budget[0]
    elif report.capped:
        stop, detail = "cap", "more memories waited than one run takes"
    usage = {"llm_calls": report.usage.calls, "llm_tokens": report.usage.tokens}
    return Outcome(as_dict, stop, detail, soft, {**counts, **usage})


def _no_model(memory: Memory, name: str) -> Outcome | None:
    if memory.llm is not None:
        return None
    note = f"{name}: no model configured (--llm or DISTILL_LLM); skipped"
    return Outcome({"pass": name, "skipped": note}, soft=(note,))


def _errors(errors: list[str]) -> tuple[Stop | None, str | None]:
    return ("error", "; ".join(errors)) if errors else (None, None)


# -- the passes ------------------------------------------------------------------------------------
def run_dedupe(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    caps = _caps(settings, max_supersedes="max_changes")
    report = memory.dedupe(projects=[project], dry_run=settings.dry_run, **caps)
    stop, detail = _errors(report.errors)
    if stop is None and report.capped:
        stop, detail = "cap", f"{report.capped} memories left by the per-run cap"
    return Outcome(report.to_dict(), stop, detail, counts={"merged": report.retired})


def run_judge(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    if (skipped := _no_model(memory, "judge")) is not None:
        return skipped
    caps = _caps(
        settings, max_calls="max_calls", max_tokens="max_tokens", max_changes="max_changes"
    )
    report = memory.judge(projects=[project], dry_run=settings.dry_run, **caps)
    counts = {"merged": report.merged, "superseded": report.superseded}
    return _model_outcome(report, report.to_dict(), counts)


def run_judge_identities(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    if (skipped := _no_model(memory, "judge_identity")) is not None:
        return skipped
    # A call asks about up to JUDGE_BATCH pairs, and a pair retires at most one fact.
    caps = [c for c in (settings.max_changes,) if c is not None]
    if settings.max_calls is not None:
        caps.append(settings.max_calls * JUDGE_BATCH)
    judged = memory.judge_identities(
        projects=[project],
        dry_run=settings.dry_run,
        max_pairs=min(caps) if caps else None,
        max_tokens=settings.max_tokens,
    )
    soft = (f"model: {judged.stopped}",) if judged.stopped else ()
    stop: Stop | None = None
    detail = None
    if judged.budget:
        stop, detail = "budget", judged.budget
    elif judged.capped:
        stop, detail = "cap", f"{judged.capped} open pair(s) left by the per-run cap"
    counts = {  # a `different` verdict changes no fact
        "superseded": judged.same,
        "llm_calls": judged.usage.calls,
        "llm_tokens": judged.usage.tokens,
    }
    return Outcome(judged.to_dict(), stop, detail, soft, counts)


def run_summarise(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    if (skipped := _no_model(memory, "summarise")) is not None:
        return skipped
    caps = _caps(settings, max_calls="max_calls", max_tokens="max_tokens")
    report = memory.summarise(projects=[project], dry_run=settings.dry_run, **caps)
    counts = {"created": len(report.summaries), "superseded": report.consumed}
    return _model_outcome(report, report.to_dict(), counts)


def run_promote_rules(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    if (skipped := _no_model(memory, "promote_rules")) is not None:
        return skipped
    caps = _caps(settings, max_calls="max_calls", max_tokens="max_tokens")
    report = memory.promote_rules(projects=[project], dry_run=settings.dry_run, **caps)
    return _model_outcome(report, report.to_dict(), {"rules": len(report.promoted)})


def run_prune(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    caps = _caps(settings, max_prunes="max_changes")
    report = memory.prune(projects=[project], dry_run=settings.dry_run, **caps)
    stop, detail = _errors(report.errors)
    if stop is None and report.capped:
        stop, detail = "cap", f"{report.capped} tombstones left by the per-run cap"
    return Outcome(report.to_dict(), stop, detail, counts={"pruned": len(report.pruned)})


def run_derive(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    report = memory.derive(projects=[project], dry_run=settings.dry_run)
    stop, detail = _errors(report.errors)
    if stop is None and report.capped:
        stop, detail = "cap", f"votes left by the per-cycle batch in {len(report.capped)} scope(s)"
    counts = {
        "created": report.created,
        "superseded": report.invalidated,
        "drift_alerts": report.drift_alerts,
    }
    return Outcome(report.to_dict(), stop, detail, counts=counts)


def run_procedures(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    report = memory.promote_procedures(projects=[project], dry_run=settings.dry_run)
    stop, detail = _errors(report.errors)
    counts = {"created": report.created, "promoted": report.promoted}
    return Outcome(report.to_dict(), stop, detail, counts=counts)


def run_topics(memory: Memory, project: str, settings: PassSettings) -> Outcome:
    report = memory.detect_topics(projects=[project], dry_run=settings.dry_run)
    stop, detail = _errors(report.errors)
    if stop is None and report.capped:
        stop, detail = "cap", f"events left by the per-run cap in {report.capped} scope(s)"
    counts = {"created": report.created, "superseded": report.retired}
    return Outcome(report.to_dict(), stop, detail, counts=counts)


register(ScheduledPass("dedupe", run_dedupe))
register(ScheduledPass("judge", run_judge, needs_model=True))
# After each run the engine judges the projects it touched; this reaches the others' sets
# (a pair that waited for a value conflict a person decided, or a model that was down).
register(ScheduledPass("judge_identity", run_judge_identities, needs_model=True))
register(ScheduledPass("summarise", run_summarise, default_enabled=False, needs_model=True))
register(ScheduledPass("prune", run_prune, default_enabled=False))
register(ScheduledPass("promote_rules", run_promote_rules, default_enabled=False, needs_model=True))
# Derive acts only on the predicates declared `vote`, procedures only on events that record
# actions, topics only on events new since their cursor: each is cheap when it has nothing to
# do, and none asks a model, so all three are on.
register(ScheduledPass("derive", run_derive))
register(ScheduledPass("procedures", run_procedures))
register(ScheduledPass("topics", run_topics))
