"""Rows ↔ models for the PostgreSQL store.

Writing reuses `sqlite_rows`' parameter builders, so both stores turn a model into the same
values: fixed-width UTC text for instants (PostgreSQL reads it into `timestamptz`; it also
refuses naive datetimes before anything is written) and canonical JSON text (read into
`jsonb`). psycopg sends Python text untyped, so the column decides. Only what SQLite stores
differently is changed here: booleans and vectors.

Reading needs no conversion: psycopg returns `timestamptz` as aware datetimes (in UTC, the
session's time zone) and `jsonb` as Python values, so a row's columns are the model's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from distill.adapters.store import sqlite_rows
from distill.adapters.store.sqlite_rows import (
    Params,
    alias_params,
    audit_params,
    conflict_params,
    event_params,
    from_blob,
    observation_params,
    to_blob,
    ts,
)
from distill.core.models import Alias, AuditEntry, ConflictSet, Event, Fact, Job, Observation

__all__ = [
    "alias_from_row",
    "alias_params",
    "audit_from_row",
    "audit_params",
    "conflict_from_row",
    "conflict_params",
    "event_from_row",
    "event_params",
    "fact_from_row",
    "fact_params",
    "from_blob",
    "job_from_row",
    "observation_from_row",
    "observation_params",
    "to_blob",
    "ts",
    "vector_text",
]

Row = Mapping[str, Any]
M = TypeVar("M", bound=BaseModel)


def fact_params(fact: Fact) -> Params:
    params = sqlite_rows.fact_params(fact)
    params["pinned"] = bool(fact.pinned)
    return params


def vector_text(vector: npt.ArrayLike) -> str:
    """A vector in pgvector's text form. float32 → Python float is exact, and `repr` of a
    float reads back as the same float, so the stored float4 values are the given ones."""
    values = np.asarray(vector, dtype=np.float32).ravel().tolist()
    return "[" + ",".join(map(repr, values)) + "]"


def _model(cls: type[M], row: Row, **extra: Any) -> M:
    fields = {name: row[name] for name in cls.model_fields if name not in extra}
    return cls.model_validate({**fields, **extra})


def event_from_row(row: Row) -> Event:
    return _model(Event, row)


def job_from_row(row: Row, event_ids: tuple[str, ...]) -> Job:
    return _model(Job, row, event_ids=event_ids)


def fact_from_row(row: Row) -> Fact:
    return _model(Fact, row)


def conflict_from_row(row: Row) -> ConflictSet:
    return _model(ConflictSet, row)


def observation_from_row(row: Row) -> Observation:
    return _model(Observation, row)


def alias_from_row(row: Row) -> Alias:
    return _model(Alias, row)


def audit_from_row(row: Row) -> AuditEntry:
    return _model(AuditEntry, row)
