"""The domain records: events, candidates, facts, observations, conflict sets, jobs.

All are immutable pydantic models. Changing a fact means building a new version with
``model_copy(update=...)`` and putting both, before and after, in a plan action.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Scalar = str | int | float | bool
JsonObject = dict[str, Any]

PREDICATE_MAX_LENGTH = 80  # characters; longer "predicates" are sentences, not attributes
TEXT_MAX_LENGTH = 20_000  # characters of one event or fact text
# Lower-case words joined by "_", with at least one letter ("5k_pb" is a name, "2024" is not).
_PREDICATE_RE = re.compile(r"^[a-z0-9][a-z0-9_]*$")
_LETTER_RE = re.compile(r"[a-z]")


class Trust(StrEnum):
    """How far a source is believed, highest first."""

    TRUSTED = "trusted"
    SEMI_TRUSTED = "semi_trusted"
    THIRD_PARTY = "third_party"
    UNTRUSTED = "untrusted"

    @property
    def rank(self) -> int:
        return _TRUST_RANK[self]


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


def normalise_predicate(raw: str) -> str:
    """`Bike Count` / `bike-count` / `bikeCount` → `bike_count`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", raw.strip())
    return re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_")


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

    @field_validator("predicate", "updates")
    @classmethod
    def _predicate(cls, raw: str | None) -> str | None:
        if raw is None:
            return None
        predicate = normalise_predicate(raw)
        if not predicate or not _PREDICATE_RE.match(predicate) or not _LETTER_RE.search(predicate):
            raise ValueError(f"predicate {raw!r} has no usable characters")
        if len(predicate) > PREDICATE_MAX_LENGTH:
            raise ValueError(f"predicate longer than {PREDICATE_MAX_LENGTH} characters")
        return predicate

    @field_validator("qualifiers")
    @classmethod
    def _qualifier_keys(cls, raw: dict[str, Scalar]) -> dict[str, Scalar]:
        return {normalise_predicate(k): v for k, v in raw.items() if normalise_predicate(k)}

    @field_validator("valid_from", "valid_to")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("datetimes must carry a timezone (for example 2024-05-01T10:00:00Z)")
        return value

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


class EventIn(BaseModel):
    """What a caller hands to `add_event`, validated before anything is written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(min_length=1, max_length=200)
    text: str = Field(default="", max_length=TEXT_MAX_LENGTH)
    project: str = Field(default="default", min_length=1, max_length=200)
    occurred_at: datetime | None = None
    source: str = Field(default="api", max_length=200)
    trust: Trust = Trust.TRUSTED
    claims: tuple[Claim, ...] = ()
    idempotency_key: str | None = Field(default=None, max_length=200)

    @field_validator("occurred_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("occurred_at must carry a timezone (for example 2024-05-01T10:00:00Z)")
        return value

    @model_validator(mode="after")
    def _has_content(self) -> EventIn:
        if not self.text.strip() and not self.claims:
            raise ValueError("an event needs a text or at least one claim")
        return self


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

    @property
    def live(self) -> bool:
        return self.status in (FactStatus.ACTIVE, FactStatus.CANDIDATE)


class ConflictKind(StrEnum):
    CONFLICT = "conflict"  # two values for one identity; nobody knows which is right
    QUARANTINE = "quarantine"  # a low-trust claim held until somebody looks at it
    # Two facts under two predicate names that are probably one attribute: both stay active
    # and are served as contested until resolved (keeping one teaches an alias).
    IDENTITY = "identity"


class ConflictStatus(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"
    RECLASSIFIED = "reclassified"  # a third value turned the members into event facts


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
