"""The interpreter of one scenario case: its steps act on a fresh `Memory` through the public
API, and its checks compare what the store shows afterwards with what the case expects.

A step is a dict with either `do` (an action) or `check` (an expectation); `ACTIONS` and
`CHECKS` list the keys each accepts, and `scenarios.py` validates a case against them before
anything runs.

Actions: `add` an event (`claim` or `claims`, `text`, `at` minutes or `days` after T0,
`subject` (default u1), `project`, `trust`, `source`; `name` it to refer to it later),
`consolidate` (`dry_run`; `name` its report), `replay`, `pin` a fact, `resolve` a conflict
(`keep` a fact or null), `advance` the clock, `answer` (queue more model answers),
`snapshot`, `race` (several workers on one database at once), `plant` a stored memory as
an earlier version or a copy would have left it (`text`, `count` reinforcements, `pinned`,
`copies` of it; arrival would have filed it under its twin), `dedupe` (`dry_run`,
`max_supersedes`, `projects`; `name` its report) and `prune` (`dry_run`, `half_life_days`,
`floor`, `max_prunes`; `name` its report). Any action may say it `raises` a distill error
(`message_contains`).

Checks: `report` (counters, rejection reasons, learned aliases, whether the provider stopped
the run, or `same_as` another report), `fact` (one fact's fields), `facts` (the served facts
of a subject, exactly; the number of rows with retired ones), `conflicts`, `jobs`, and
`unchanged` since a snapshot (all of it, or one fact), `dedupe` and `prune` (a report's
counters), and `weight` (a fact's weight now: `is` to 1e-9, or `below`).

Facts are named by selectors: fields with their values (`{"value": {"lang": "fr"}}`), where
`sources` and times are event names. A selector must name exactly one fact.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from distill import errors
from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.adapters.llm.fake import FakeLLM
from distill.applier import apply_plan
from distill.core.decay import HALF_LIFE_DAYS, MAX_PRUNES_PER_RUN, PRUNE_FLOOR
from distill.core.identity import identity_text
from distill.core.models import ConflictSet, Event, Fact, FactKind, FactStatus, Trust
from distill.core.passes import Scope
from distill.core.plan import CreateFact, Plan
from distill.memory import Memory
from distill.passes.dedupe import MAX_SUPERSEDES_PER_RUN, DedupeReport
from distill.passes.prune import PruneReport
from distill.report import Report

# World time of events (`at` minutes or `days` after T0) and the clock's start: "now" is
# later than every event, as when an agent's history is consolidated.
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
CLOCK_START = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
EMBED_DIMENSION = 256
# Cosine distance: the semantic-match threshold of a case that places its own vectors and
# names none. The distances it gives ("threshold + 0.001") are relative to this value and its
# memory is built with it, whatever the registry says of the hashing embedder.
CASE_MAX_DISTANCE = 0.12

# The keys each action and each check accepts (`raises`/`message_contains` on any action).
ACTIONS: dict[str, set[str]] = {
    "add": {
        "name",
        "subject",
        "project",
        "text",
        "at",
        "days",
        "trust",
        "source",
        "claim",
        "claims",
    },
    "consolidate": {"name", "dry_run"},
    "replay": set(),
    "pin": {"fact"},
    "resolve": {"conflict", "keep", "project"},
    "advance": {"seconds"},
    "answer": {"answers"},
    "snapshot": {"name"},
    "race": {"name", "workers"},
    "plant": {"text", "subject", "project", "at", "count", "pinned", "copies"},
    "dedupe": {"name", "dry_run", "max_supersedes", "projects"},
    "prune": {"name", "dry_run", "half_life_days", "floor", "max_prunes"},
}
CHECKS: dict[str, set[str]] = {
    "report": {"of", "counts", "rejections", "aliases", "stopped_by_provider", "same_as"},
    "fact": {"where", "is"},
    "facts": {"subject", "project", "kind", "active", "total"},
    "conflicts": {"subject", "project", "status", "count", "kind", "members", "kept"},
    "jobs": {"all", "count", "by_subject"},
    "unchanged": {"since", "fact"},
    "dedupe": {"of", "counts"},
    "prune": {"of", "counts"},
    "weight": {"where", "is", "below", "half_life_days"},
}
ANY_ACTION = {"raises", "message_contains"}
REQUIRED: dict[str, set[str]] = {
    "pin": {"fact"},
    "advance": {"seconds"},
    "answer": {"answers"},
    "snapshot": {"name"},
    "plant": {"text"},
    "fact": {"where", "is"},
    "unchanged": {"since"},
    "weight": {"where"},
}
# Fact fields that name another fact: the case gives a selector for it.
LINKS = {"superseded_by", "supersedes_id"}
# Fact fields that are times: the case gives the name of the event that happened then.
TIMES = {"valid_from", "valid_to", "last_reinforced_at"}


class Reported(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


class CaseFailed(Exception):
    """An expectation of the case did not hold; the message is the reason shown."""


class ScenarioClock:
    """A clock that moves only when a case says so."""

    def __init__(self) -> None:
        self.current = CLOCK_START

    def now(self) -> datetime:
        return self.current


def make_llm(spec: Mapping[str, Any]) -> FakeLLM:
    """A scripted model: `answers` in order, then `default`. An answer `{"raise": "Name",
    "message": ...}` raises that distill error; a string is returned as the model's text."""
    llm = FakeLLM(default=_answer(spec.get("default", {"facts": []})))
    return llm.enqueue(*(_answer(a) for a in spec.get("answers", [])))


def _answer(spec: Any) -> Any:
    if isinstance(spec, dict) and "raise" in spec:
        error = error_class(spec["raise"])
        assert error is not None, spec  # validated when the cases were loaded
        return error(spec.get("message", spec["raise"]))
    return spec


def error_class(name: str) -> type[errors.DistillError] | None:
    """The distill error a case names, or None if there is none by that name."""
    found = getattr(errors, name, None)
    return found if isinstance(found, type) and issubclass(found, errors.DistillError) else None


def distance(spec: float | str, threshold: float) -> float:
    """A number, or an expression of the threshold: "threshold", "threshold / 2",
    "threshold + 0.001"."""
    if isinstance(spec, int | float):
        return float(spec)
    found = re.fullmatch(r"\s*threshold\s*(?:([-+*/])\s*([0-9.]+))?\s*", spec)
    if found is None:
        raise ValueError(f"distance {spec!r} is neither a number nor 'threshold [+-*/] x'")
    op, operand = found.group(1), float(found.group(2) or 0)
    apply: dict[str | None, Callable[[float], float]] = {
        None: lambda t: t,
        "+": lambda t: t + operand,
        "-": lambda t: t - operand,
        "*": lambda t: t * operand,
        "/": lambda t: t / operand,
    }
    return apply[op](threshold)


def distance_embedder(pairs: list[Mapping[str, Any]], threshold: float) -> HashingEmbedder:
    """The hashing embedder with the identity texts of each pair of claims pinned at the
    pair's cosine distance. Pair i lives in dimensions 2i and 2i+1, so pairs are orthogonal
    to each other and to nothing else in particular."""
    overrides: dict[str, list[float]] = {}
    for index, pair in enumerate(pairs):
        a, b = vectors_at_distance(distance(pair["distance"], threshold), 2)
        for claim, unit in ((pair["a"], a), (pair["b"], b)):
            vector = [0.0] * EMBED_DIMENSION
            vector[2 * index : 2 * index + 2] = unit
            for text in (identity_text(claim[0], claim[1]), identity_text(claim[0])):
                overrides[text] = vector
    return HashingEmbedder(EMBED_DIMENSION, overrides=overrides)


class CaseRun:
    """The state of one case while its steps run: the memory, named events, reports and
    snapshots."""

    def __init__(self, mem: Memory, options: Mapping[str, Any], new_id: Callable[[], str]):
        self.mem = mem
        self.options = dict(options)
        self.new_id = new_id
        self.events: dict[str, Event] = {}
        self.reports: dict[str, Report] = {}
        self.dedupes: dict[str, DedupeReport] = {}
        self.prunes: dict[str, PruneReport] = {}
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.projects = {"default"}

    def step(self, step: Mapping[str, Any]) -> None:
        if "check" in step:
            getattr(self, f"check_{step['check']}")(step)
            return
        action: Callable[[Mapping[str, Any]], None] = getattr(self, f"do_{step['do']}")
        expected = step.get("raises")
        try:
            action(step)
        except errors.DistillError as exc:
            if expected is None or type(exc).__name__ != expected:
                raise
            wanted = step.get("message_contains", "")
            if wanted not in str(exc):
                raise CaseFailed(f"{expected} says {str(exc)!r}, not {wanted!r}") from exc
            return
        if expected is not None:
            raise CaseFailed(f"expected {expected}, nothing was raised")

    # -- actions ---------------------------------------------------------------------------------
    def do_add(self, step: Mapping[str, Any]) -> None:
        claims = step.get("claims", [step["claim"]] if "claim" in step else [])
        when = T0 + timedelta(minutes=step.get("at", 0), days=step.get("days", 0))
        project = step.get("project", "default")
        self.projects.add(project)
        event = self.mem.add_event(
            subject=step.get("subject", "u1"),
            project=project,
            text=step.get("text") or "; ".join(f"{c['predicate']} is {c['value']}" for c in claims),
            occurred_at=when,
            trust=step.get("trust", "trusted"),
            source=step.get("source", "user"),
            claims=claims,
        )
        self.events[step.get("name", f"E{len(self.events) + 1}")] = event

    def do_consolidate(self, step: Mapping[str, Any]) -> None:
        report = self.mem.consolidate(dry_run=step.get("dry_run", False))
        self.reports[step.get("name", "last")] = self.reports["last"] = report

    def do_replay(self, step: Mapping[str, Any]) -> None:
        self.mem.replay()

    def do_pin(self, step: Mapping[str, Any]) -> None:
        pinned = self.find(step["fact"])
        self.mem.pin(pinned.id, project=pinned.project)

    def do_resolve(self, step: Mapping[str, Any]) -> None:
        conflict = step.get("conflict", {})
        conflict_id = conflict if isinstance(conflict, str) else self.conflict(conflict).id
        keep = step.get("keep")
        keep_id = keep if keep is None or isinstance(keep, str) else self.find(keep).id
        self.mem.resolve_conflict(conflict_id, keep_id, project=step.get("project", "default"))

    def do_advance(self, step: Mapping[str, Any]) -> None:
        clock = self.mem.clock
        assert isinstance(clock, ScenarioClock)
        clock.current += timedelta(seconds=step["seconds"])

    def do_answer(self, step: Mapping[str, Any]) -> None:
        llm = self.options.get("llm")
        if not isinstance(llm, FakeLLM):
            raise CaseFailed("`answer` needs a case with an `llm`")
        llm.enqueue(*(_answer(a) for a in step["answers"]))

    def do_snapshot(self, step: Mapping[str, Any]) -> None:
        self.snapshots[step["name"]] = self.snapshot()

    def do_race(self, step: Mapping[str, Any]) -> None:
        """`workers` Memory objects on the same database consolidate at once; the report is
        their sum."""
        workers = [self.mem] + [
            Memory(
                self.mem.database,
                embedder=self.mem.embedder,
                clock=self.mem.clock,
                new_id=self.new_id,
                **self.options,
            )
            for _ in range(step.get("workers", 2) - 1)
        ]
        start = threading.Barrier(len(workers))

        def work(mem: Memory) -> Report:
            start.wait()
            return mem.consolidate()

        try:
            with ThreadPoolExecutor(len(workers)) as pool:
                reports = list(pool.map(work, workers))
        finally:
            for other in workers[1:]:
                other.close()
        total = Report()
        for report in reports:
            total.outcomes.update(report.outcomes)
            total.rejections.extend(report.rejections)
            total.actions.extend(report.actions)
            total.errors.extend(report.errors)
            total.jobs_done += report.jobs_done
            total.jobs_failed += report.jobs_failed
            total.jobs_released += report.jobs_released
        self.reports[step.get("name", "last")] = self.reports["last"] = total

    def do_plant(self, step: Mapping[str, Any]) -> None:
        subject, project = step.get("subject", "u1"), step.get("project", "default")
        when = T0 + timedelta(minutes=step.get("at", 0))
        self.projects.add(project)
        plan = Plan()
        for _ in range(step.get("copies", 1)):
            event = Event(
                id=self.new_id(),
                project=project,
                subject=subject,
                text=step["text"],
                occurred_at=when,
                recorded_at=when,
                source="import",
                trust=Trust.TRUSTED,
                idempotency_key=self.new_id(),
            )
            self.mem.store.append_events([event], when)
            self.events[f"E{len(self.events) + 1}"] = event
            fact = Fact(
                id=self.new_id(),
                project=project,
                subject=subject,
                kind=FactKind.MEMORY,
                predicate=None,
                value=None,
                text=step["text"],
                identity_key=None,
                status=FactStatus.ACTIVE,
                valid_from=when,
                recorded_at=when,
                source_event_ids=(event.id,),
                reinforcement_count=step.get("count", 0),
                last_reinforced_at=when,
                trust=Trust.TRUSTED,
                pinned=step.get("pinned", False),
            )
            plan.add(CreateFact(fact, "stored as an earlier version left it", "import"))
        apply_plan(
            self.mem.store,
            plan,
            Scope(project, subject),
            job_id=None,
            now=when,
            new_id=self.new_id,
        )

    def do_dedupe(self, step: Mapping[str, Any]) -> None:
        report = self.mem.dedupe(
            projects=step.get("projects", ()),
            dry_run=step.get("dry_run", False),
            max_supersedes=step.get("max_supersedes", MAX_SUPERSEDES_PER_RUN),
        )
        self.dedupes[step.get("name", "last")] = self.dedupes["last"] = report

    def do_prune(self, step: Mapping[str, Any]) -> None:
        report = self.mem.prune(
            dry_run=step.get("dry_run", False),
            half_life_days=step.get("half_life_days", HALF_LIFE_DAYS),
            floor=step.get("floor", PRUNE_FLOOR),
            max_prunes=step.get("max_prunes", MAX_PRUNES_PER_RUN),
        )
        self.prunes[step.get("name", "last")] = self.prunes["last"] = report

    # -- checks ----------------------------------------------------------------------------------
    def check_dedupe(self, step: Mapping[str, Any]) -> None:
        counters(step, "dedupe", self.dedupes)

    def check_prune(self, step: Mapping[str, Any]) -> None:
        counters(step, "prune", self.prunes)

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
        if key not in got or key in ("groups", "facts"):
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


def id_factory() -> Callable[[], str]:
    """Deterministic ids, safe to share between racing workers."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def new_id() -> str:
        with lock:
            return f"id{next(counter):06d}"

    return new_id


def threshold_of(options: Mapping[str, Any]) -> float:
    return float(options.get("max_distance", CASE_MAX_DISTANCE))
