"""Rows ↔ models, for every backend: one function each way per table.

Writing: instants become fixed-width UTC text (``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``), so that
text order is time order in SQLite and PostgreSQL reads it into `timestamptz`; dicts and lists
become canonical JSON text (sorted keys), which SQLite stores as it is and PostgreSQL reads
into `jsonb`. The same model therefore always gives the same parameters, on every backend,
which makes "the stored row still equals what was read" a plain comparison.

Reading: both drivers are set up to hand JSON columns back as text (`loads` parses it) and
numbers and booleans as Python values; SQLite returns instants as the text written above,
psycopg as aware datetimes, and `as_time` takes either. Vectors are the one column whose
encoding really differs (a BLOB, or pgvector's text form): each store encodes its own.

A claim is stored without its null fields (every one of them defaults to null, so it reads
back the same): they were a third of each event's claims.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic_core import to_jsonable_python

from distill.core.models import (
    Alias,
    AuditEntry,
    ConflictSet,
    Event,
    Fact,
    Job,
    Observation,
)
from distill.errors import InvalidInput

Params = dict[str, Any]
Row = Mapping[str, Any]  # sqlite3.Row and psycopg's dict rows both read by column name


# -- scalars ---------------------------------------------------------------------------------------
def ts(value: datetime | None) -> str | None:
    """A timezone-aware datetime as fixed-width UTC text."""
    if value is None:
        return None
    return _ts(value)


@lru_cache(maxsize=8192)  # the same few instants (a job's `now`, an event's time) recur a lot
def _ts(value: datetime) -> str:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"datetime {value.isoformat()} has no timezone; distill stores UTC")
    # isoformat pads the year to four digits, unlike strftime("%Y") on some platforms.
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "+00:00"


def as_time(value: str | datetime) -> datetime:
    """A stored instant as an aware UTC datetime, from text (SQLite) or a datetime (psycopg)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(value).astimezone(UTC)


def as_opt_time(value: str | datetime | None) -> datetime | None:
    return None if value is None else as_time(value)


def dumps(value: Any) -> str:
    if not value and isinstance(value, dict | list | tuple):
        return "{}" if isinstance(value, dict) else "[]"
    try:  # most values are plain JSON already; only datetimes and models need converting
        return _ENCODER.encode(value)
    except TypeError:
        return _ENCODER.encode(to_jsonable_python(value))


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def to_blob(vector: npt.ArrayLike) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(blob, dtype=np.float32).copy()


def _text(value: Any) -> str | None:
    """Enum members (or plain strings, from an unvalidated model_copy) as their value."""
    return None if value is None else str(value)


# -- events ----------------------------------------------------------------------------------------
def event_params(event: Event) -> Params:
    return {
        "id": event.id,
        "project": event.project,
        "subject": event.subject,
        "text": event.text,
        "occurred_at": ts(event.occurred_at),
        "recorded_at": ts(event.recorded_at),
        "source": event.source,
        "trust": _text(event.trust),
        "claims": dumps([c.model_dump(mode="json", exclude_none=True) for c in event.claims]),
        "idempotency_key": event.idempotency_key,
    }


def event_from_row(row: Row) -> Event:
    return Event(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        text=row["text"],
        occurred_at=as_time(row["occurred_at"]),
        recorded_at=as_time(row["recorded_at"]),
        source=row["source"],
        trust=row["trust"],
        claims=tuple(loads(row["claims"])),
        idempotency_key=row["idempotency_key"],
    )


# -- jobs ------------------------------------------------------------------------------------------
def job_from_row(row: Row, event_ids: tuple[str, ...]) -> Job:
    return Job(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        status=row["status"],
        attempts=row["attempts"],
        error=row["error"],
        created_at=as_time(row["created_at"]),
        updated_at=as_time(row["updated_at"]),
        not_before=as_opt_time(row["not_before"]),
        event_ids=event_ids,
        llm_calls=row["llm_calls"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        owner=None
        if row["claim_pid"] is None
        else f"pid {row['claim_pid']} on {row['claim_host']}",
        claimed_at=as_opt_time(row["claimed_at"]),
    )


def _owner(row: Row) -> str | None:
    if row["claim_pid"] is None:
        return None
    return f"pid {row['claim_pid']} on {row['claim_host']}"


# -- facts -----------------------------------------------------------------------------------------
def fact_params(fact: Fact) -> Params:
    """Every model field as the column value it is stored as (norm_hash is not a field)."""
    return {
        "id": fact.id,
        "project": fact.project,
        "subject": fact.subject,
        "kind": _text(fact.kind),
        "predicate": fact.predicate,
        "value": None if fact.value is None else dumps(fact.value),
        "stated": None if fact.stated is None else dumps(fact.stated),
        "text": fact.text,
        "qualifiers": dumps(fact.qualifiers),
        "attribution": fact.attribution,
        "identity_key": fact.identity_key,
        "status": _text(fact.status),
        "valid_from": ts(fact.valid_from),
        "valid_to": ts(fact.valid_to),
        "recorded_at": ts(fact.recorded_at),
        "retired_at": ts(fact.retired_at),
        "supersedes_id": fact.supersedes_id,
        "superseded_by": fact.superseded_by,
        "source_event_ids": dumps(list(fact.source_event_ids)),
        "reinforcement_count": int(fact.reinforcement_count),
        "last_reinforced_at": ts(fact.last_reinforced_at),
        "trust": _text(fact.trust),
        "confidence": float(fact.confidence),
        "pinned": bool(fact.pinned),  # sqlite3 stores a bool as 1 or 0
    }


def fact_from_row(row: Row) -> Fact:
    return Fact(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        kind=row["kind"],
        predicate=row["predicate"],
        value=loads(row["value"]),
        stated=loads(row["stated"]),
        text=row["text"],
        qualifiers=loads(row["qualifiers"]),
        attribution=row["attribution"],
        identity_key=row["identity_key"],
        status=row["status"],
        valid_from=as_time(row["valid_from"]),
        valid_to=as_opt_time(row["valid_to"]),
        recorded_at=as_time(row["recorded_at"]),
        retired_at=as_opt_time(row["retired_at"]),
        supersedes_id=row["supersedes_id"],
        superseded_by=row["superseded_by"],
        source_event_ids=tuple(loads(row["source_event_ids"])),
        reinforcement_count=row["reinforcement_count"],
        last_reinforced_at=as_time(row["last_reinforced_at"]),
        trust=row["trust"],
        confidence=row["confidence"],
        pinned=bool(row["pinned"]),
    )


# -- conflicts -------------------------------------------------------------------------------------
def conflict_params(conflict: ConflictSet) -> Params:
    return {
        "id": conflict.id,
        "project": conflict.project,
        "subject": conflict.subject,
        "identity_key": conflict.identity_key,
        "kind": _text(conflict.kind),
        "status": _text(conflict.status),
        "member_ids": dumps(list(conflict.member_ids)),
        "reason": conflict.reason,
        "created_at": ts(conflict.created_at),
        "resolved_at": ts(conflict.resolved_at),
        "kept_fact_id": conflict.kept_fact_id,
    }


def conflict_from_row(row: Row) -> ConflictSet:
    return ConflictSet(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        identity_key=row["identity_key"],
        kind=row["kind"],
        status=row["status"],
        member_ids=tuple(loads(row["member_ids"])),
        reason=row["reason"],
        created_at=as_time(row["created_at"]),
        resolved_at=as_opt_time(row["resolved_at"]),
        kept_fact_id=row["kept_fact_id"],
    )


# -- observations, aliases, audit ------------------------------------------------------------------
def observation_params(obs: Observation) -> Params:
    return {
        "id": obs.id,
        "project": obs.project,
        "subject": obs.subject,
        "event_id": obs.event_id,
        "fact_id": obs.fact_id,
        "extractor": obs.extractor,
        "claim": dumps(obs.claim.model_dump(mode="json", exclude_none=True)),
        "claim_hash": obs.claim_hash,
        "source": obs.source,
        "trust": _text(obs.trust),
        "occurred_at": ts(obs.occurred_at),
        "outcome": _text(obs.outcome),
        "reason": obs.reason,
    }


def observation_from_row(row: Row) -> Observation:
    return Observation(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        event_id=row["event_id"],
        fact_id=row["fact_id"],
        extractor=row["extractor"],
        claim=loads(row["claim"]),
        claim_hash=row["claim_hash"],
        source=row["source"],
        trust=row["trust"],
        occurred_at=as_time(row["occurred_at"]),
        outcome=row["outcome"],
        reason=row["reason"],
    )


def alias_params(alias: Alias) -> Params:
    return {
        "project": alias.project,
        "alias": alias.alias,
        "canonical": alias.canonical,
        "distance": float(alias.distance),
        "learned_at": ts(alias.learned_at),
    }


def alias_from_row(row: Row) -> Alias:
    return Alias(
        project=row["project"],
        alias=row["alias"],
        canonical=row["canonical"],
        distance=row["distance"],
        learned_at=as_time(row["learned_at"]),
    )


def audit_params(entry: AuditEntry) -> Params:
    return {
        "id": entry.id,
        "project": entry.project,
        "subject": entry.subject,
        "job_id": entry.job_id,
        "pass_name": entry.pass_name,
        "action": entry.action,
        "reason": entry.reason,
        "fact_id": entry.fact_id,
        "before": None if entry.before is None else dumps(entry.before),
        "after": None if entry.after is None else dumps(entry.after),
        "at": ts(entry.at),
    }


def audit_from_row(row: Row) -> AuditEntry:
    return AuditEntry(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        job_id=row["job_id"],
        pass_name=row["pass_name"],
        action=row["action"],
        reason=row["reason"],
        fact_id=row["fact_id"],
        before=loads(row["before"]),
        after=loads(row["after"]),
        at=as_time(row["at"]),
    )
