"""Rows ↔ models, for every backend: one function each way per table.

Ids, hashes and instants are written and read through the backend's `Codec`, the one place
their stored form is decided; everything else is the same on every backend:

- `TEXT` (PostgreSQL): ids and hashes as the text they are, instants as fixed-width UTC text
  (``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``) that PostgreSQL reads into `timestamptz`, which
  psycopg hands back as aware datetimes.
- `PACKED` (SQLite): an id or hash of 32 lowercase hex characters (what `distill.ids` and
  `content_hash` make) as its 16 bytes, a BLOB; any other id or key (a caller's own ids, an
  idempotency key of its own, a ``vector:`` key) as its text. Packing is one-to-one and a
  stored value says which it is (a BLOB, or TEXT), so every id reads back exactly as given.
  Instants are integer microseconds since the Unix epoch (8 bytes against 32 characters).
  Half the file was ids and instants in their text form (bench/storage.py).

Order is kept where queries use it: 16 bytes compare as their hex text does, and integers
as the instants do, so `ORDER BY at, id` and the keyset cursors (``id > :after_id``) give the
order they gave as text. SQLite sorts any TEXT before any BLOB, so in a store that mixes
both kinds of id (a caller that named some facts itself) ties are broken text ids first:
still one total order, and every cursor passes its last value back in the stored form, so
a page never skips or repeats a row. SQLite expands a list of ids with ``stored_id(value)``,
which is `pack_id` registered on every connection (a JSON list cannot carry bytes).

Dicts and lists become canonical JSON text (sorted keys), which SQLite stores as it is and
PostgreSQL reads into `jsonb`. The same model therefore always gives the same parameters on
a backend, which makes "the stored row still equals what was read" a plain comparison. Both
drivers are set up to hand JSON columns back as text (`loads` parses it). Vectors are the
one other column whose encoding differs (a BLOB, or pgvector's text form): each store
encodes its own.

A claim (an event's, an observation's) is stored without the fields equal to their defaults
(null, no qualifiers, `create`, confidence 1.0), so it reads back the same: they were over a
third of each claim's JSON. The defaults are therefore part of the stored format (a test pins
them): changing one would change what every stored claim says.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, overload

import numpy as np
import numpy.typing as npt
from pydantic_core import to_jsonable_python

from distill.core.audit_trail import observation_entry
from distill.core.json_data import compact_writer
from distill.core.models import (
    Alias,
    AuditEntry,
    Claim,
    ConflictSet,
    Event,
    Fact,
    Job,
    Observation,
    Rule,
)
from distill.errors import InvalidInput

Params = dict[str, Any]
Row = Mapping[str, Any]  # sqlite3.Row and psycopg's dict rows both read by column name

PACKED_ID_BYTES = 16  # bytes of a packed id or hash: 32 hex characters
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # packed instants count microseconds from here
MICROSECOND = timedelta(microseconds=1)


# -- ids and instants ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Codec:
    """How a backend stores ids (and hashes) and instants; every function passes None on."""

    id: Callable[[str | None], Any]
    time: Callable[[datetime | None], Any]
    read_id: Callable[[Any], Any]  # -> str | None
    read_time: Callable[[Any], Any]  # -> datetime | None


def ts(value: datetime | None) -> str | None:
    """A timezone-aware datetime as fixed-width UTC text."""
    if value is None:
        return None
    return _ts(value)


@lru_cache(maxsize=8192)  # the same few instants (a job's `now`, an event's time) recur a lot
def _ts(value: datetime) -> str:
    _check_aware(value)
    # isoformat pads the year to four digits, unlike strftime("%Y") on some platforms.
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "+00:00"


def as_time(value: str | datetime | None) -> datetime | None:
    """A stored instant as an aware UTC datetime, from text or a datetime (psycopg's)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(value).astimezone(UTC)


def micros(value: datetime | None) -> int | None:
    """A timezone-aware datetime as integer microseconds since the Unix epoch."""
    if value is None:
        return None
    return _micros(value)


@lru_cache(maxsize=8192)
def _micros(value: datetime) -> int:
    _check_aware(value)
    return (value - EPOCH) // MICROSECOND


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else EPOCH + timedelta(microseconds=value)


def _check_aware(value: datetime) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"datetime {value.isoformat()} has no timezone; distill stores UTC")


def pack_id(value: str | None) -> str | bytes | None:
    """An id or hash as its 16 bytes if it is 32 lowercase hex characters, else as it is."""
    if value is None or len(value) != 2 * PACKED_ID_BYTES:
        return value
    try:
        packed = bytes.fromhex(value)
    except ValueError:
        return value
    return packed if packed.hex() == value else value  # upper case or spaces: kept as text


@overload
def unpack_id(value: str | bytes) -> str: ...
@overload
def unpack_id(value: None) -> None: ...
def unpack_id(value: str | bytes | None) -> str | None:
    return value.hex() if isinstance(value, bytes) else value


def _same(value: Any) -> Any:
    return value


TEXT = Codec(id=_same, time=ts, read_id=_same, read_time=as_time)
PACKED = Codec(id=pack_id, time=micros, read_id=unpack_id, read_time=from_micros)


# -- other scalars ---------------------------------------------------------------------------------
def dumps(value: Any) -> str:
    if not value and isinstance(value, dict | list | tuple):
        return "{}" if isinstance(value, dict) else "[]"
    try:  # most values are plain JSON already; only datetimes and models need converting
        return _WRITE(value)
    except TypeError:
        return _WRITE(to_jsonable_python(value))


_WRITE = compact_writer()  # about seven values a claim: see `compact_writer`


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def to_blob(vector: npt.ArrayLike) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(blob, dtype=np.float32).copy()


def _claim(claim: Claim) -> dict[str, Any]:
    """A claim without the fields equal to their defaults (see the module docstring)."""
    return claim.model_dump(mode="json", exclude_defaults=True)


def _text(value: Any) -> str | None:
    """Enum members (or plain strings, from an unvalidated model_copy) as their value."""
    return None if value is None else str(value)


# -- events ----------------------------------------------------------------------------------------
def event_params(event: Event, c: Codec) -> Params:
    return {
        "id": c.id(event.id),
        "project": event.project,
        "subject": event.subject,
        "text": event.text,
        "occurred_at": c.time(event.occurred_at),
        "recorded_at": c.time(event.recorded_at),
        "source": event.source,
        "trust": _text(event.trust),
        "claims": dumps([_claim(claim) for claim in event.claims]),
        "idempotency_key": c.id(event.idempotency_key),
        "action": None if event.action is None else dumps(event.action.model_dump(mode="json")),
    }


def event_from_row(row: Row, c: Codec) -> Event:
    return Event(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        text=row["text"],
        occurred_at=c.read_time(row["occurred_at"]),
        recorded_at=c.read_time(row["recorded_at"]),
        source=row["source"],
        trust=row["trust"],
        claims=tuple(loads(row["claims"])),
        idempotency_key=c.read_id(row["idempotency_key"]),
        action=loads(row["action"]) if row["action"] is not None else None,
    )


# -- jobs ------------------------------------------------------------------------------------------
def job_from_row(row: Row, event_ids: tuple[str, ...], c: Codec) -> Job:
    return Job(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        status=row["status"],
        attempts=row["attempts"],
        error=row["error"],
        created_at=c.read_time(row["created_at"]),
        updated_at=c.read_time(row["updated_at"]),
        not_before=c.read_time(row["not_before"]),
        event_ids=event_ids,
        llm_calls=row["llm_calls"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        owner=None
        if row["claim_pid"] is None
        else f"pid {row['claim_pid']} on {row['claim_host']}",
        claimed_at=c.read_time(row["claimed_at"]),
    )


# -- facts -----------------------------------------------------------------------------------------
def fact_params(fact: Fact, c: Codec) -> Params:
    """Every model field as the column value it is stored as (norm_hash is not a field)."""
    return {
        "id": c.id(fact.id),
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
        "valid_from": c.time(fact.valid_from),
        "valid_to": c.time(fact.valid_to),
        "recorded_at": c.time(fact.recorded_at),
        "retired_at": c.time(fact.retired_at),
        "supersedes_id": c.id(fact.supersedes_id),
        "superseded_by": c.id(fact.superseded_by),
        "source_event_ids": dumps(list(fact.source_event_ids)),
        "reinforcement_count": int(fact.reinforcement_count),
        "last_reinforced_at": c.time(fact.last_reinforced_at),
        "trust": _text(fact.trust),
        "confidence": float(fact.confidence),
        "pinned": bool(fact.pinned),  # sqlite3 stores a bool as 1 or 0
        "unpaired_change": bool(fact.unpaired_change),
    }


def fact_from_row(row: Row, c: Codec) -> Fact:
    return Fact(
        id=c.read_id(row["id"]),
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
        valid_from=c.read_time(row["valid_from"]),
        valid_to=c.read_time(row["valid_to"]),
        recorded_at=c.read_time(row["recorded_at"]),
        retired_at=c.read_time(row["retired_at"]),
        supersedes_id=c.read_id(row["supersedes_id"]),
        superseded_by=c.read_id(row["superseded_by"]),
        source_event_ids=tuple(loads(row["source_event_ids"])),
        reinforcement_count=row["reinforcement_count"],
        last_reinforced_at=c.read_time(row["last_reinforced_at"]),
        trust=row["trust"],
        confidence=row["confidence"],
        pinned=bool(row["pinned"]),
        unpaired_change=bool(row["unpaired_change"]),
    )


# -- conflicts -------------------------------------------------------------------------------------
def conflict_params(conflict: ConflictSet, c: Codec) -> Params:
    return {
        "id": c.id(conflict.id),
        "project": conflict.project,
        "subject": conflict.subject,
        "identity_key": conflict.identity_key,
        "kind": _text(conflict.kind),
        "status": _text(conflict.status),
        "member_ids": dumps(list(conflict.member_ids)),
        "reason": conflict.reason,
        "created_at": c.time(conflict.created_at),
        "resolved_at": c.time(conflict.resolved_at),
        "kept_fact_id": c.id(conflict.kept_fact_id),
        "resolved_by": _text(conflict.resolved_by),
        "accepted_event_ids": dumps(list(conflict.accepted_event_ids))
        if conflict.accepted_event_ids
        else None,
    }


def conflict_from_row(row: Row, c: Codec) -> ConflictSet:
    return ConflictSet(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        identity_key=row["identity_key"],
        kind=row["kind"],
        status=row["status"],
        member_ids=tuple(loads(row["member_ids"])),
        reason=row["reason"],
        created_at=c.read_time(row["created_at"]),
        resolved_at=c.read_time(row["resolved_at"]),
        kept_fact_id=c.read_id(row["kept_fact_id"]),
        resolved_by=row["resolved_by"],
        accepted_event_ids=tuple(loads(row["accepted_event_ids"]) or ()),
    )


# -- observations, aliases, audit ------------------------------------------------------------------
def observation_params(obs: Observation, c: Codec, entry: AuditEntry | None = None) -> Params:
    """The row of `obs`, and of its audit entry when the row stands for it (`in_row`)."""
    return {
        "audit_id": None if entry is None else c.id(entry.id),
        "job_id": None if entry is None else c.id(entry.job_id),
        "at": None if entry is None else c.time(entry.at),
        "id": c.id(obs.id),
        "project": obs.project,
        "subject": obs.subject,
        "event_id": c.id(obs.event_id),
        "fact_id": c.id(obs.fact_id),
        "extractor": obs.extractor,
        "claim": dumps(_claim(obs.claim)),
        "claim_hash": c.id(obs.claim_hash),
        "source": obs.source,
        "trust": _text(obs.trust),
        "occurred_at": c.time(obs.occurred_at),
        "outcome": _text(obs.outcome),
        "reason": obs.reason,
    }


def observation_from_row(row: Row, c: Codec) -> Observation:
    return Observation(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        event_id=c.read_id(row["event_id"]),
        fact_id=c.read_id(row["fact_id"]),
        extractor=row["extractor"],
        claim=loads(row["claim"]),
        claim_hash=c.read_id(row["claim_hash"]),
        source=row["source"],
        trust=row["trust"],
        occurred_at=c.read_time(row["occurred_at"]),
        outcome=row["outcome"],
        reason=row["reason"],
    )


def alias_params(alias: Alias, c: Codec) -> Params:
    return {
        "project": alias.project,
        "alias": alias.alias,
        "canonical": alias.canonical,
        "distance": float(alias.distance),
        "learned_at": c.time(alias.learned_at),
    }


def alias_from_row(row: Row, c: Codec) -> Alias:
    return Alias(
        project=row["project"],
        alias=row["alias"],
        canonical=row["canonical"],
        distance=row["distance"],
        learned_at=c.read_time(row["learned_at"]),
    )


def audit_params(entry: AuditEntry, c: Codec) -> Params:
    return {
        "id": c.id(entry.id),
        "project": entry.project,
        "subject": entry.subject,
        "job_id": c.id(entry.job_id),
        "pass_name": entry.pass_name,
        "action": entry.action,
        "reason": entry.reason,
        "fact_id": c.id(entry.fact_id),
        "before": None if entry.before is None else dumps(entry.before),
        "after": None if entry.after is None else dumps(entry.after),
        "at": c.time(entry.at),
    }


def audit_from_row(row: Row, c: Codec) -> AuditEntry:
    """An entry of the audit table, or one an observation's row stands for (`audit_latest`
    and `audit_for_fact` read both: the latter have an `observation_id`)."""
    if row["observation_id"] is not None:
        observation = (
            row["project"],
            row["subject"],
            c.read_id(row["observation_id"]),
            c.read_id(row["event_id"]),
            c.read_id(row["fact_id"]),
            row["outcome"],
            row["reason"],
        )
        return observation_entry(
            c.read_id(row["id"]), c.read_id(row["job_id"]), c.read_time(row["at"]), observation
        )
    return AuditEntry(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        job_id=c.read_id(row["job_id"]),
        pass_name=row["pass_name"],
        action=row["action"],
        reason=row["reason"],
        fact_id=c.read_id(row["fact_id"]),
        before=loads(row["before"]),
        after=loads(row["after"]),
        at=c.read_time(row["at"]),
    )


# -- rules -----------------------------------------------------------------------------------------
def rule_params(rule: Rule, c: Codec) -> Params:
    return {
        "id": c.id(rule.id),
        "project": rule.project,
        "subject": rule.subject,
        "text": rule.text,
        "fingerprint": c.id(rule.fingerprint),
        "origin": _text(rule.origin),
        "source_fact_ids": dumps(list(rule.source_fact_ids)),
        "pass_name": rule.pass_name,
        "reason": rule.reason,
        "created_at": c.time(rule.created_at),
    }


def rule_from_row(row: Row, c: Codec) -> Rule:
    return Rule(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        text=row["text"],
        fingerprint=c.read_id(row["fingerprint"]),
        origin=row["origin"],
        source_fact_ids=tuple(loads(row["source_fact_ids"])),
        pass_name=row["pass_name"],
        reason=row["reason"],
        created_at=c.read_time(row["created_at"]),
    )
