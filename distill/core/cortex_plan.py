"""The plan actions of the procedures and topics passes (`core.patterns` says what they
write), and their checks in the one validator.

Each action says, once, where it writes (`scope`), what its audit entry keeps (`stored`),
how a report shows it (`describe`) and what may never be (`check`), so that the applier,
the audit and the report handle all three with one branch each. `check` holds the
invariants a pass could get wrong:

- a procedure's id is the one its scope and actions give, and its status moved only along
  the lifecycle (`core.procedures.allowed`): never candidate → deprecated, never promoted
  below its support threshold, never demoted at or above its effectiveness bound;
- a topic's id is its sorted member set's, with two members or more, and a retired topic
  says when;
- an event's mentions are of that event, in its scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from distill.core.patterns import (
    Mention,
    Procedure,
    Topic,
    TopicStatus,
    allowed,
    procedure_id,
    topic_id,
)
from distill.errors import IntegrityViolation

PROCEDURES_PASS = "procedures"
TOPICS_PASS = "topics"


class _Written:
    """What a procedure's and a topic's write share: where it writes, what its audit entry
    keeps (the whole record when made, else its id and the fields that changed; never
    `UNSTORED`, which the record's other rows hold) and how a report shows it."""

    UNSTORED: ClassVar[frozenset[str]]
    before: Any
    after: Any

    def scope(self) -> tuple[str, str]:
        return self.after.project, self.after.subject

    def stored(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        if self.before is None:
            return None, self.after.model_dump(mode="json", exclude=set(self.UNSTORED))
        fields = type(self.before).model_fields
        changed = {
            k
            for k in fields
            if k not in self.UNSTORED and getattr(self.before, k) != getattr(self.after, k)
        }
        changed.add("id")
        return (
            self.before.model_dump(mode="json", include=changed),
            self.after.model_dump(mode="json", include=changed),
        )

    def describe(self) -> dict[str, Any]:
        before, after = self.stored()
        out: dict[str, Any] = {"after": after}
        if before is not None:
            out["before"] = before
        return out


@dataclass(frozen=True)
class WriteProcedure(_Written):
    """A procedure made (`before` None) or changed: its support recounted, its status moved,
    a use recorded."""

    UNSTORED: ClassVar[frozenset[str]] = frozenset({"source_event_ids"})

    before: Procedure | None
    after: Procedure
    reason: str
    pass_name: str = PROCEDURES_PASS

    @property
    def name(self) -> str:
        return "create_procedure" if self.before is None else "revise_procedure"

    def check(self) -> None:
        p = self.after
        if p.id != procedure_id(p.project, p.subject, p.action_a, p.action_b):
            raise IntegrityViolation(f"procedure {p.id} is not the id of {p.name} in its scope")
        if min(p.support, p.successes, p.failures) < 0:
            raise IntegrityViolation(f"procedure {p.name} has a negative count")
        if self.before is not None:
            b = self.before
            if (b.id, b.project, b.subject) != (p.id, p.project, p.subject):
                raise IntegrityViolation(f"a revision may not move procedure {b.id}")
            problem = allowed(b.status, p)
            if problem is not None:
                raise IntegrityViolation(f"procedure {p.name}: {problem}")
        else:
            problem = allowed(None, p)
            if problem is not None:
                raise IntegrityViolation(f"procedure {p.name}: {problem}")


@dataclass(frozen=True)
class RecordMentions:
    """The entities one event names, recorded once (derived data, like an embedding)."""

    project: str
    subject: str
    event_id: str
    mentions: tuple[Mention, ...]
    reason: str
    pass_name: str = TOPICS_PASS

    @property
    def name(self) -> str:
        return "record_mentions"

    def scope(self) -> tuple[str, str]:
        return self.project, self.subject

    def stored(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        entities = [m.entity for m in self.mentions]
        return None, {"event_id": self.event_id, "entities": entities}

    def describe(self) -> dict[str, Any]:
        return {"after": self.stored()[1]}

    def check(self) -> None:
        for m in self.mentions:
            if (m.project, m.subject, m.event_id) != (self.project, self.subject, self.event_id):
                raise IntegrityViolation(
                    f"a mention of {m.entity!r} is not of event {self.event_id} in its scope"
                )


@dataclass(frozen=True)
class WriteTopic(_Written):
    """A topic made, retired (its community changed), or back (the same community again)."""

    UNSTORED: ClassVar[frozenset[str]] = frozenset({"embedding"})

    before: Topic | None
    after: Topic
    reason: str
    pass_name: str = TOPICS_PASS

    @property
    def name(self) -> str:
        if self.before is None:
            return "create_topic"
        if self.after.status is TopicStatus.RETIRED:
            return "retire_topic"
        return "revise_topic"

    def check(self) -> None:
        t = self.after
        if len(t.members) < 2 or list(t.members) != sorted(set(t.members)):
            raise IntegrityViolation(f"topic {t.id}: members are two or more, sorted, once each")
        if len(t.names) != len(t.members):
            raise IntegrityViolation(f"topic {t.id}: one name per member")
        if t.id != topic_id(t.project, t.subject, t.members):
            raise IntegrityViolation(f"topic {t.id} is not the id of its member set")
        if (t.status is TopicStatus.RETIRED) != (t.retired_at is not None):
            raise IntegrityViolation(f"topic {t.id}: retired when, and only when, it says when")
        b = self.before
        if b is not None and (b.id, b.project, b.subject, b.members) != (
            t.id,
            t.project,
            t.subject,
            t.members,
        ):
            raise IntegrityViolation(f"a revision may not change topic {b.id}'s members")


CortexAction = WriteProcedure | RecordMentions | WriteTopic
CORTEX_ACTIONS = (WriteProcedure, RecordMentions, WriteTopic)
