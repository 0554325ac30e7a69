"""Procedures and topics as `Memory` methods: what a subject's actions and entities teach,
over many events (the rules: `core.procedures`, `core.topics`; the passes:
`passes.procedures`, `passes.topics`). `Memory` is where they are called from; this is where
they are put together, so that `memory.py` stays the read-and-write API of facts.

- `promote_procedures` counts success → success pairs into procedures and promotes the
  candidates at their support; `record_procedure_use` reports one real use and applies the
  lifecycle; `match_procedures` returns the active procedures whose precondition a state
  meets; `procedures` reads them.
- `detect_topics` links new events to the entities they name and brings the subject's
  topics up to date; `topics` reads them (with a query: nearest first, by embedding).

Every write goes through the one applier, with an audit entry; dry runs write nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from distill.applier import apply_plan
from distill.arguments import subject_named as _subject
from distill.core import procedures as cp
from distill.core.event_action import Scalar
from distill.core.passes import Scope
from distill.core.patterns import Procedure, ProcedureStatus, Topic
from distill.core.plan import Plan
from distill.errors import InvalidInput, NotFound
from distill.passes.procedures import ProceduresReport, run_procedures
from distill.passes.topics import TOPIC_NAME_MAX_LENGTH, TopicsReport, run_topics

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from distill.engine import Engine
    from distill.ports import LLM, Clock, Store

TOPIC_NAME_SYSTEM = (
    "You name topics. Given a few entities that often appear together, answer with a short "
    f"title for what they have in common: at most {TOPIC_NAME_MAX_LENGTH} characters, no "
    "quotes, nothing else."
)


class Cortex:
    """`Memory.procedures`, `promote_procedures`, `record_procedure_use`, `match_procedures`,
    `topics` and `detect_topics` (see the module docstring)."""

    store: Store
    clock: Clock
    llm: LLM | None
    engine: Engine
    _new_id: Callable[[], str]

    # -- procedures ------------------------------------------------------------------------------
    def procedures(
        self,
        subject: str | None = None,
        project: str = "default",
        status: ProcedureStatus | str | None = None,
    ) -> list[Procedure]:
        """A subject's procedures (every subject's with None), of one status or all."""
        wanted = _status(status)
        return self.store.procedures(project, _subject(subject), wanted)

    def promote_procedures(
        self, projects: Sequence[str] = (), subject: str | None = None, dry_run: bool = False
    ) -> ProceduresReport:
        """Count every subject's action events into procedures (`core.procedures`): new pairs
        become candidates, support is counted again (never added to), candidates at
        `PROMOTE_SUPPORT` become active. `dry_run` reports the same changes, writing
        nothing."""
        return run_procedures(
            self.store,
            self.clock.now,
            self._new_id,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
        )

    def record_procedure_use(
        self, procedure_id: str, success: bool, project: str = "default"
    ) -> Procedure:
        """Report one real use of a procedure and how it went; its status follows the
        lifecycle (an active one under 0.4 effectiveness is deprecated, a deprecated one at
        0.6 or more is active again). Takes an id or a unique prefix."""
        if not isinstance(success, bool):
            raise InvalidInput("success: True or False, how the use went")
        found = self._procedure(procedure_id, project)
        with self.store.serialised(project, found.subject):
            current = self._procedure(found.id, project)
            action = cp.record_use(current, success, self.clock.now())
            plan = Plan()
            plan.add(action)
            scope = Scope(project, current.subject)
            now = self.clock.now()
            apply_plan(self.store, plan, scope, job_id=None, now=now, new_id=self._new_id)
        return action.after

    def match_procedures(
        self,
        state: Mapping[str, Scalar] | str | None = None,
        subject: str | None = None,
        project: str = "default",
    ) -> list[Procedure]:
        """The active procedures whose precondition `state` meets (`key=value` clauses, all
        of them; an empty precondition matches any state), most supported first. `state` is
        a mapping or `key=value,key=value` text."""
        try:
            given = cp.parse_state(state)
        except ValueError as exc:
            raise InvalidInput(f"state: {exc}; give key=value pairs, comma-separated") from exc
        active = self.store.procedures(project, _subject(subject), ProcedureStatus.ACTIVE)
        found = [p for p in active if cp.matches(p, given)]
        return sorted(found, key=lambda p: (-p.support, p.subject, p.name))

    def _procedure(self, given: str, project: str) -> Procedure:
        key = given.strip().lower() if isinstance(given, str) else ""
        if not key:
            raise InvalidInput("procedure: give its id (or a unique prefix)")
        found = [p for p in self.store.procedures(project, None) if p.id.startswith(key)]
        if not found:
            raise NotFound(f"no procedure {given!r} in project {project!r}: see distill procedures")
        if len(found) > 1:
            raise InvalidInput(f"{given!r} is the start of {len(found)} procedures: give more")
        return found[0]

    # -- topics ----------------------------------------------------------------------------------
    def topics(
        self,
        subject: str | None = None,
        project: str = "default",
        include_retired: bool = False,
        query: str | None = None,
        limit: int | None = None,
    ) -> list[Topic]:
        """A subject's topics (every subject's with None); retired ones too if asked. With a
        `query`, nearest first by embedding (topics without one are left out)."""
        found = self.store.topics(project, _subject(subject), include_retired)
        if query is not None:
            if not query.strip():
                raise InvalidInput("query: give some words to look topics up by")
            vector = np.asarray(self.engine.embed([query])[query], dtype=np.float64)
            scored = []
            for topic in found:
                if topic.embedding is None:
                    continue
                mean = np.asarray(topic.embedding, dtype=np.float64)
                norm = float(np.linalg.norm(mean)) or 1.0
                scored.append((-float(vector @ mean) / norm, topic.id, topic))
            found = [t for _, _, t in sorted(scored)]
        return found if limit is None else found[: max(0, limit)]

    def detect_topics(
        self,
        projects: Sequence[str] = (),
        subject: str | None = None,
        dry_run: bool = False,
        name_with_model: bool = False,
    ) -> TopicsReport:
        """Link the events new since each subject's cursor to the entities they name and run
        label propagation again over the communities they touch (`core.topics`): new
        communities become topics, changed ones are retired. `name_with_model`: ask the
        configured model for each new topic's name (any failure: its members' names).
        `dry_run` reports the same changes, writing nothing."""
        namer = self._topic_namer() if name_with_model else None
        report = run_topics(
            self.store,
            self.clock.now,
            self._new_id,
            embed=self.engine.embed,
            namer=namer,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
        )
        if namer is not None and namer.down is not None:
            report.naming_stopped = f"{type(namer.down).__name__}: {namer.down}"
        return report

    def _topic_namer(self) -> ModelNamer | None:
        # Naming is cosmetic: no model, the members' names.
        return ModelNamer(self.llm) if self.llm is not None else None


class ModelNamer:
    """A topic's name asked of the model (`passes.topics.Namer`). The first failure ends the
    asking for the run: a model that is down or hangs would cost each topic its timeouts."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.model_id = llm.model_id
        self.down: Exception | None = None  # the failure that ended the asking

    def __call__(self, members: Sequence[str]) -> str | None:
        if self.down is not None:
            return None
        try:
            answer = self.llm.complete(TOPIC_NAME_SYSTEM, "Entities: " + "; ".join(members))
        except Exception as exc:
            self.down = exc
            log.warning("topic naming stopped, the members' names stand: %s", exc)
            return None
        return answer.text.strip().strip("\"'") or None


def _status(status: ProcedureStatus | str | None) -> ProcedureStatus | None:
    if status is None:
        return None
    try:
        return ProcedureStatus(status)
    except ValueError as exc:
        allowed = ", ".join(s.value for s in ProcedureStatus)
        raise InvalidInput(f"status {status!r}: one of {allowed}") from exc
