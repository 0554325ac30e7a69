"""The bodies the HTTP API takes and gives, as pydantic models (they are its OpenAPI schemas).

Requests are checked here for their shape only (types, the fields a body may have, the
limits of one request); what an event, a time or an id must be is `Memory`'s to say, once,
for every interface, and its `InvalidInput` is a 422 like a shape error. No body names a
project: the key does (see `auth`). Stored records (facts, events, conflict sets, audit
entries, observations) are the core models themselves; search hits and context blocks are
described here as their `to_dict()` gives them, open to fields a later version adds.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from distill.core.context import CONTEXT_TOKENS, CONTEXT_TOKENS_MIN
from distill.core.models import AuditEntry, Event, Fact, FactKind, Observation, Trust
from distill.core.recall import MAX_SEARCH_LIMIT

# Events in one request. A batch is written in one transaction, validated whole first: a
# thousand events of a chat history is one request, and a client with more sends pages.
MAX_BATCH_EVENTS = 1_000
MAX_LIST_LIMIT = 500  # facts in one page of /v1/memories/list
LIST_LIMIT = 100
MAX_AUDIT_LIMIT = 1_000  # audit entries in one answer: each is expanded from its rows
AUDIT_LIMIT = 100
MAX_CONTEXT_TOKENS = 100_000  # past any model's useful prompt share; bounds the work too


class Body(BaseModel):
    """A request body: a field it does not know is refused, so a misspelt filter (or a
    `project`) is never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class EventBody(Body):
    """One event. Events with the same `idempotency_key` (or, without one, the same content:
    subject, text, source, trust, claims, action and a given `occurred_at`) are one event: sending
    it again stores nothing and names the stored one."""

    subject: str = Field(description="Whose memory it is: a user, an agent, a customer.")
    text: str | None = Field(None, description="What happened or was said.")
    occurred_at: AwareDatetime | None = Field(None, description="When; default now.")
    source: str | None = Field(None, description="Where it came from (default `api`).")
    trust: Trust | None = None
    claims: list[dict[str, Any]] | None = Field(
        None,
        description="Structured claims: {predicate, value} or {text}, with valid_from, "
        "valid_to, kind, confidence, qualifiers, action, evidence_span, entities.",
    )
    idempotency_key: str | None = None
    action: dict[str, Any] | None = Field(
        None,
        description="The action the event records: {type, outcome: success|failure, session, "
        "seq, state}; what the procedures pass counts.",
    )


class EventBatch(Body):
    events: list[EventBody] = Field(min_length=1, max_length=MAX_BATCH_EVENTS)


class Accepted(BaseModel):
    """The events' ids, at once; consolidation runs in the background."""

    ids: list[str] = Field(description="One id per event sent, in order.")
    already_stored: list[str] = Field(description="Those of the ids stored by an earlier call.")


class TimeAxes(Body):
    as_of: AwareDatetime | None = Field(None, description="What was true in the world then.")
    known_at: AwareDatetime | None = Field(None, description="As Distill believed it then.")


class SearchBody(TimeAxes):
    query: str
    subject: str | None = Field(None, description="One subject; every one when left out.")
    limit: int = Field(10, ge=1, le=MAX_SEARCH_LIMIT)
    kinds: list[FactKind] | None = None
    include: list[Literal["events"]] = Field(
        default_factory=list, description='"events": each hit carries its evidence events.'
    )


class EvidenceEvent(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    occurred_at: str
    source: str


class Hit(BaseModel):
    """A fact that answers the query, as `distill.core.recall.Hit.to_dict` gives it."""

    model_config = ConfigDict(extra="allow")

    id: str
    subject: str
    kind: FactKind
    predicate: str | None = None
    value: dict[str, Any] | None = None
    text: str
    status: str
    valid_from: str
    valid_to: str | None = None
    recorded_at: str
    retired_at: str | None = None
    pinned: bool = False
    reinforcement_count: int = 0
    last_reinforced_at: str | None = None
    score: float = Field(description="Higher is better.")
    parts: dict[str, Any] = Field(description="What each arm (lexical, vector) made of it.")
    contested: bool = Field(description="In an open conflict: see conflict_ids.")
    conflict_ids: list[str]
    evidence_event_ids: list[str]
    events: list[EvidenceEvent] | None = Field(None, description='With include ["events"].')


class Hits(BaseModel):
    results: list[Hit]


class ListBody(TimeAxes):
    subject: str | None = None
    kinds: list[FactKind] | None = None
    include_retired: bool = Field(False, description="Superseded, retracted and held facts too.")
    limit: int = Field(LIST_LIMIT, ge=1, le=MAX_LIST_LIMIT)
    cursor: str | None = Field(None, description="`next_cursor` of the previous page.")


class FactPage(BaseModel):
    results: list[Fact]
    next_cursor: str | None = Field(description="Pass it as `cursor` for the next page.")


class HistoryOut(BaseModel):
    fact: Fact
    versions: list[Fact]
    observations: list[Observation]
    audit: list[AuditEntry]


class Evidence(BaseModel):
    events: list[Event]


class RetractBody(Body):
    reason: str = Field(min_length=1, description="Why the fact is wrong (kept in the audit).")


class ResolveBody(Body):
    keep: str | None = Field(None, description="The fact to keep; none rejects every member.")


class ContextBody(TimeAxes):
    subject: str
    query: str | None = None
    budget_tokens: int = Field(CONTEXT_TOKENS, ge=CONTEXT_TOKENS_MIN, le=MAX_CONTEXT_TOKENS)


class ContextItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    contested: bool = False


class ContextRule(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    origin: str = Field(description="learned (promoted from memories) or written (a person).")


class ContextWaiting(BaseModel):
    id: str
    text: str
    occurred_at: str


class ContextOut(BaseModel):
    """The block, as `distill.core.context.Context.to_dict` gives it."""

    model_config = ConfigDict(extra="allow")

    subject: str
    project: str
    as_of: str | None = None
    budget_tokens: int
    tokens: int = Field(description="What the block takes.")
    left_out: int = Field(description="Facts that did not fit the budget.")
    text: str = Field(description="The block to put in a prompt.")
    rules: list[ContextRule] = Field(
        default_factory=list, description="The subject's rules shown first: standing instructions."
    )
    rules_left_out: int = Field(0, description="Rules that did not fit the budget.")
    facts: list[ContextItem] = Field(description="The same facts as data.")
    waiting: list[ContextWaiting] = Field(
        default_factory=list,
        description="The subject's latest events not consolidated yet (the worker waits for "
        "20 or 15 minutes), oldest first; shown at the block's end. Empty with as_of/known_at.",
    )
    waiting_left_out: int = Field(0, description="Waiting events not shown (more exist).")


class ConsolidateBody(Body):
    dry_run: bool = Field(False, description="Show the plan; write nothing.")


class EraseBody(Body):
    subject: str | None = Field(None, description="The subject to forget.")
    all_subjects: bool = Field(False, description="Forget every subject of the project.")


class Erased(BaseModel):
    project: str
    subject: str | None
    erased: dict[str, int] = Field(description="Rows deleted, by kind.")


class ErrorDetail(BaseModel):
    type: str = Field(description="A stable name for the error, e.g. not_found.")
    message: str


class ErrorOut(BaseModel):
    """Every error, whatever its status."""

    error: ErrorDetail
