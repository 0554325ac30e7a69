"""Writing a plan to PostgreSQL, inside the caller's transaction.

The same order as the SQLite store: facts, conflicts and aliases in plan order (a
retirement must precede the fact that replaces it, for the unique index), then the rows
that only point at them (sources, vectors, observations, audit), a batch per table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from psycopg import errors as pg_errors

from distill.adapters.store import postgres_rows as rows
from distill.adapters.store.postgres_connection import Connection
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

Queries = Mapping[str, str]
ACTIVE_IDENTITY_INDEX = "facts_one_active_per_identity"


def apply_plan(
    db: Connection, queries: Queries, plan: Plan, audit: Sequence[AuditEntry]
) -> set[int]:
    """Write every action and the audit entries; returns the dimensions of new vectors."""
    writer = _Writer(db, queries)
    for action in plan.actions:
        writer.action(action)
    writer.flush()
    writer.many("insert_audit", [rows.audit_params(e) for e in audit])
    return {v["dim"] for v in writer.vectors}


class _Writer:
    def __init__(self, db: Connection, queries: Queries) -> None:
        self.db = db
        self.queries = queries
        self.sources: list[dict[str, Any]] = []
        self.vectors: list[dict[str, Any]] = []
        self.copies: list[dict[str, Any]] = []
        self.observations: list[dict[str, Any]] = []

    def many(self, query: str, params: list[dict[str, Any]]) -> None:
        if params:
            with self.db.cursor() as cur:
                cur.executemany(self.queries[query], params)

    def flush(self) -> None:
        """Write the rows that point at the facts, a batch per table."""
        self.many("insert_fact_source", self.sources)
        self.many("insert_fact_vector", self.vectors)
        self.many("copy_fact_vector", self.copies)
        try:
            self.many("insert_observation", self.observations)
        except pg_errors.IntegrityError as exc:
            raise IntegrityViolation(f"an observation was refused: {exc}") from exc

    def action(self, action: Action) -> None:
        if isinstance(action, CreateFact):
            self.create_fact(action)
        elif isinstance(action, ReviseFact):
            self.revise_fact(action)
        elif isinstance(action, OpenConflict):
            params = rows.conflict_params(action.conflict)
            try:
                self.db.execute(self.queries["insert_conflict"], params)
            except pg_errors.IntegrityError as exc:
                raise IntegrityViolation(f"conflict set {params['id']} was refused: {exc}") from exc
        elif isinstance(action, ReviseConflict):
            self.revise_conflict(action)
        elif isinstance(action, RecordObservation):
            self.observations.append(rows.observation_params(action.observation))
        else:
            self.learn_alias(action)

    def create_fact(self, action: CreateFact) -> None:
        fact = action.fact
        self.write_fact(
            "insert_fact", {**rows.fact_params(fact), "norm_hash": action.norm_hash}, fact
        )
        self.sources.extend({"fact_id": fact.id, "event_id": e} for e in fact.source_event_ids)
        if action.vector_from is not None:
            self.copies.append({"fact_id": fact.id, "from_id": action.vector_from})
        if action.vector is None:
            return
        if action.vector_model is None:
            raise IntegrityViolation(f"fact {fact.id} has an identity vector but no vector_model")
        vector = np.asarray(action.vector, dtype=np.float32).ravel()
        self.vectors.append(
            {
                "fact_id": fact.id,
                "project": fact.project,
                "subject": fact.subject,
                "model_id": action.vector_model,
                "dim": int(vector.size),
                "vector": rows.vector_text(vector),
            }
        )

    def revise_fact(self, action: ReviseFact) -> None:
        before, after = action.before, action.after
        if (after.id, after.project, after.subject) != (before.id, before.project, before.subject):
            raise IntegrityViolation(
                f"a revision of fact {before.id} may not change its id, project or subject"
            )
        params = rows.fact_params(after)
        params.update({f"was_{k}": v for k, v in rows.fact_params(before).items() if k != "id"})
        if self.write_fact("update_fact", params, after) == 0:
            raise IntegrityViolation(f"fact {before.id} changed since it was read")
        known = set(before.source_event_ids)
        self.sources.extend(
            {"fact_id": after.id, "event_id": e} for e in after.source_event_ids if e not in known
        )

    def revise_conflict(self, action: ReviseConflict) -> None:
        before, after = action.before, action.after
        if (after.id, after.project, after.subject) != (before.id, before.project, before.subject):
            raise IntegrityViolation(
                f"a revision of conflict set {before.id} may not change its id, project or subject"
            )
        row = self.db.execute(self.queries["conflict_by_id"], {"id": before.id}).fetchone()
        if row is None or rows.conflict_from_row(row) != before:
            raise IntegrityViolation(f"conflict set {before.id} changed since it was read")
        self.db.execute(self.queries["update_conflict"], rows.conflict_params(after))

    def learn_alias(self, action: LearnAlias) -> None:
        alias = action.alias
        if self.db.execute(self.queries["insert_alias"], rows.alias_params(alias)).rowcount:
            return
        key = {"project": alias.project, "alias": alias.alias}
        existing = self.db.execute(self.queries["alias_by_name"], key).fetchone()
        if existing is not None and existing["canonical"] != alias.canonical:
            raise IntegrityViolation(
                f"alias {alias.alias!r} already means {existing['canonical']!r} in project "
                f"{alias.project!r}, not {alias.canonical!r}"
            )

    def write_fact(self, query: str, params: dict[str, Any], fact: Fact) -> int:
        """Run an insert or update of a fact; returns how many rows it wrote."""
        try:
            return self.db.execute(self.queries[query], params).rowcount
        except pg_errors.UniqueViolation as exc:
            if exc.diag.constraint_name == ACTIVE_IDENTITY_INDEX:
                raise IntegrityViolation(
                    f"fact {fact.id} would be a second active state fact for identity "
                    f"{fact.identity_key!r} of subject {fact.subject!r} in project "
                    f"{fact.project!r}; retire the current one first"
                ) from exc
            raise IntegrityViolation(f"fact {fact.id} was refused: {exc}") from exc
        except pg_errors.IntegrityError as exc:
            raise IntegrityViolation(f"fact {fact.id} was refused: {exc}") from exc
