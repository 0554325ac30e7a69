"""Plans: what a pass proposes, as typed actions. Applying a plan is the only way to write.

Every action names the pass that proposed it and a one-line reason; the applier turns each
into an audit entry (`audit_trail.stored`: what changed, not copies of rows). `describe_action`
is the readable account of an action that a run's report lists, whole.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.core.cortex_plan import CORTEX_ACTIONS, RecordMentions, WriteProcedure, WriteTopic
from distill.core.models import Alias, ConflictSet, Fact, Observation, Rule
from distill.core.watermark import Mark


@dataclass(frozen=True)
class CreateFact:
    fact: Fact
    reason: str
    pass_name: str = "adjudicate"
    # The identity embedding of a state fact (what `nearest_facts` searches), if any.
    vector: npt.NDArray[np.float32] | None = None
    vector_model: str | None = None
    # sha of the normalised text of a memory, for the deterministic duplicate lookup.
    norm_hash: str | None = None
    # Reuse the identity vector of another fact (a restated version of the same value).
    vector_from: str | None = None
    # content_hash of the text `vector` embeds: the embedding cache's key, under which a store
    # may keep the vector once for every fact that has it.
    vector_text_hash: str | None = None

    @property
    def name(self) -> str:
        return "create_fact"

    @property
    def vector_key(self) -> str | None:
        """What the identity vector is stored under: the hash of the text it embeds, or, for
        a vector given without its text, of the vector's own bytes."""
        if self.vector is None:
            return None
        if self.vector_text_hash is not None:
            return self.vector_text_hash
        return vector_digest(self.vector)


@dataclass(frozen=True)
class ReviseFact:
    """A new version of an existing fact row (status, validity, counters, links)."""

    before: Fact
    after: Fact
    op: str  # reinforce retire retime link reclassify resolve pin retract pair hold split recompute
    reason: str
    pass_name: str = "adjudicate"

    @property
    def name(self) -> str:
        return f"{self.op}_fact"


@dataclass(frozen=True)
class OpenConflict:
    conflict: ConflictSet
    reason: str
    pass_name: str = "adjudicate"

    @property
    def name(self) -> str:
        return "open_conflict"


@dataclass(frozen=True)
class ReviseConflict:
    before: ConflictSet
    after: ConflictSet
    reason: str
    pass_name: str = "adjudicate"

    @property
    def name(self) -> str:
        return "revise_conflict"


OBSERVED_BY = "extract"  # the pass of a RecordObservation's audit entry


def observed_reason(outcome: str, reason: str) -> str:
    """The reason of an observation's audit entry: its outcome, and why."""
    return f"{outcome}: {reason}"


@dataclass(frozen=True)
class RecordObservation:
    observation: Observation
    pass_name: str = OBSERVED_BY

    @property
    def reason(self) -> str:
        return observed_reason(self.observation.outcome, self.observation.reason)

    @property
    def name(self) -> str:
        return "record_observation"


@dataclass(frozen=True)
class LearnAlias:
    alias: Alias
    reason: str
    pass_name: str = "adjudicate"

    @property
    def name(self) -> str:
        return "learn_alias"


@dataclass(frozen=True)
class EraseScope:
    """A person's hard delete, "forget this user" (the other one DESIGN allows is
    `PruneFact`, of decayed tombstones): every row of a
    subject (or, with `subject` None, of a whole project) is deleted: events, facts and their
    vectors, observations, conflict sets, jobs, the model's kept answers, the audit, and the
    cached vectors of the erased texts. What remains is this action's audit entry, which
    holds no content: who, when, and how many rows of each kind.

    `counts` is what the scope held when read under its lock; the store deletes exactly
    that many rows or nothing (something arrived meanwhile: erase again)."""

    project: str
    subject: str | None
    counts: Mapping[str, int]
    cache_keys: tuple[str, ...]  # content hashes of the erased texts, for the embedding cache
    reason: str
    pass_name: str = "api"

    @property
    def name(self) -> str:
        return "erase_subject" if self.subject is not None else "erase_project"


@dataclass(frozen=True)
class MoveCursor:
    """Where a pass that walks a scope's backlog stops: applied in the same transaction as
    the batch it ends, so that the cursor never passes work that was not written. `before`
    is where the pass read it (None: never moved); a cursor that moved meanwhile refuses the
    plan."""

    project: str
    subject: str
    cursor_pass: str
    before: str | None
    after: str
    at: datetime
    reason: str
    pass_name: str = "judge"

    @property
    def name(self) -> str:
        return "move_cursor"


@dataclass(frozen=True)
class MarkFacts:
    """The extraction watermark moving (`core.watermark`): the facts `mark_pass` finished
    with, each with the signature of the text it read, applied in the same transaction as
    what the pass derived from them, so that a mark never covers work that was not written.
    Each `Mark` names the signature the pass read (None: unmarked); a mark that changed
    meanwhile, or a fact not of the scope, refuses the plan."""

    project: str
    subject: str
    mark_pass: str
    marks: tuple[Mark, ...]
    at: datetime
    reason: str
    pass_name: str = "judge"

    @property
    def name(self) -> str:
        return "mark_facts"

    def audited(self) -> dict[str, Any]:
        """What the audit keeps: the pass and the facts, not the signatures (a digest of a
        text is the text's to keep, not the audit's)."""
        return {"pass": self.mark_pass, "facts": [m.fact_id for m in self.marks]}


@dataclass(frozen=True)
class AddRule:
    """A standing instruction added to a subject's rules: the only write rules have, since
    they are append-only (no pass revises or retires one). A learned rule names the memories
    it was promoted from, and `offered` are the memories its pass put to the model: the one
    validator refuses a rule citing any other."""

    rule: Rule
    reason: str
    pass_name: str = "promote_rules"
    offered: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return "add_rule"


@dataclass(frozen=True)
class PruneFact:
    """The second hard delete DESIGN allows: a tombstone whose weight decayed below the
    floor, with nothing live needing it (`core.decay` decides; the rule is in its
    docstring). The store deletes the fact's row, its sources and its vector, never an
    event; the audit entry keeps ids and fields, not its text. `weight` is what it had."""

    fact: Fact
    reason: str
    weight: float
    pass_name: str = "prune"

    @property
    def name(self) -> str:
        return "prune_tombstone"  # not `<op>_fact`: no version of the fact follows it


@dataclass(frozen=True)
class RecordCycle:
    """The record of one cycle of a pass over a scope, whatever it did: its audit entry is
    the whole write (`counts` in `after`), so that a cycle with nothing to do is on record
    too. `unstable`: the scope's drift flag as the cycle left it (`core.drift`)."""

    project: str
    subject: str
    cycle_pass: str
    counts: Mapping[str, int]
    unstable: bool
    reason: str

    @property
    def pass_name(self) -> str:
        return self.cycle_pass

    @property
    def name(self) -> str:
        return "record_cycle"


def vector_digest(vector: npt.ArrayLike) -> str:
    """A key for a vector given without its text: the hash of its float32 bytes."""
    data = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
    return "vector:" + hashlib.sha256(data).hexdigest()[:32]


Action = (
    CreateFact
    | ReviseFact
    | OpenConflict
    | ReviseConflict
    | RecordObservation
    | LearnAlias
    | EraseScope
    | MoveCursor
    | MarkFacts
    | AddRule
    | PruneFact
    | RecordCycle
    | WriteProcedure
    | RecordMentions
    | WriteTopic
)


@dataclass(frozen=True)
class Rejection:
    event_id: str
    extractor: str
    reason: str  # a short code: invalid_candidate, imperative_directive, ...
    detail: str
    candidate: dict[str, Any] | None = None


@dataclass
class Plan:
    """An ordered list of actions, plus what was rejected on the way."""

    actions: list[Action] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    def add(self, action: Action) -> None:
        self.actions.append(action)


# What the audit keeps of a pruned fact: ids and fields, never its text or value.
PRUNED_FIELDS = {
    "id",
    "kind",
    "status",
    "identity_key",
    "superseded_by",
    "supersedes_id",
    "source_event_ids",
    "recorded_at",
    "retired_at",
    "last_reinforced_at",
    "reinforcement_count",
}


def pruned_fields(action: PruneFact) -> tuple[dict[str, Any], dict[str, Any]]:
    """The audit's `before` and `after` of a prune: what was deleted, and its weight."""
    before = action.fact.model_dump(mode="json", include=PRUNED_FIELDS)
    return before, {"pruned": True, "weight": round(action.weight, 6)}


OBSERVATION_SUMMARY = {"id", "event_id", "fact_id", "extractor", "outcome", "reason"}


def describe_action(action: Action) -> dict[str, Any]:
    out: dict[str, Any] = {"action": action.name, "pass": action.pass_name, "reason": action.reason}
    if isinstance(action, CreateFact):
        out["after"] = action.fact.model_dump(mode="json")
    elif isinstance(action, ReviseFact):
        # Only what changed, with the id: a revision's before and after, readable and small.
        before, after = action.before, action.after
        changed = {k for k in type(before).model_fields if getattr(before, k) != getattr(after, k)}
        changed.add("id")
        out["before"] = before.model_dump(mode="json", include=changed)
        out["after"] = after.model_dump(mode="json", include=changed)
    elif isinstance(action, OpenConflict):
        out["after"] = action.conflict.model_dump(mode="json")
    elif isinstance(action, ReviseConflict):
        out["before"] = action.before.model_dump(mode="json")
        out["after"] = action.after.model_dump(mode="json")
    elif isinstance(action, RecordObservation):
        # The observation row holds the claim itself; the audit entry points at it.
        out["after"] = action.observation.model_dump(mode="json", include=OBSERVATION_SUMMARY)
    elif isinstance(action, LearnAlias):
        out["after"] = action.alias.model_dump(mode="json")
    elif isinstance(action, MoveCursor):
        out["before"], out["after"] = {"cursor": action.before}, {"cursor": action.after}
    elif isinstance(action, MarkFacts):
        out["after"] = action.audited()
    elif isinstance(action, AddRule):
        out["after"] = action.rule.model_dump(mode="json")
    elif isinstance(action, PruneFact):
        out["before"], out["after"] = pruned_fields(action)
    elif isinstance(action, RecordCycle):
        out["after"] = {**action.counts, "unstable": action.unstable}
    elif isinstance(action, CORTEX_ACTIONS):
        out.update(action.describe())
    else:
        out["after"] = {"erased": dict(action.counts)}
    return out


def subject_of(action: Action) -> tuple[str, str]:
    """(project, subject) an action writes to; alias actions are project-wide."""
    if isinstance(action, CreateFact):
        return action.fact.project, action.fact.subject
    if isinstance(action, ReviseFact):
        return action.after.project, action.after.subject
    if isinstance(action, OpenConflict):
        return action.conflict.project, action.conflict.subject
    if isinstance(action, ReviseConflict):
        return action.after.project, action.after.subject
    if isinstance(action, RecordObservation):
        return action.observation.project, action.observation.subject
    if isinstance(action, LearnAlias):
        return action.alias.project, ""
    if isinstance(action, MoveCursor | MarkFacts):
        return action.project, action.subject
    if isinstance(action, AddRule):
        return action.rule.project, action.rule.subject
    if isinstance(action, PruneFact):
        return action.fact.project, action.fact.subject
    if isinstance(action, RecordCycle):
        return action.project, action.subject
    if isinstance(action, CORTEX_ACTIONS):
        return action.scope()
    return action.project, action.subject or ""
