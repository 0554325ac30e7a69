"""Writing a plan to SQLite, inside the caller's transaction.

Facts, conflicts and aliases are written in plan order (a retirement must precede the fact
that replaces it, for the unique index); rows that only point at them (sources, vectors,
observations, audit) follow in one statement per table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from distill.adapters.store import sqlite_rows as rows
from distill.adapters.store.queries import load_queries
from distill.core.models import AuditEntry, Fact
from distill.core.plan import (
    Action,
    CreateFact,
    LearnAlias,
    OpenConflict,
    Plan,
    RecordObservation,
    ReviseConflict,
    ReviseFact,
)
from distill.errors import IntegrityViolation

QUERIES = load_queries("sqlite")
# How SQLite names the unique index of one active fact per identity in its error message.
_ACTIVE_IDENTITY_INDEX = "facts.project, facts.subject, facts.identity_key"


def apply_plan(db: sqlite3.Connection, plan: Plan, audit: Sequence[AuditEntry]) -> None:
    """Write every action, then the audit entries."""
    rows_after = _Deferred()
    for action in plan.actions:
        _apply_action(db, action, rows_after)
    rows_after.write(db)
    db.executemany(QUERIES["insert_audit"], [rows.audit_params(e) for e in audit])


class _Deferred:
    """Rows that reference the facts a plan writes, collected to be written in bulk."""

    def __init__(self) -> None:
        self.sources: list[dict[str, Any]] = []
        self.vectors: list[dict[str, Any]] = []
        self.copies: list[dict[str, Any]] = []
        self.observations: list[dict[str, Any]] = []

    def write(self, db: sqlite3.Connection) -> None:
        db.executemany(QUERIES["insert_fact_source"], self.sources)
        db.executemany(QUERIES["cache_embedding"], self.vectors)  # the one copy of a vector
        db.executemany(QUERIES["insert_fact_vector"], self.vectors)
        db.executemany(QUERIES["copy_fact_vector"], self.copies)
        try:
            db.executemany(QUERIES["insert_observation"], self.observations)
        except sqlite3.IntegrityError as exc:
            raise IntegrityViolation(f"an observation was refused: {exc}") from exc


def _apply_action(db: sqlite3.Connection, action: Action, deferred: _Deferred) -> None:
    if isinstance(action, CreateFact):
        _create_fact(db, action, deferred)
    elif isinstance(action, ReviseFact):
        _revise_fact(db, action, deferred)
    elif isinstance(action, OpenConflict):
        _write(db, "insert_conflict", rows.conflict_params(action.conflict), "conflict set")
    elif isinstance(action, ReviseConflict):
        _revise_conflict(db, action)
    elif isinstance(action, RecordObservation):
        deferred.observations.append(rows.observation_params(action.observation))
    else:
        _learn_alias(db, action)


def _create_fact(db: sqlite3.Connection, action: CreateFact, deferred: _Deferred) -> None:
    fact = action.fact
    _write_fact(db, "insert_fact", {**rows.fact_params(fact), "norm_hash": action.norm_hash}, fact)
    deferred.sources.extend({"fact_id": fact.id, "event_id": e} for e in fact.source_event_ids)
    if action.vector_from is not None:
        deferred.copies.append({"fact_id": fact.id, "from_id": action.vector_from})
    if action.vector is None:
        return
    if action.vector_model is None:
        raise IntegrityViolation(f"fact {fact.id} has an identity vector but no vector_model")
    vector = np.asarray(action.vector, dtype=np.float32).ravel()
    deferred.vectors.append(
        {
            "fact_id": fact.id,
            "project": fact.project,
            "subject": fact.subject,
            "model_id": action.vector_model,
            "dim": int(vector.size),
            "vector": rows.to_blob(vector),
            "text_hash": action.vector_key,
        }
    )


def _revise_fact(db: sqlite3.Connection, action: ReviseFact, deferred: _Deferred) -> None:
    before, after = action.before, action.after
    if (after.id, after.project, after.subject) != (before.id, before.project, before.subject):
        raise IntegrityViolation(
            f"a revision of fact {before.id} may not change its id, project or subject"
        )
    params = rows.fact_params(after)
    params.update({f"was_{k}": v for k, v in rows.fact_params(before).items() if k != "id"})
    if _write_fact(db, "update_fact", params, after) == 0:
        raise IntegrityViolation(f"fact {before.id} changed since it was read")
    known = set(before.source_event_ids)
    deferred.sources.extend(
        {"fact_id": after.id, "event_id": e} for e in after.source_event_ids if e not in known
    )


def _revise_conflict(db: sqlite3.Connection, action: ReviseConflict) -> None:
    before, after = action.before, action.after
    if (after.id, after.project, after.subject) != (before.id, before.project, before.subject):
        raise IntegrityViolation(
            f"a revision of conflict set {before.id} may not change its id, project or subject"
        )
    expected = rows.conflict_params(before)
    row = db.execute(QUERIES["conflict_by_id"], {"id": before.id}).fetchone()
    if row is None or {name: row[name] for name in expected} != expected:
        raise IntegrityViolation(f"conflict set {before.id} changed since it was read")
    db.execute(QUERIES["update_conflict"], rows.conflict_params(after))


def _learn_alias(db: sqlite3.Connection, action: LearnAlias) -> None:
    alias = action.alias
    if db.execute(QUERIES["insert_alias"], rows.alias_params(alias)).rowcount:
        return
    key = {"project": alias.project, "alias": alias.alias}
    existing = db.execute(QUERIES["alias_by_name"], key).fetchone()
    if existing["canonical"] != alias.canonical:
        raise IntegrityViolation(
            f"alias {alias.alias!r} already means {existing['canonical']!r} in project "
            f"{alias.project!r}, not {alias.canonical!r}"
        )


def _write_fact(db: sqlite3.Connection, query: str, params: dict[str, Any], fact: Fact) -> int:
    """Run an insert or update of a fact; returns how many rows it wrote."""
    try:
        return db.execute(QUERIES[query], params).rowcount
    except sqlite3.IntegrityError as exc:
        if _ACTIVE_IDENTITY_INDEX in str(exc):
            raise IntegrityViolation(
                f"fact {fact.id} would be a second active state fact for identity "
                f"{fact.identity_key!r} of subject {fact.subject!r} in project "
                f"{fact.project!r}; retire the current one first"
            ) from exc
        raise IntegrityViolation(f"fact {fact.id} was refused: {exc}") from exc


def _write(db: sqlite3.Connection, query: str, params: dict[str, Any], what: str) -> None:
    try:
        db.execute(QUERIES[query], params)
    except sqlite3.IntegrityError as exc:
        raise IntegrityViolation(f"{what} {params['id']} was refused: {exc}") from exc
