"""Rows ↔ models for the SQLite store: one function each way per table.

Datetimes become fixed-width UTC text (``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``) so that text
order is time order; dicts and lists become canonical JSON (sorted keys), so the same model
always gives the same row. That makes "the stored row still equals what was read" a plain
comparison of parameters. A claim is stored without its null fields (every one of them
defaults to null, so it reads back the same): they were a third of each event's claims.
"""

from __future__ import annotations

import json
import sqlite3
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


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def parse_opt_ts(text: str | None) -> datetime | None:
    return None if text is None else parse_ts(text)


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


def event_from_row(row: sqlite3.Row) -> Event:
    return Event(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        text=row["text"],
        occurred_at=parse_ts(row["occurred_at"]),
        recorded_at=parse_ts(row["recorded_at"]),
        source=row["source"],
        trust=row["trust"],
        claims=tuple(loads(row["claims"])),
        idempotency_key=row["idempotency_key"],
    )


# -- jobs ------------------------------------------------------------------------------------------
def job_from_row(row: sqlite3.Row, event_ids: tuple[str, ...]) -> Job:
    return Job(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        status=row["status"],
        attempts=row["attempts"],
        error=row["error"],
        created_at=parse_ts(row["created_at"]),
        updated_at=parse_ts(row["updated_at"]),
        not_before=parse_opt_ts(row["not_before"]),
        event_ids=event_ids,
        llm_calls=row["llm_calls"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
    )


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
        "pinned": int(bool(fact.pinned)),
    }


def fact_from_row(row: sqlite3.Row) -> Fact:
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
        valid_from=parse_ts(row["valid_from"]),
        valid_to=parse_opt_ts(row["valid_to"]),
        recorded_at=parse_ts(row["recorded_at"]),
        retired_at=parse_opt_ts(row["retired_at"]),
        supersedes_id=row["supersedes_id"],
        superseded_by=row["superseded_by"],
        source_event_ids=tuple(loads(row["source_event_ids"])),
        reinforcement_count=row["reinforcement_count"],
        last_reinforced_at=parse_ts(row["last_reinforced_at"]),
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


def conflict_from_row(row: sqlite3.Row) -> ConflictSet:
    return ConflictSet(
        id=row["id"],
        project=row["project"],
        subject=row["subject"],
        identity_key=row["identity_key"],
        kind=row["kind"],
        status=row["status"],
        member_ids=tuple(loads(row["member_ids"])),
        reason=row["reason"],
        created_at=parse_ts(row["created_at"]),
        resolved_at=parse_opt_ts(row["resolved_at"]),
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


def observation_from_row(row: sqlite3.Row) -> Observation:
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
        occurred_at=parse_ts(row["occurred_at"]),
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


def alias_from_row(row: sqlite3.Row) -> Alias:
    return Alias(
        project=row["project"],
        alias=row["alias"],
        canonical=row["canonical"],
        distance=row["distance"],
        learned_at=parse_ts(row["learned_at"]),
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


def audit_from_row(row: sqlite3.Row) -> AuditEntry:
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
        at=parse_ts(row["at"]),
    )
