"""The domain records: events, candidates, facts, observations, conflict sets, jobs.

All are immutable pydantic models. Changing a fact means building a new version with
``model_copy(update=...)`` and putting both, before and after, in a plan action.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from distill.core.event_action import EventAction
from distill.core.json_data import check_json
from distill.core.predicates import normalise_predicate as normalise_predicate  # re-exported

Scalar = str | int | float | bool
JsonObject = dict[str, Any]

PREDICATE_MAX_LENGTH = 80  # characters; longer "predicates" are sentences, not attributes
TEXT_MAX_LENGTH = 20_000  # characters of one event or fact text
NAME_MAX_LENGTH = 200  # characters of a subject, project, source or idempotency key
ENTITY_MAX_LENGTH = 120  # characters of an entity's name: a name, not a sentence
ENTITIES_MAX = 32  # entities one claim names; a claim is about a few things
# The validation context's key for the present (`core.event_in`): new input is held to the
# strict rules; a record read back (validated without it) is not checked again.
NOW = "now"


class Trust(StrEnum):
    """How far a source is believed, highest first."""

    TRUSTED = "trusted"
    SEMI_TRUSTED = "semi_trusted"
    THIRD_PARTY = "third_party"
    UNTRUSTED = "untrusted"

    @property
    def rank(self) -> int:
        return _TRUST_RANK[self]

    def yields_to(self, other: Trust) -> bool:
        """Whether this source's statement could not displace a fact from `other`: an
        untrusted one never does, a less trusted one does not (DESIGN, the write gate)."""
        return self is Trust.UNTRUSTED or self.rank < other.rank


_TRUST_RANK = {
    Trust.TRUSTED: 3,
    Trust.SEMI_TRUSTED: 2,
    Trust.THIRD_PARTY: 1,
    Trust.UNTRUSTED: 0,
}


class FactStatus(StrEnum):
    CANDIDATE = "candidate"  # proposed, held back (open conflict or quarantine); never served
    ACTIVE = "active"  # the current belief for its identity
    SUPERSEDED = "superseded"  # replaced; `superseded_by` is the receipt
    RETRACTED = "retracted"  # withdrawn without a replacement; the audit entry is the receipt


class FactKind(StrEnum):
    STATE = "state"  # an attribute with one current value per identity ("bike_count": 3)
    EVENT = "event"  # something that happened; never fuses with another occurrence
    MEMORY = "memory"  # free text with no predicate


class ClaimAction(StrEnum):
    CREATE = "create"
    SUPERSEDE = "supersede"


def normalise_subject(raw: str) -> str:
    """One spelling per subject: trimmed, NFC (`"Jose\u0301"` and `"José"` are one person)."""
    return unicodedata.normalize("NFC", raw.strip())


def as_utc(value: datetime | None, field: str) -> datetime | None:
    """An aware datetime that has an instant in UTC (year 1 at +01:00 has none)."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError(f"{field} must carry a timezone (for example 2024-05-01T10:00:00Z)")
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"{value.isoformat()} has no instant in UTC (it falls outside years 1 to 9999)"
        ) from None
    return value


class Claim(BaseModel):
    """A candidate claim: what an extractor proposes for one event.

    It is validated here, at the boundary; anything an extractor or a model returns goes
    through this model before the core looks at it. `subject` is accepted and recorded but
    never used for scope: scope always comes from the event.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    predicate: str | None = None
    value: JsonObject | None = None
    text: str | None = Field(default=None, max_length=TEXT_MAX_LENGTH)
    qualifiers: dict[str, Scalar] = Field(default_factory=dict)
    action: ClaimAction = ClaimAction.CREATE
    kind: FactKind | None = None
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    evidence_span: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    subject: str | None = None
    # The predicate of a known fact this claim changes, when its extractor says so (a model
    # shown the subject's known facts). Used only if it names an active fact of the subject.
    updates: str | None = None
    # The people, places and things the claim is about (`Ada`, `Lyon`): what the topics
    # pass links the event to (`core.topics`). Not part of what the claim says.
    entities: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _json_data(cls, data: Any) -> Any:
        """Every field is JSON data as given (see `json_data`; `EventIn` holds a caller's
        claims to the strict rules). Keys this model ignores (a model's answer may carry
        some) are not looked at."""
        if isinstance(data, dict):
            for key, value in claim_fields(data):
                check_json(value, (key,), strict=False)
        return data

    @field_validator("predicate", "updates")
    @classmethod
    def _predicate(cls, raw: str | None) -> str | None:
        if raw is None:
            return None
        predicate = normalise_predicate(raw)
        if not any(unicodedata.category(c)[0] == "L" for c in predicate):
            raise ValueError(f"predicate {raw!r} has no letters")
        if len(predicate) > PREDICATE_MAX_LENGTH:
            raise ValueError(f"predicate longer than {PREDICATE_MAX_LENGTH} characters")
        return predicate

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, raw: Any, info: ValidationInfo) -> Any:
        """A caller's names are held to the rules (an error says which); a model's answer
        (validated without a context) keeps the names that pass and drops the rest, since
        a name is no reason to lose the fact it came with."""
        strict = bool(info.context) and NOW in (info.context or {})
        if not isinstance(raw, list | tuple):
            if strict:
                return raw  # the field's own validation says what is wrong
            return ()
        names: dict[str, str] = {}
        for name in raw:
            shown = (
                " ".join(unicodedata.normalize("NFC", name).split())
                if isinstance(name, str)
                else ""
            )
            if not shown or len(shown) > ENTITY_MAX_LENGTH:
                if strict:
                    raise ValueError(f"an entity is a name of 1 to {ENTITY_MAX_LENGTH} characters")
                continue
            names.setdefault(shown.casefold(), shown)
        if len(names) > ENTITIES_MAX and strict:
            raise ValueError(f"a claim names at most {ENTITIES_MAX} entities")
        return tuple(list(names.values())[:ENTITIES_MAX])

    @field_validator("qualifiers")
    @classmethod
    def _qualifier_keys(cls, raw: dict[str, Scalar]) -> dict[str, Scalar]:
        return {normalise_predicate(k): v for k, v in raw.items() if normalise_predicate(k)}

    @field_validator("valid_from", "valid_to")
    @classmethod
    def _aware(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        return as_utc(value, str(info.field_name))

    @model_validator(mode="after")
    def _shape(self) -> Claim:
        if self.predicate is None:
            if not (self.text and self.text.strip()):
                raise ValueError("a claim needs a predicate and value, or a text")
            if self.kind not in (None, FactKind.MEMORY):
                raise ValueError(f"a {self.kind} claim needs a predicate")
        else:
            if self.value is None:
                raise ValueError("a claim with a predicate needs a value object")
            if self.kind is FactKind.MEMORY:
                raise ValueError("a memory claim has text, not a predicate")
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be after valid_from")
        return self

    @property
    def resolved_kind(self) -> FactKind:
        if self.kind is not None:
            return self.kind
        return FactKind.MEMORY if self.predicate is None else FactKind.STATE


CLAIM_FIELDS = dict.fromkeys(Claim.model_fields)  # in order, for messages


def claim_fields(claim: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A claim's fields that must be JSON data: all it has, but times given as datetimes."""
    for key, value in claim.items():
        if key in CLAIM_FIELDS and not (
            key in ("valid_from", "valid_to") and isinstance(value, datetime)
        ):
            yield key, value


class Event(BaseModel):
    """A stored event. Immutable once written."""

    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    text: str
    occurred_at: datetime
    recorded_at: datetime
    source: str
    trust: Trust
    claims: tuple[Claim, ...] = ()
    idempotency_key: str
    action: EventAction | None = None


class Added(BaseModel):
    """What adding events did: each event as stored, in the order given, and whether it was
    stored already (a retry, or the same event again: see `Memory._event`)."""

    model_config = ConfigDict(frozen=True)

    events: tuple[Event, ...]
    already_stored: tuple[bool, ...]

    @property
    def added(self) -> int:
        return self.already_stored.count(False)

    @property
    def duplicates(self) -> int:
        return self.already_stored.count(True)


class Fact(BaseModel):
    """Durable knowledge, with bitemporal validity and provenance."""

    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    kind: FactKind
    predicate: str | None
    value: JsonObject | None
    text: str
    qualifiers: dict[str, Scalar] = Field(default_factory=dict)
    attribution: str | None = None
    identity_key: str | None
    # What the creating claim itself said, when `value` carries keys forward from the version
    # before (a supersede); None when `value` is exactly what was stated.
    stated: JsonObject | None = None
    status: FactStatus
    valid_from: datetime
    valid_to: datetime | None = None
    recorded_at: datetime
    retired_at: datetime | None = None
    supersedes_id: str | None = None
    superseded_by: str | None = None
    source_event_ids: tuple[str, ...] = ()
    reinforcement_count: int = 0
    last_reinforced_at: datetime
    trust: Trust
    confidence: float = 1.0
    pinned: bool = False
    # Created from a claim stated as a change (`supersede`) that matched no known value under
    # another name: an older value of a related attribute that arrives later is judged
    # against it as if the change had come second (invariant 8). Cleared once it is paired.
    unpaired_change: bool = False

    @property
    def live(self) -> bool:
        return self.status in (FactStatus.ACTIVE, FactStatus.CANDIDATE)

    @property
    def never_true(self) -> bool:
        """Its interval is empty: a version ended where it began (the earlier of two versions
        of one instant, a value a person turned down), history of a decision, not of the
        world."""
        return self.valid_to is not None and self.valid_to <= self.valid_from


class ConflictKind(StrEnum):
    # Two values for one identity, or two memories a model says replace one another where the
    # words show no change (`core.changes`): nobody knows which is right.
    CONFLICT = "conflict"
    QUARANTINE = "quarantine"  # a low-trust claim held until somebody looks at it
    # Two facts under two predicate names that are probably one attribute: both stay active
    # and are served as contested until resolved (keeping one teaches an alias).
    IDENTITY = "identity"


class ConflictStatus(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"
    RECLASSIFIED = "reclassified"  # a third value turned the members into event facts


class Resolver(StrEnum):
    """Who closed a conflict set, so that what a person decided is told apart from what a
    claim or a model settled (no automatic path undoes a person's decision)."""

    PERSON = "person"  # `Memory.resolve_conflict`: Python, the CLI, the HTTP API, MCP
    MODEL = "model"  # the identity judge's verdict, applied as a person's would be
    CLAIM = "claim"  # what a later claim showed: a change to a held value, a third value


class ConflictSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    identity_key: str | None
    kind: ConflictKind
    status: ConflictStatus
    member_ids: tuple[str, ...]
    reason: str
    created_at: datetime
    resolved_at: datetime | None = None
    kept_fact_id: str | None = None
    # None while open, and for a set closed before schema 21 that its audit trail does not
    # name a closer for.
    resolved_by: Resolver | None = None
    # The statements of the kept fact when the set was resolved by making it current: what
    # the person (or the judge) saw and accepted, whatever their sources' trust. A statement
    # consolidated after the decision is not among them. Empty when nothing was kept, when
    # the kept fact was current already or filed into history, when another set's
    # resolution closed this one, and for a set closed before schema 23.
    accepted_event_ids: tuple[str, ...] = ()


class Outcome(StrEnum):
    CREATED = "created"
    REINFORCED = "reinforced"
    DUPLICATE = "duplicate"
    SUPERSEDED = "superseded"  # the candidate superseded an older fact
    HISTORICAL = "historical"  # an older state that arrived late, filed into the timeline
    CONFLICT = "conflict"
    # A new fact under a name that probably means a known fact's attribute: both contested.
    CONTESTED = "contested"
    QUARANTINED = "quarantined"
    RECLASSIFIED = "reclassified"
    REJECTED = "rejected"
    # A claim of a predicate whose policy is `vote` (`core.votes`): recorded as a vote, its
    # fact left to the derive pass.
    VOTE = "vote"


class Observation(BaseModel):
    """One accepted candidate: what was claimed, when, by which source, with what outcome."""

    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    event_id: str
    fact_id: str | None
    extractor: str
    claim: Claim
    claim_hash: str
    source: str
    trust: Trust
    occurred_at: datetime
    outcome: Outcome
    reason: str


class Alias(BaseModel):
    """A predicate learned to mean another one, in one project."""

    model_config = ConfigDict(frozen=True)

    project: str
    alias: str
    canonical: str
    distance: float
    learned_at: datetime


class RuleOrigin(StrEnum):
    LEARNED = "learned"  # promoted from corroborated memories by the promote_rules pass
    WRITTEN = "written"  # written by a person (Memory.add_rule); no pass ever touches it


class Rule(BaseModel):
    """A standing instruction the agent follows for a subject: one line, append-only.

    `fingerprint` is the hash of the normalised text (`core.rules.fingerprint`), unique per
    subject, so a rule is stated once whatever its case and punctuation; `source_fact_ids`
    are the memories a learned rule was promoted from (none for a written one)."""

    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    text: str
    fingerprint: str
    origin: RuleOrigin
    source_fact_ids: tuple[str, ...] = ()
    pass_name: str
    reason: str
    created_at: datetime


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Job(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    status: JobStatus
    attempts: int = 0
    error: str | None = None
    created_at: datetime
    updated_at: datetime
    not_before: datetime | None = None
    event_ids: tuple[str, ...] = ()
    # What extracting this job's events cost, every attempt included.
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Who holds the job while it runs ("pid 4242 on host-a"), and since when.
    owner: str | None = None
    claimed_at: datetime | None = None


class AuditEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    project: str
    subject: str
    job_id: str | None
    pass_name: str
    action: str
    reason: str
    fact_id: str | None
    before: JsonObject | None
    after: JsonObject | None
    at: datetime


RejectReason = Literal[
    "invalid_candidate",
    "imperative_directive",
    "evidence_not_in_event",
    "pinned",
    "unknown_message",  # a model's candidate names a message its batch did not show
]
