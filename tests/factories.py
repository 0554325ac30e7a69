"""Small builders for domain records, with defaults that make a valid record.

Every builder takes keyword overrides for any model field. Times are minutes after `T0`
unless given, so tests read as a timeline.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.core.identity import identity_key
from distill.core.models import (
    Alias,
    AuditEntry,
    Claim,
    ConflictKind,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactKind,
    FactStatus,
    Observation,
    Outcome,
    Trust,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
PROJECT = "default"
SUBJECT = "alice"


def at(minutes: float = 0, *, days: float = 0) -> datetime:
    """`T0` plus an offset: `at(5)` is five minutes after T0."""
    return T0 + timedelta(minutes=minutes, days=days)


def new_id() -> str:
    return uuid.uuid4().hex


def make_event(
    text: str = "I have 3 bikes",
    *,
    subject: str = SUBJECT,
    project: str = PROJECT,
    occurred_at: datetime | None = None,
    idempotency_key: str | None = None,
    claims: Sequence[Claim | dict[str, Any]] = (),
    **overrides: Any,
) -> Event:
    event_id = overrides.pop("id", None) or new_id()
    fields: dict[str, Any] = {
        "id": event_id,
        "project": project,
        "subject": subject,
        "text": text,
        "occurred_at": occurred_at or T0,
        "recorded_at": T0,
        "source": "api",
        "trust": Trust.TRUSTED,
        "claims": tuple(claims),
        "idempotency_key": idempotency_key or event_id,
    }
    fields.update(overrides)
    return Event.model_validate(fields)


def make_fact(
    predicate: str | None = "bike_count",
    value: dict[str, Any] | None = None,
    *,
    subject: str = SUBJECT,
    project: str = PROJECT,
    kind: FactKind = FactKind.STATE,
    status: FactStatus = FactStatus.ACTIVE,
    qualifiers: dict[str, Any] | None = None,
    valid_from: datetime | None = None,
    source_event_ids: Sequence[str] = (),
    **overrides: Any,
) -> Fact:
    """A state fact by default; `kind=FactKind.EVENT` for an occurrence. See `make_memory`."""
    qualifiers = qualifiers or {}
    if predicate is not None and value is None:
        value = {"count": 3}
    start = valid_from or T0
    fields: dict[str, Any] = {
        "id": new_id(),
        "project": project,
        "subject": subject,
        "kind": kind,
        "predicate": predicate,
        "value": value,
        "text": f"{predicate} = {value}" if predicate else "a memory",
        "qualifiers": qualifiers,
        "identity_key": identity_key(predicate, qualifiers) if predicate else None,
        "status": status,
        "valid_from": start,
        "recorded_at": T0,
        "source_event_ids": tuple(source_event_ids),
        "last_reinforced_at": start,
        "trust": Trust.TRUSTED,
    }
    fields.update(overrides)
    return Fact.model_validate(fields)


def make_memory(text: str = "likes green tea", **overrides: Any) -> Fact:
    """A free-text memory fact (no predicate, no identity key)."""
    return make_fact(None, None, kind=FactKind.MEMORY, text=text, **overrides)


def make_conflict(
    member_ids: Sequence[str],
    *,
    identity_key: str | None = "bike_count|{}",
    subject: str = SUBJECT,
    project: str = PROJECT,
    **overrides: Any,
) -> ConflictSet:
    fields: dict[str, Any] = {
        "id": new_id(),
        "project": project,
        "subject": subject,
        "identity_key": identity_key,
        "kind": ConflictKind.CONFLICT,
        "status": ConflictStatus.OPEN,
        "member_ids": tuple(member_ids),
        "reason": "different value",
        "created_at": T0,
    }
    fields.update(overrides)
    return ConflictSet.model_validate(fields)


def make_claim(
    predicate: str = "bike_count", value: dict[str, Any] | None = None, **kw: Any
) -> Claim:
    return Claim(predicate=predicate, value=value if value is not None else {"count": 3}, **kw)


def make_observation(
    event: Event,
    fact_id: str | None = None,
    *,
    claim: Claim | None = None,
    claim_hash: str = "claim-1",
    **overrides: Any,
) -> Observation:
    fields: dict[str, Any] = {
        "id": new_id(),
        "project": event.project,
        "subject": event.subject,
        "event_id": event.id,
        "fact_id": fact_id,
        "extractor": "claims",
        "claim": claim or make_claim(),
        "claim_hash": claim_hash,
        "source": event.source,
        "trust": event.trust,
        "occurred_at": event.occurred_at,
        "outcome": Outcome.CREATED,
        "reason": "new identity",
    }
    fields.update(overrides)
    return Observation.model_validate(fields)


def make_alias(
    alias: str = "bicycle_count", canonical: str = "bike_count", **overrides: Any
) -> Alias:
    fields: dict[str, Any] = {
        "project": PROJECT,
        "alias": alias,
        "canonical": canonical,
        "distance": 0.12,
        "learned_at": T0,
    }
    fields.update(overrides)
    return Alias.model_validate(fields)


def make_audit(fact_id: str | None = None, **overrides: Any) -> AuditEntry:
    fields: dict[str, Any] = {
        "id": new_id(),
        "project": PROJECT,
        "subject": SUBJECT,
        "job_id": None,
        "pass_name": "adjudicate",
        "action": "create_fact",
        "reason": "new identity",
        "fact_id": fact_id,
        "before": None,
        "after": {"id": fact_id} if fact_id else None,
        "at": T0,
    }
    fields.update(overrides)
    return AuditEntry.model_validate(fields)


def unit_vector(*components: float, dim: int = 8) -> npt.NDArray[np.float32]:
    """An L2-normalised float32 vector whose first values are `components`."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[: len(components)] = components
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
