"""Writing a validated plan inside the caller's transaction, for every backend.

Facts, conflicts and aliases are written in plan order (a retirement must precede the fact
that replaces it, for the unique index); rows that only point at them (sources, vectors,
observations, audit) follow, one bulk statement per table, and so do the words of the new
facts (SQLite's full-text index, fed once per plan: `_facts_inserted`), in insertion order,
or before an action that could delete one of them. What differs between backends
(how a vector is encoded, how a bulk statement runs, how a driver names the broken index)
comes from the store. A `PruneFact` deletes one tombstone's row, sources, marks and vector, in
plan order, under the same optimistic check a revision has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from distill.adapters.store import rows
from distill.adapters.store.cortex_rows import write_cortex
from distill.core.audit_trail import in_row
from distill.core.cortex_plan import CORTEX_ACTIONS
from distill.core.models import AuditEntry, Fact, FactKind, FactStatus
from distill.core.plan import (
    Action,
    AddRule,
    CreateFact,
    EraseScope,
    LearnAlias,
    MarkFacts,
    MoveCursor,
    OpenConflict,
    Plan,
    PruneFact,
    RecordCycle,
    RecordObservation,
    ReviseConflict,
    ReviseFact,
)
from distill.errors import IntegrityViolation

if TYPE_CHECKING:
    from distill.adapters.store.sql_base import DB
    from distill.adapters.store.sql_store import SqlStore

# What `EraseScope` deletes, rows that point at others first (the foreign keys).
ERASE_ORDER = (
    "erase_extractions",
    "erase_job_events",
    "erase_jobs",
    "erase_fact_sources",
    "erase_fact_vectors",
    "erase_fact_marks",
    "erase_observations",
    "erase_conflicts",
    "erase_audit",
    "erase_facts",
    "erase_events",
    "erase_aliases",
    "erase_rules",
    "erase_procedures",
    "erase_mentions",
    "erase_topics",
    "erase_pass_cursors",
    "erase_pass_schedule",
)
ERASED_AND_COUNTED = ("events", "facts", "observations", "conflicts", "jobs", "audit", "rules")


def write_plan(store: SqlStore, db: DB, plan: Plan, audit: Sequence[AuditEntry]) -> list[int]:
    """Write every action, then the audit entries; returns the dimension of each new vector.
    An observation's entry that its row can stand for is kept in the row (`in_row`)."""
    in_rows, entries = _entries_in_rows(plan, audit)
    writer = _Writer(store, db, _final_versions(plan), in_rows)
    for action in plan.actions:
        writer.action(action)
    writer.flush()
    store._many(db, "insert_audit", [rows.audit_params(e, store.codec) for e in entries])
    return [v["dim"] for v in writer.vectors]


def _entries_in_rows(
    plan: Plan, audit: Sequence[AuditEntry]
) -> tuple[dict[str, AuditEntry], list[AuditEntry]]:
    """The entries the plan's observation rows stand for, by observation id, and the rest."""
    observed = {
        a.observation.id: a.observation for a in plan.actions if isinstance(a, RecordObservation)
    }
    in_rows: dict[str, AuditEntry] = {}
    entries: list[AuditEntry] = []
    for entry in audit:
        found = observed.get(str(entry.after.get("id"))) if entry.after else None
        if found is not None and found.id not in in_rows and in_row(entry, found):
            in_rows[found.id] = entry
        else:
            entries.append(entry)
    return in_rows, entries


def _final_versions(plan: Plan) -> dict[str, Fact]:
    """The last version of each fact the plan creates and then revises (a fact created and
    retired by one job, say): it is inserted as it ends up, and its revisions are not
    written again. What the table holds after the plan is the same; the audit still has
    every step. Written early, a version the unique index does not count (one active state
    fact per identity) is always safe; one it counts only if the fact was counted at every
    step. Not, then, a fact created held and made active later in the plan (a candidate a
    change adopts), nor one active, held, then active again (a late claim demoted it and a
    later one restored it), nor an active event made a state (a series' value that a
    change showed to be a version): inserted as it ends where it was created, it would
    stand beside a fact the plan made active before it, and the index would refuse the
    plan."""
    created = {a.fact.id: a.fact for a in plan.actions if isinstance(a, CreateFact)}
    final: dict[str, Fact] = {}
    uncounted: set[str] = {i for i, f in created.items() if not _counted(f)}
    for a in plan.actions:
        if isinstance(a, ReviseFact) and a.after.id in created:
            final[a.after.id] = a.after
            if not _counted(a.after):
                uncounted.add(a.after.id)
    return {
        fact_id: fact
        for fact_id, fact in final.items()
        if not _counted(fact) or fact_id not in uncounted
    }


def _counted(fact: Fact) -> bool:
    """Whether the unique index counts `fact`: an active state."""
    return fact.status is FactStatus.ACTIVE and fact.kind is FactKind.STATE


def _may_rewrite(action: Action, waiting: dict[str, None], final: dict[str, Fact]) -> bool:
    """Whether `action` may change or delete the words of a fact the plan inserted whose
    words still `waiting` to be indexed (the update and delete triggers need them indexed
    first). A revision of such a fact does only when it is written: not when the fact went
    in in its final version (`_final_versions`)."""
    if isinstance(action, ReviseFact):
        return action.after.id in waiting and action.after.id not in final
    return isinstance(action, PruneFact | EraseScope)


class _Writer:
    def __init__(
        self, store: SqlStore, db: DB, final: dict[str, Fact], in_rows: dict[str, AuditEntry]
    ) -> None:
        self.store = store
        self.db = db
        self.final = final
        self.in_rows = in_rows
        self.q = store.queries
        self.c = store.codec
        # Rows that reference the facts a plan writes, collected to be written in bulk.
        self.sources: list[dict[str, Any]] = []
        self.vectors: list[dict[str, Any]] = []
        self.copies: list[dict[str, Any]] = []
        self.observations: list[dict[str, Any]] = []
        self.new_facts: dict[str, None] = {}  # ids inserted, in order, whose words wait

    def index_words(self) -> None:
        """Index the words of the facts inserted so far (what a trigger per row did)."""
        if self.new_facts:
            self.store._facts_inserted(self.db, list(self.new_facts))
            self.new_facts.clear()

    def flush(self) -> None:
        self.index_words()
        many = self.store._many
        many(self.db, "insert_fact_source", self.sources)
        self.store._store_vectors(self.db, self.vectors)
        many(self.db, "copy_fact_vector", self.copies)
        try:
            many(self.db, "insert_observation", self.observations)
        except self.store.integrity_errors as exc:
            raise IntegrityViolation(f"an observation was refused: {exc}") from exc

    def action(self, action: Action) -> None:
        if self.new_facts and _may_rewrite(action, self.new_facts, self.final):
            self.index_words()  # the update and delete triggers find their words indexed
        if isinstance(action, CreateFact):
            self.create_fact(action)
        elif isinstance(action, ReviseFact):
            self.revise_fact(action)
        elif isinstance(action, OpenConflict):
            conflict = action.conflict
            try:
                self.db.execute(self.q["insert_conflict"], rows.conflict_params(conflict, self.c))
            except self.store.integrity_errors as exc:
                raise IntegrityViolation(f"conflict set {conflict.id} was refused: {exc}") from exc
        elif isinstance(action, ReviseConflict):
            self.revise_conflict(action)
        elif isinstance(action, RecordObservation):
            observation = action.observation
            entry = self.in_rows.get(observation.id)
            self.observations.append(rows.observation_params(observation, self.c, entry))
        elif isinstance(action, LearnAlias):
            self.learn_alias(action)
        elif isinstance(action, MoveCursor):
            self.move_cursor(action)
        elif isinstance(action, MarkFacts):
            self.mark_facts(action)
        elif isinstance(action, AddRule):
            self.add_rule(action)
        elif isinstance(action, PruneFact):
            self.prune(action)
        elif isinstance(action, RecordCycle):
            pass  # its audit entry is the whole record
        elif isinstance(action, CORTEX_ACTIONS):
            write_cortex(self.store, self.db, action)
        else:
            self.erase(action)

    def create_fact(self, action: CreateFact) -> None:
        fact, c = self.final.get(action.fact.id, action.fact), self.c
        params = rows.fact_params(fact, c)
        self.write_fact("insert_fact", {**params, "norm_hash": c.id(action.norm_hash)}, fact)
        self.new_facts[fact.id] = None
        fact_id = params["id"]
        sources = fact.source_event_ids
        self.sources.extend({"fact_id": fact_id, "event_id": c.id(e)} for e in sources)
        if action.vector_from is not None:
            self.copies.append({"fact_id": fact_id, "from_id": c.id(action.vector_from)})
        if action.vector is None:
            return
        if action.vector_model is None:
            raise IntegrityViolation(f"fact {fact.id} has an identity vector but no vector_model")
        vector = np.asarray(action.vector, dtype=np.float32).ravel()
        self.vectors.append(
            {
                "fact_id": fact_id,
                "project": fact.project,
                "subject": fact.subject,
                "model_id": action.vector_model,
                "dim": int(vector.size),
                "vector": self.store._vector_param(vector),
                "text_hash": c.id(action.vector_key),
            }
        )

    def revise_fact(self, action: ReviseFact) -> None:
        before, after = action.before, action.after
        if (after.id, after.project, after.subject) != (before.id, before.project, before.subject):
            raise IntegrityViolation(
                f"a revision of fact {before.id} may not change its id, project or subject"
            )
        if after.id in self.final:  # inserted in its final version already
            return
        c = self.c
        params = rows.fact_params(after, c)
        params.update({f"was_{k}": v for k, v in rows.fact_params(before, c).items() if k != "id"})
        if self.write_fact("update_fact", params, after) == 0:
            raise IntegrityViolation(f"fact {before.id} changed since it was read")
        known = set(before.source_event_ids)
        self.sources.extend(
            {"fact_id": params["id"], "event_id": c.id(e)}
            for e in after.source_event_ids
            if e not in known
        )

    def revise_conflict(self, action: ReviseConflict) -> None:
        before, after = action.before, action.after
        if (after.id, after.project, after.subject) != (before.id, before.project, before.subject):
            raise IntegrityViolation(
                f"a revision of conflict set {before.id} may not change its id, project or subject"
            )
        params = rows.conflict_params(after, self.c)
        row = self.db.execute(
            self.q["conflict_by_id"], {"project": params["project"], "id": params["id"]}
        ).fetchone()
        if row is None or rows.conflict_from_row(row, self.c) != before:
            raise IntegrityViolation(f"conflict set {before.id} changed since it was read")
        self.db.execute(self.q["update_conflict"], params)

    def erase(self, action: EraseScope) -> None:
        """Delete every row of the scope, or nothing if it no longer holds what was counted."""
        scope = {"project": action.project, "subject": action.subject}
        statements: list[tuple[str, dict[str, Any]]] = [(q, scope) for q in ERASE_ORDER]
        if action.cache_keys:
            hashes = {"hashes": self.store._array(list(action.cache_keys))}
            statements.append(("erase_cached_embeddings", hashes))
        deleted = self.store._erase(self.db, scope, statements)
        # Rows another writer committed after the count would go uncounted: refuse instead.
        gone = {name: deleted[f"erase_{name}"] for name in ERASED_AND_COUNTED}
        if gone != {name: action.counts[name] for name in ERASED_AND_COUNTED}:
            raise IntegrityViolation(
                f"{action.project}/{action.subject or '*'} changed while it was being erased "
                f"(counted {dict(action.counts)}, deleted {gone}); nothing was erased: erase again"
            )

    def prune(self, action: PruneFact) -> None:
        """Delete a tombstone's sources, vector and row, or refuse if the row is no longer
        the tombstone the pass read (the transaction then undoes the first two)."""
        fact, c = action.fact, self.c
        key = {"fact_id": c.id(fact.id)}
        self.db.execute(self.q["prune_fact_sources"], key)
        self.db.execute(self.q["prune_fact_marks"], key)
        self.db.execute(self.q["delete_fact_vector"], key)
        params = {
            **key,
            "project": fact.project,
            "status": str(fact.status),
            "superseded_by": c.id(fact.superseded_by),
            "last_reinforced_at": c.time(fact.last_reinforced_at),
        }
        if self.db.execute(self.q["prune_fact"], params).rowcount != 1:
            raise IntegrityViolation(
                f"fact {fact.id} changed since prune read it (revived, pinned, reinforced or "
                "given another receipt); nothing was pruned: run prune again"
            )

    def move_cursor(self, action: MoveCursor) -> None:
        params = {
            "project": action.project,
            "subject": action.subject,
            "pass_name": action.cursor_pass,
            "position": action.after,
            "was": action.before,
            "moved_at": self.c.time(action.at),
        }
        if self.db.execute(self.q["move_pass_cursor"], params).rowcount != 1:
            raise IntegrityViolation(
                f"the {action.cursor_pass} cursor of {action.project}/{action.subject} moved "
                f"since it was read (expected {action.before!r})"
            )

    def mark_facts(self, action: MarkFacts) -> None:
        """Move each fact's mark from the signature the pass read, or refuse the plan."""
        for mark in action.marks:
            params = {
                "fact_id": self.c.id(mark.fact_id),
                "pass_name": action.mark_pass,
                "project": action.project,
                "subject": action.subject,
                "signature": mark.after,
                "was": mark.before,
                "marked_at": self.c.time(action.at),
            }
            if self.db.execute(self.q["mark_fact"], params).rowcount != 1:
                raise IntegrityViolation(
                    f"the {action.mark_pass} mark of fact {mark.fact_id} moved since it was "
                    f"read, or the fact is not of {action.project}/{action.subject}"
                )

    def add_rule(self, action: AddRule) -> None:
        rule = action.rule
        try:
            self.db.execute(self.q["insert_rule"], rows.rule_params(rule, self.c))
        except self.store.integrity_errors as exc:
            raise IntegrityViolation(
                f"rule {rule.text!r} was refused: {rule.project}/{rule.subject} has a rule of "
                f"its fingerprint already, or rule {rule.id} exists ({exc})"
            ) from exc

    def learn_alias(self, action: LearnAlias) -> None:
        alias = action.alias
        if self.db.execute(self.q["insert_alias"], rows.alias_params(alias, self.c)).rowcount:
            return
        key = {"project": alias.project, "alias": alias.alias}
        existing = self.db.execute(self.q["alias_by_name"], key).fetchone()
        if existing is not None and existing["canonical"] != alias.canonical:
            raise IntegrityViolation(
                f"alias {alias.alias!r} already means {existing['canonical']!r} in project "
                f"{alias.project!r}, not {alias.canonical!r}"
            )

    def write_fact(self, query: str, params: dict[str, Any], fact: Fact) -> int:
        """Run an insert or update of a fact; returns how many rows it wrote."""
        try:
            return int(self.db.execute(self.q[query], params).rowcount)
        except self.store.integrity_errors as exc:
            if self.store._breaks_active_identity(exc):
                raise IntegrityViolation(
                    f"fact {fact.id} would be a second active state fact for identity "
                    f"{fact.identity_key!r} of subject {fact.subject!r} in project "
                    f"{fact.project!r}; retire the current one first"
                ) from exc
            raise IntegrityViolation(f"fact {fact.id} was refused: {exc}") from exc
