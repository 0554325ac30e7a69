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
`floor`, `max_prunes`; `name` its report), `derive` (`dry_run`, `cluster` false for the
exact mode, `cluster_distance`, `batch`, `subject`, `projects`; `name` its report) and
`summarise` (`keep`, `subject`, `dry_run`;
`answers` queued first, each a proposal in the case's terms, `{"summary": ..., "consumes":
[texts], "contradictions": [{"memories": [texts]}], "fenced": true}`, its texts turned into
the prompt's aliases when it is asked, a text it does not show into an alias it never gave
(`"consumes": "shown"` is every memory shown, `"joined": true` a summary that is the texts
it consumes joined); `name` its report). Any action may say it `raises` a distill error
(`message_contains`).

The checks, and the selectors that name facts, are in `scenario_checks.py`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from distill import errors
from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.adapters.llm.fake import FakeLLM
from distill.applier import apply_plan
from distill.core.decay import HALF_LIFE_DAYS, MAX_PRUNES_PER_RUN, PRUNE_FLOOR
from distill.core.derive import DERIVE_BATCH
from distill.core.identity import identity_text
from distill.core.models import Event, Fact, FactKind, FactStatus, Trust
from distill.core.passes import Scope
from distill.core.plan import CreateFact, Plan
from distill.core.summarise import SUMMARISE_KEEP, asked
from distill.eval.scenario_checks import CaseChecks, CaseFailed
from distill.memory import Memory
from distill.passes.dedupe import MAX_SUPERSEDES_PER_RUN, DedupeReport
from distill.passes.derive import DeriveReport
from distill.passes.procedures import ProceduresReport
from distill.passes.prune import PruneReport
from distill.passes.summarise import SummariseReport
from distill.passes.topics import TopicsReport
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

# The keys each action accepts (`raises`/`message_contains` on any action).
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
    "summarise": {"name", "answers", "keep", "subject", "dry_run"},
    "derive": {"name", "dry_run", "cluster", "cluster_distance", "batch", "subject", "projects"},
    "act": {"type", "outcome", "session", "seq", "subject", "at", "state"},
    "procedures": {"name", "dry_run"},
    "use": {"procedure", "success", "times", "subject"},
    "topics": {"name", "dry_run"},
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
    "written_before": {"fact", "retired"},
    "act": {"type"},
    "use": {"procedure", "success"},
}


class ScenarioClock:
    """A clock that moves only when a case says so."""

    def __init__(self) -> None:
        self.current = CLOCK_START

    def now(self) -> datetime:
        return self.current


def make_llm(spec: Mapping[str, Any]) -> FakeLLM:
    """A scripted model: `answers` in order, then `default`. An answer `{"raise": "Name",
    "message": ...}` raises that distill error; a string is returned as the model's text; a
    summariser's proposal is written with the aliases of the prompt (`proposal`)."""
    llm = FakeLLM(default=proposal(spec.get("default", {"facts": []})))
    return llm.enqueue(*(proposal(a) for a in spec.get("answers", [])))


def _answer(spec: Any) -> Any:
    if isinstance(spec, dict) and "raise" in spec:
        error = error_class(spec["raise"])
        assert error is not None, spec  # validated when the cases were loaded
        return error(spec.get("message", spec["raise"]))
    return spec


def proposal(spec: Any) -> Any:
    """A summariser's answer: a proposal in the case's terms (see the module docstring)
    becomes a callable that writes it with the aliases of the prompt it is given; any other
    answer is `_answer`'s."""
    if not isinstance(spec, dict) or "raise" in spec:
        return _answer(spec)

    def answer(prompt: str) -> str:
        shown = asked(prompt)
        aliases: dict[str, str] = {}
        for alias, text in shown:
            aliases.setdefault(text, alias)
        unshown = itertools.count(len(shown) + 1)

        def alias_of(text: str) -> str:
            if text not in aliases:
                aliases[text] = f"M{next(unshown)}"
            return aliases[text]

        body = {k: v for k, v in spec.items() if k not in ("fenced", "joined")}
        if body.get("consumes") == "shown":
            body["consumes"] = [text for _, text in shown]
        if spec.get("joined"):
            body["summary"] = "; ".join(dict.fromkeys(body.get("consumes", [])))
        if isinstance(body.get("consumes"), list):
            body["consumes"] = [alias_of(t) for t in body["consumes"]]
        if isinstance(body.get("contradictions"), list):
            body["contradictions"] = [
                {**c, "memories": [alias_of(t) for t in c.get("memories", [])]}
                for c in body["contradictions"]
            ]
        text = json.dumps(body)
        return f"```json\n{text}\n```" if spec.get("fenced") else text

    return answer


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


class CaseRun(CaseChecks):
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
        self.summaries: dict[str, SummariseReport] = {}
        self.derives: dict[str, DeriveReport] = {}
        self.shown: dict[str, list[str]] = {}  # the texts each summarise run's prompts showed
        self.retired_shown: list[str] = []
        self.procedure_runs: dict[str, ProceduresReport] = {}
        self.topic_runs: dict[str, TopicsReport] = {}

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

    def do_summarise(self, step: Mapping[str, Any]) -> None:
        """Queue the step's answers, run the pass, and keep what its prompts showed, noting
        every memory shown that was already retired when the run began."""
        llm = self.options.get("llm")
        if not isinstance(llm, FakeLLM):
            raise CaseFailed("`summarise` needs a case with an `llm`")
        llm.enqueue(*(proposal(a) for a in step.get("answers", [])))
        asked_before = len(llm.calls)
        gone = {FactStatus.SUPERSEDED, FactStatus.RETRACTED}
        retired = {f.text for f in self.every_fact() if f.status in gone}
        report = self.mem.summarise(
            subject=step.get("subject"),
            dry_run=step.get("dry_run", False),
            keep=step.get("keep", SUMMARISE_KEEP),
        )
        shown = [text for call in llm.calls[asked_before:] for _, text in asked(call.prompt)]
        self.retired_shown.extend(text for text in shown if text in retired)
        name = step.get("name", "last")
        self.summaries[name] = self.summaries["last"] = report
        self.shown[name] = self.shown["last"] = shown

    def do_prune(self, step: Mapping[str, Any]) -> None:
        report = self.mem.prune(
            dry_run=step.get("dry_run", False),
            half_life_days=step.get("half_life_days", HALF_LIFE_DAYS),
            floor=step.get("floor", PRUNE_FLOOR),
            max_prunes=step.get("max_prunes", MAX_PRUNES_PER_RUN),
        )
        self.prunes[step.get("name", "last")] = self.prunes["last"] = report

    def do_derive(self, step: Mapping[str, Any]) -> None:
        report = self.mem.derive(
            projects=step.get("projects", ()),
            subject=step.get("subject"),
            dry_run=step.get("dry_run", False),
            cluster=step.get("cluster", True),
            cluster_distance=step.get("cluster_distance"),
            batch=step.get("batch", DERIVE_BATCH),
        )
        self.derives[step.get("name", "last")] = self.derives["last"] = report

    def do_act(self, step: Mapping[str, Any]) -> None:
        action = {
            "type": step["type"],
            "outcome": step.get("outcome", "success"),
            "session": step.get("session", ""),
            "seq": step.get("seq"),
            "state": step.get("state", {}),
        }
        event = self.mem.add_event(
            subject=step.get("subject", "agent"),
            text=f"{step['type']} {action['outcome']} ({action['session']} #{action['seq']})",
            occurred_at=T0 + timedelta(minutes=step.get("at", len(self.events))),
            action=action,
        )
        self.events[f"E{len(self.events) + 1}"] = event

    def do_procedures(self, step: Mapping[str, Any]) -> None:
        report = self.mem.promote_procedures(dry_run=step.get("dry_run", False))
        self.procedure_runs[step.get("name", "last")] = self.procedure_runs["last"] = report

    def do_use(self, step: Mapping[str, Any]) -> None:
        subject = step.get("subject", "agent")
        named = [p for p in self.mem.procedures(subject) if p.name == step["procedure"]]
        if len(named) != 1:
            raise CaseFailed(f"no one procedure {step['procedure']!r} of {subject!r}")
        for _ in range(step.get("times", 1)):
            self.mem.record_procedure_use(named[0].id, bool(step["success"]))

    def do_topics(self, step: Mapping[str, Any]) -> None:
        report = self.mem.detect_topics(dry_run=step.get("dry_run", False))
        self.topic_runs[step.get("name", "last")] = self.topic_runs["last"] = report


def forms_embedder(forms: Mapping[str, list[float]]) -> HashingEmbedder:
    """The hashing embedder with each observed value's surface form (`core.votes.surface`)
    placed at the given vector (padded with zeros, normalised): a case says how close its
    paraphrases are."""
    overrides: dict[str, list[float]] = {}
    for text, components in forms.items():
        vector = [0.0] * EMBED_DIMENSION
        vector[: len(components)] = components
        norm = sum(x * x for x in vector) ** 0.5
        overrides[text] = [x / norm for x in vector] if norm else vector
    return HashingEmbedder(EMBED_DIMENSION, overrides=overrides)


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
