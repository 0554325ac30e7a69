"""The checks of a scenario case: what the store, the reports and the status show after its
steps, compared with what the case expects (`scenario_steps.py` runs the actions).

Checks: `report` (counters, rejection reasons, learned aliases, whether the provider stopped
the run, or `same_as` another report), `fact` (one fact's fields), `facts` (the served facts
of a subject, exactly; the number of rows with retired ones), `conflicts`, `jobs`, and
`unchanged` since a snapshot (all of it, or one fact; with `marks`, a pass's marks
are the audit entries allowed), `dedupe` and `prune` (a report's
counters), `weight` (a fact's weight now: `is` to 1e-9, or `below`), `summarise` (a
summarise report's counters, its refusal codes, how many notes say where it `stopped` and
what they say, the texts its prompts `shown`), `derive` (a derive report's counters, the
subjects it left `unstable`, how many cycles are on record), `subjects` (which subjects
`Memory.subjects()` calls `unstable` or `stable`), `status` (`Memory.status()` counters, or
their increase `since` a snapshot), `receipts` (every fact that left the live set points at
a fact that exists; how many `retired`), `prompts` (how many the model was sent, how many
times one showed a memory already retired, words none of them may show: `never_shows`),
`written_before` (a fact's first audit entry precedes the last entry of the fact it
`retired`), `procedures` (a procedures report's counters, and the subject's procedures: each
`name` with the fields given, exactly those) and `topics` (a topics report's counters; the
member sets of the subject's `active` and `retired` topics, exactly, each active topic's id
the one of its sorted member set).

Facts are named by selectors: fields with their values (`{"value": {"lang": "fr"}}`), where
`sources` and times are event names. A selector must name exactly one fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from distill.core.decay import HALF_LIFE_DAYS
from distill.core.models import ConflictSet, Event, Fact, FactStatus
from distill.core.patterns import topic_id
from distill.memory import Memory
from distill.passes.dedupe import DedupeReport
from distill.passes.derive import DeriveReport
from distill.passes.procedures import ProceduresReport
from distill.passes.prune import PruneReport
from distill.passes.summarise import SummariseReport
from distill.passes.topics import TopicsReport
from distill.report import Report

# The keys each check accepts.
CHECKS: dict[str, set[str]] = {
    "report": {"of", "counts", "rejections", "aliases", "stopped_by_provider", "same_as"},
    "fact": {"where", "is"},
    "facts": {"subject", "project", "kind", "active", "total"},
    "conflicts": {"subject", "project", "status", "count", "kind", "members", "kept"},
    "jobs": {"all", "count", "by_subject"},
    "unchanged": {"since", "fact", "marks"},
    "dedupe": {"of", "counts"},
    "prune": {"of", "counts"},
    "weight": {"where", "is", "below", "half_life_days"},
    "summarise": {"of", "counts", "refused", "stopped", "stopped_contains", "shown"},
    "status": {"counts", "since"},
    "receipts": {"retired"},
    "prompts": {"count", "retired_shown", "never_shows"},
    "written_before": {"fact", "retired"},
    "derive": {"of", "counts", "unstable", "recorded_cycles"},
    "subjects": {"project", "unstable", "stable"},
    "procedures": {"of", "counts", "subject", "are"},
    "topics": {"of", "counts", "subject", "active", "retired"},
}
# Fact fields that name another fact: the case gives a selector for it.
LINKS = {"superseded_by", "supersedes_id"}
# Fact fields that are times: the case gives the name of the event that happened then.
TIMES = {"valid_from", "valid_to", "last_reinforced_at"}


class Reported(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


class CaseFailed(Exception):
    """An expectation of the case did not hold; the message is the reason shown."""


class CaseChecks:
    """The checks and the store readers of a case run; `CaseRun` holds the state they read."""

    mem: Memory
    events: dict[str, Event]
    reports: dict[str, Report]
    dedupes: dict[str, DedupeReport]
    prunes: dict[str, PruneReport]
    snapshots: dict[str, dict[str, Any]]
    projects: set[str]
    options: dict[str, Any]
    summaries: dict[str, SummariseReport]
    shown: dict[str, list[str]]
    retired_shown: list[str]
    derives: dict[str, DeriveReport]
    procedure_runs: dict[str, ProceduresReport]
    topic_runs: dict[str, TopicsReport]

    # -- checks ----------------------------------------------------------------------------------
    def check_dedupe(self, step: Mapping[str, Any]) -> None:
        counters(step, "dedupe", self.dedupes)

    def check_prune(self, step: Mapping[str, Any]) -> None:
        counters(step, "prune", self.prunes)

    def check_summarise(self, step: Mapping[str, Any]) -> None:
        counters(step, "summarise", self.summaries)
        name = step.get("of", "last")
        report = self.summaries[name]
        if "refused" in step:
            got = sorted(r.code for r in report.refused)
            expect(f"summarise {name}: refusal codes", got, sorted(step["refused"]))
        if "stopped" in step:
            expect(
                f"summarise {name}: notes of where it stopped", len(report.stopped), step["stopped"]
            )
        wanted = step.get("stopped_contains", "")
        if wanted and not any(wanted in note for note in report.stopped):
            raise CaseFailed(f"summarise {name}: no note of {report.stopped} says {wanted!r}")
        if "shown" in step:
            expect(f"summarise {name}: memories shown", self.shown[name], step["shown"])

    def check_derive(self, step: Mapping[str, Any]) -> None:
        """A derive report's counters (and the subjects it left `unstable`); how many
        cycles the derive pass has on record (`recorded_cycles`, its audit entries)."""
        counters(step, "derive", self.derives)
        name = step.get("of", "last")
        if "unstable" in step:
            got = self.derives[name].unstable
            expect(f"derive {name}: unstable", got, step["unstable"])
        if "recorded_cycles" in step:
            found = [
                e
                for p in sorted(self.projects)
                for e in self.mem.audit(project=p, limit=10_000)
                if e.pass_name == "derive" and e.action == "record_cycle"
            ]
            expect("derive: cycles on record", len(found), step["recorded_cycles"])

    def check_subjects(self, step: Mapping[str, Any]) -> None:
        """`Memory.subjects()`: which subjects are `unstable` and which `stable`."""
        found = {s.subject: s.unstable for s in self.mem.subjects(step.get("project", "default"))}
        for subject in step.get("unstable", []):
            expect(f"subject {subject} unstable", found.get(subject), True)
        for subject in step.get("stable", []):
            expect(f"subject {subject} unstable", found.get(subject), False)

    def check_procedures(self, step: Mapping[str, Any]) -> None:
        if "counts" in step:
            counters(step, "procedures", self.procedure_runs)
        if "are" not in step:
            return
        found = {p.name: p for p in self.mem.procedures(step.get("subject", "agent"))}
        expect("procedures", sorted(found), sorted(w["name"] for w in step["are"]))
        for want in step["are"]:
            got = found[want["name"]].model_dump(mode="json")
            got["effectiveness"] = found[want["name"]].effectiveness
            got["name"] = want["name"]
            for key, value in want.items():
                expect(f"procedure {want['name']}: {key}", got[key], value)

    def check_topics(self, step: Mapping[str, Any]) -> None:
        if "counts" in step:
            counters(step, "topics", self.topic_runs)
        subject = step.get("subject", "u1")
        every = self.mem.topics(subject, include_retired=True)
        for status in ("active", "retired"):
            if status in step:
                got = sorted(list(t.members) for t in every if t.status == status)
                expect(f"{status} topics of {subject}", got, sorted(step[status]))
        for topic in every:
            if topic.id != topic_id(topic.project, topic.subject, tuple(sorted(topic.members))):
                raise CaseFailed(f"topic {topic.name}: its id is not its member set's")

    def check_status(self, step: Mapping[str, Any]) -> None:
        got = self.mem.status().to_dict()
        base = self.snapshots[step["since"]]["status"] if "since" in step else None
        for key, want in step.get("counts", {}).items():
            if not isinstance(got.get(key), int):
                raise CaseFailed(f"status has no counter {key!r}")
            value = got[key] - base[key] if base is not None else got[key]
            expect(f"status: {key}" + (f" since {step['since']}" if base else ""), value, want)

    def check_receipts(self, step: Mapping[str, Any]) -> None:
        ids = {f.id for f in self.every_fact()}
        left = [
            f
            for f in self.every_fact()
            if f.status in (FactStatus.SUPERSEDED, FactStatus.RETRACTED)
        ]
        for fact in left:
            if fact.superseded_by is None or fact.superseded_by not in ids:
                raise CaseFailed(
                    f"{show(fact)} left the live set with receipt {fact.superseded_by!r}"
                )
        if "retired" in step:
            expect("facts that left the live set", len(left), step["retired"])

    def check_prompts(self, step: Mapping[str, Any]) -> None:
        llm = self.options.get("llm")
        calls = getattr(llm, "calls", None)
        if calls is None:
            raise CaseFailed("`prompts` needs a case with an `llm`")
        if "count" in step:
            expect("prompts sent to the model", len(calls), step["count"])
        if "retired_shown" in step:
            expect("retired memories shown again", len(self.retired_shown), step["retired_shown"])
        for text in step.get("never_shows", []):  # a pinned memory's words, say (invariant 6)
            seen = [n for n, call in enumerate(calls, 1) if text in call.system + call.prompt]
            if seen:
                raise CaseFailed(f"prompt(s) {seen} showed {text!r} to the model")

    def check_written_before(self, step: Mapping[str, Any]) -> None:
        first, later = self.find(step["fact"]), self.find(step["retired"])
        trail = [e.fact_id for e in self.mem.audit(project=first.project, limit=10**6)]
        if first.id not in trail or later.id not in trail:
            raise CaseFailed("the audit names neither fact")
        written = trail.index(first.id)
        retired = len(trail) - 1 - trail[::-1].index(later.id)
        if not written < retired:
            raise CaseFailed(f"{show(first)} was written after {show(later)} was retired")

    def check_weight(self, step: Mapping[str, Any]) -> None:
        fact = self.find(step["where"])
        half_life = step.get("half_life_days", HALF_LIFE_DAYS)
        got = self.mem.weight(fact.id, fact.project, half_life_days=half_life)
        what = f"weight of {describe(step['where'])}"
        if "is" in step and abs(got - step["is"]) > 1e-9:
            raise CaseFailed(f"{what} is {got}, expected {step['is']}")
        if "below" in step and not got < step["below"]:
            raise CaseFailed(f"{what} is {got}, expected below {step['below']}")

    def check_report(self, step: Mapping[str, Any]) -> None:
        name = step.get("of", "last")
        if name not in self.reports:
            raise CaseFailed(f"no report named {name!r}")
        report = self.reports[name]
        counters = report.counters()
        for key, want in step.get("counts", {}).items():
            if key not in counters:
                raise CaseFailed(f"report has no counter {key!r} (it has {', '.join(counters)})")
            expect(f"report {name}: {key}", counters[key], want)
        if "rejections" in step:
            got = sorted(r.reason for r in report.rejections)
            expect(f"report {name}: rejections", got, sorted(step["rejections"]))
        if "aliases" in step:
            learned = [
                [a["after"]["alias"], a["after"]["canonical"]]
                for a in report.actions
                if a["action"] == "learn_alias"
            ]
            expect(f"report {name}: learned aliases", learned, step["aliases"])
        if "stopped_by_provider" in step:
            stopped = bool(report.stopped_by_provider)
            expect(f"report {name}: stopped by the provider", stopped, step["stopped_by_provider"])
        if "same_as" in step:
            other = self.reports[step["same_as"]]
            expect(f"report {name}: counters", counters, other.counters())
            # Ids differ between two runs; the actions taken, in order, may not.
            kinds = [(a["action"], a["reason"]) for a in report.actions]
            expect(
                f"report {name}: actions",
                kinds,
                [(a["action"], a["reason"]) for a in other.actions],
            )

    def check_fact(self, step: Mapping[str, Any]) -> None:
        fact = self.find(step["where"])
        what = f"fact {describe(step['where'])}"
        for key, want in step["is"].items():
            if key in LINKS:
                linked = getattr(fact, key)
                if linked != (None if want is None else self.find(want).id):
                    got = None if linked is None else show(self.mem.fact(linked, fact.project))
                    want_shown = None if want is None else describe(want)
                    raise CaseFailed(f"{what}: {key} is {got}, expected {want_shown}")
            else:
                expect(f"{what}: {key}", self.field(fact, key), self.wanted(key, want))

    def check_facts(self, step: Mapping[str, Any]) -> None:
        subject, project = step.get("subject", "u1"), step.get("project", "default")
        kind = step.get("kind")
        served = [
            f for f in self.mem.facts(subject, project) if kind is None or f.kind.value == kind
        ]
        where = f"facts of {subject}/{project}" + (f" ({kind})" if kind else "")
        if "active" in step:
            wanted = step["active"]
            unmatched = [f for f in served if not any(self.matches(f, s) for s in wanted)]
            missing = [s for s in wanted if sum(self.matches(f, s) for f in served) != 1]
            if unmatched or missing or len(served) != len(wanted):
                raise CaseFailed(
                    f"{where}: served {[show(f) for f in served]}, expected "
                    f"{[describe(s) for s in wanted]}"
                )
        if "total" in step:
            every = self.mem.facts(subject, project, include_retired=True)
            rows = [f for f in every if kind is None or f.kind.value == kind]
            expect(f"{where}: rows, retired included", len(rows), step["total"])

    def check_conflicts(self, step: Mapping[str, Any]) -> None:
        status = step.get("status", "open")
        found = self.conflicts(step, None if status == "all" else status)
        where = f"{status} conflict sets"
        if "count" in step:
            expect(f"{where}: count", len(found), step["count"])
        if {"kind", "members", "kept"} & step.keys():
            conflict = self.conflict(step, status)
            if "kind" in step:
                expect(f"{where}: kind", conflict.kind.value, step["kind"])
            if "members" in step:
                members = sorted(self.find(s).id for s in step["members"])
                expect(f"{where}: members", sorted(conflict.member_ids), members)
            if "kept" in step:
                expect(f"{where}: kept fact", conflict.kept_fact_id, self.find(step["kept"]).id)

    def check_jobs(self, step: Mapping[str, Any]) -> None:
        jobs = self.mem.jobs()
        if "count" in step:
            expect("jobs: count", len(jobs), step["count"])
        if "all" in step:
            expect("jobs: statuses", {j.status.value for j in jobs}, {step["all"]})
        for subject, wanted in step.get("by_subject", {}).items():
            mine = [j for j in jobs if j.subject == subject]
            if len(mine) != 1:
                raise CaseFailed(f"jobs of {subject}: {len(mine)}, expected 1")
            job = mine[0]
            if "status" in wanted:
                expect(f"job of {subject}: status", job.status.value, wanted["status"])
            if "attempts" in wanted:
                expect(f"job of {subject}: attempts", job.attempts, wanted["attempts"])
            if wanted.get("error_contains", "") not in (job.error or ""):
                raise CaseFailed(
                    f"job of {subject}: error {job.error!r} lacks {wanted['error_contains']!r}"
                )

    def check_unchanged(self, step: Mapping[str, Any]) -> None:
        before = self.snapshots[step["since"]]
        if "fact" in step:
            fact = self.find(step["fact"])
            expect(f"fact {describe(step['fact'])}", fact.model_dump(), before["facts"][fact.id])
            return
        now = self.snapshot()
        if step.get("marks"):  # a pass marking what it was shown (the watermark)
            old = before["audit"]
            now["audit"] = [e for e in now["audit"] if e in old or e.action != "mark_facts"]
        for part, value in now.items():
            expect(f"{part} since snapshot {step['since']}", value, before[part])

    # -- reading the store -----------------------------------------------------------------------
    def every_fact(self) -> list[Fact]:
        return [
            f
            for p in sorted(self.projects)
            for f in self.mem.facts(project=p, include_retired=True)
        ]

    def find(self, selector: Mapping[str, Any]) -> Fact:
        """The one fact (any subject, any known project, retired included) the selector
        names."""
        found = [f for f in self.every_fact() if self.matches(f, selector)]
        if len(found) != 1:
            raise CaseFailed(f"{len(found)} facts match {describe(selector)}, expected 1")
        return found[0]

    def conflicts(self, where: Mapping[str, Any], status: str | None) -> list[ConflictSet]:
        return self.mem.conflicts(
            where.get("subject", "u1"), where.get("project", "default"), status=status
        )

    def conflict(self, where: Mapping[str, Any], status: str | None = "open") -> ConflictSet:
        status = where.get("status", status)
        found = self.conflicts(where, None if status == "all" else status)
        if len(found) != 1:
            raise CaseFailed(f"{len(found)} {status} conflict sets, expected 1")
        return found[0]

    def snapshot(self) -> dict[str, Any]:
        """Everything the public API shows, to prove that a step changed nothing."""
        facts = self.every_fact()
        return {
            "facts": {f.id: f.model_dump() for f in facts},
            "conflicts": [
                c for p in sorted(self.projects) for c in self.mem.conflicts(project=p, status=None)
            ],
            "jobs": self.mem.jobs(),
            "audit": [
                e for p in sorted(self.projects) for e in self.mem.audit(project=p, limit=10**6)
            ],
            "status": self.mem.status().to_dict(),
        }

    def matches(self, fact: Fact, selector: Mapping[str, Any]) -> bool:
        return all(self.field(fact, k) == self.wanted(k, v) for k, v in selector.items())

    def field(self, fact: Fact, key: str) -> Any:
        """A fact's field in the case's terms: event names for its sources, enum values as
        strings, whether it is retired."""
        if key == "sources":
            names = {e.id: n for n, e in self.events.items()}
            return sorted(names.get(i, i) for i in fact.source_event_ids)
        if key == "retired":
            return fact.retired_at is not None
        value = getattr(fact, key)
        return getattr(value, "value", value)

    def wanted(self, key: str, want: Any) -> Any:
        """What a case expects in the fact's terms: a time given as an event's name is
        that event's time."""
        if key in TIMES and isinstance(want, str) and want in self.events:
            return self.events[want].occurred_at
        return want


def counters(step: Mapping[str, Any], kind: str, reports: Mapping[str, Reported]) -> None:
    """A `dedupe` or `prune` check: the named report's counters are the ones given."""
    name = step.get("of", "last")
    if name not in reports:
        raise CaseFailed(f"no {kind} report named {name!r}")
    got = reports[name].to_dict()
    for key, want in step.get("counts", {}).items():
        if key not in got or key in (
            "groups",
            "facts",
            "summaries",
            "refused",
            "stopped",
            "changes",
        ):
            raise CaseFailed(f"a {kind} report has no counter {key!r}")
        expect(f"{kind} {name}: {key}", got[key], want)


def describe(selector: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in selector.items())


def show(fact: Fact) -> str:
    what = fact.text if fact.predicate is None else f"{fact.predicate}={fact.value}"
    return f"{what} ({fact.kind.value}, {fact.status.value})"


def expect(what: str, got: Any, want: Any) -> None:
    if got != want:
        raise CaseFailed(f"{what} is {plain(got)}, expected {plain(want)}")


def plain(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else repr(value)
