"""What the procedures and topics passes learn: procedures, mentions and topics.

They are not facts: a fact is one claim about a subject with a validity in the world, while
a procedure is a count over many events ("after a successful build, a test succeeded 5
times") with a lifecycle of its own, and a topic is a community of entities. Each has a
table of its own, and each is written only through the applier (`core.cortex_plan`), with
an audit entry, erased with its subject and copied with the store.

Ids are deterministic, so that a re-run lands on the same row instead of making another:
a procedure's from (project, subject, action a, action b), a topic's from its project,
subject and sorted member set (the same community found in any order has one id).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from distill.core.identity import content_hash

ARROW = "→"  # between the two actions of a procedure's name


class ProcedureStatus(StrEnum):
    CANDIDATE = "candidate"  # seen, not yet often enough to be offered (`match_procedures`)
    ACTIVE = "active"  # offered to an agent whose state meets its precondition
    DEPRECATED = "deprecated"  # offered once, then found to fail too often


class Procedure(BaseModel):
    """`action_a → action_b`: when `action_a` succeeds, `action_b` tends to follow and succeed.

    `support` is how many times the pair was seen succeed back to back in one session, counted
    again from the events on every run (never added to); `successes` and `failures` count the
    uses an agent reported (`Memory.record_procedure_use`), which no event holds. The
    `precondition` is `key=value` clauses, comma-separated and sorted (empty: any state)."""

    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    action_a: str
    action_b: str
    status: ProcedureStatus
    support: int
    successes: int = 0
    failures: int = 0
    precondition: str = ""
    source_event_ids: tuple[str, ...] = ()
    created_at: datetime
    updated_at: datetime

    @property
    def name(self) -> str:
        return f"{self.action_a} {ARROW} {self.action_b}"

    @property
    def uses(self) -> int:
        return self.successes + self.failures

    @property
    def effectiveness(self) -> float | None:
        """Successes ÷ uses, or None before the first reported use."""
        return self.successes / self.uses if self.uses else None


PROMOTE_SUPPORT = 3  # occurrences before a procedure is offered: the seed's promote_threshold
# Effectiveness under which an active procedure is deprecated, and at or over which a
# deprecated one is offered again: the seed's LifecycleConfig. The gap between them is the
# hysteresis (a procedure at 0.5 keeps whichever status it had).
DEMOTE_BELOW = 0.4
REPROMOTE_AT = 0.6


def settle(status: ProcedureStatus, support: int, effectiveness: float | None) -> ProcedureStatus:
    """The status a procedure has after a change of its counts (the lifecycle above)."""
    if status is ProcedureStatus.CANDIDATE:
        return ProcedureStatus.ACTIVE if support >= PROMOTE_SUPPORT else status
    if effectiveness is None:
        return status
    if status is ProcedureStatus.ACTIVE and effectiveness < DEMOTE_BELOW:
        return ProcedureStatus.DEPRECATED
    if status is ProcedureStatus.DEPRECATED and effectiveness >= REPROMOTE_AT:
        return ProcedureStatus.ACTIVE
    return status


def allowed(before: ProcedureStatus | None, after: Procedure) -> str | None:
    """Why `after` may not be written over a procedure of status `before` (None: new), or
    None when it may: its status must be the lifecycle's (`settle`)."""
    start = ProcedureStatus.CANDIDATE if before is None else before
    expected = settle(start, after.support, after.effectiveness)
    if after.status is expected:
        return None
    if start is ProcedureStatus.CANDIDATE and after.status is ProcedureStatus.DEPRECATED:
        return "a candidate is never deprecated (the stale transition is rejected: core.procedures)"
    return (
        f"{start} → {after.status} breaks the lifecycle: support {after.support}, "
        f"effectiveness {after.effectiveness} gives {expected}"
    )


def procedure_id(project: str, subject: str, action_a: str, action_b: str) -> str:
    return content_hash("procedure", project, subject, action_a, action_b)


class MentionOrigin(StrEnum):
    CLAIMS = "claims"  # named in a claim the event carried
    EXTRACTED = "extracted"  # named by the extractor (the model) in a claim it proposed
    TEXT = "text"  # read from the event's text, offline (`core.statements`)


class Mention(BaseModel):
    """An event names an entity. `entity` is the key (case-folded, spaces collapsed), `name`
    the first spelling seen."""

    model_config = ConfigDict(frozen=True)

    project: str
    subject: str
    event_id: str
    entity: str
    name: str
    origin: MentionOrigin
    recorded_at: datetime


class TopicStatus(StrEnum):
    ACTIVE = "active"
    RETIRED = "retired"  # its community changed or dissolved; kept, with `retired_at`


class Topic(BaseModel):
    """A community of two or more entities that travel together in a subject's events.

    `members` are entity keys, sorted; `names` their spellings, in the same order. The
    embedding is the mean of the members' (None when no member has one). A topic whose
    membership changes is retired and the new community is another topic (another id)."""

    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    name: str
    members: tuple[str, ...]
    names: tuple[str, ...]
    embedding: tuple[float, ...] | None = None
    named_by: str = "members"  # or the model that named it
    status: TopicStatus = TopicStatus.ACTIVE
    created_at: datetime
    retired_at: datetime | None = None


def topic_id(project: str, subject: str, members: tuple[str, ...]) -> str:
    return content_hash("topic", project, subject, *sorted(members))
