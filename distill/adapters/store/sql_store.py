"""Every domain operation of the `Store` port, written once over named SQL.

`SqlStore` is the store; `SqliteStore` and `PostgresStore` are its two backends, and each
supplies only what really differs between them (listed in `sql_base`). The operations are
in three layers, one module each: `sql_base` (connections, hooks, helpers, migrations,
transactions), `sql_jobs` (events and the job queue) and this one (facts: the reads a pass
loads its snapshot with, writing a plan, the caches, and the queries behind the API).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from distill.adapters.store import rows
from distill.adapters.store.plan_writer import write_plan
from distill.adapters.store.sql_cortex import SqlCortex
from distill.adapters.store.sql_jobs import SqlJobs
from distill.core.models import (
    Alias,
    AuditEntry,
    ConflictKind,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactStatus,
    JobStatus,
    Observation,
    Rule,
)
from distill.core.plan import Plan
from distill.errors import DistillError, InvalidInput, NotFound
from distill.ids import ID_LENGTH, ID_PREFIX_RE
from distill.ports import (
    IdentityVector,
    IdTable,
    LLMUsage,
    Neighbour,
    RecallScope,
    StoreCounts,
    Vector,
)

log = logging.getLogger(__name__)

EVENT_PAGE_SIZE = 500  # rows per read transaction when iterating over every event
# Rows the vector change log keeps (`prune_vector_log`: a store prunes it each time it has
# written half as many vectors). An index further behind is built again from its scope's
# vectors instead of caught up, and reading a change costs a little less than reading a
# vector: on SQLite, catching up 20,000 changes of one subject took 0.6-0.8 of the time its
# 20,000 vectors took to read (112-159 against 140-209 ms, `python bench/vector_log.py`);
# an index left unsearched while 20,000 vectors were written is seldom searched. 20,000 rows
# are about 0.7 MB on SQLite.
VECTOR_LOG_KEEP = 20_000
_PREFIX_QUERIES: dict[IdTable, str] = {
    "fact": "fact_ids_by_prefix",
    "conflict": "conflict_ids_by_prefix",
}


class SqlStore(SqlCortex, SqlJobs):
    """`distill.ports.Store` over a backend's named SQL. See the module docstring."""

    # -- reads for adjudication --------------------------------------------------------------------
    def facts_by_ids(self, project: str, fact_ids: Sequence[str]) -> list[Fact]:
        """The facts of the project among `fact_ids` (any status); others are left out."""
        if not fact_ids:
            return []
        params = {"project": project, "ids": self._array(fact_ids)}
        return [rows.fact_from_row(r, self.codec) for r in self._read("facts_by_ids", params)]

    def pass_cursor(self, project: str, subject: str, pass_name: str) -> str | None:
        """Where `pass_name` stopped in the scope's stream (None: it never moved)."""
        params = {"project": project, "subject": subject, "pass_name": pass_name}
        found = self._read("pass_cursor", params)
        return str(found[0]["position"]) if found else None

    def unmarked_memories(self, project: str, subject: str, pass_name: str) -> list[Fact]:
        """The scope's live memories `pass_name` has no mark of their text for."""
        params = {"project": project, "subject": subject, "pass_name": pass_name}
        found = self._read("unmarked_memories", params)
        return [rows.fact_from_row(r, self.codec) for r in found]

    def fact_marks(self, project: str, pass_name: str, fact_ids: Sequence[str]) -> dict[str, str]:
        """The signatures `pass_name` marked the facts among `fact_ids` with."""
        if not fact_ids:
            return {}
        params = {"project": project, "pass_name": pass_name, "ids": self._array(fact_ids)}
        return {
            self.codec.read_id(r["fact_id"]): str(r["signature"])
            for r in self._read("fact_marks", params)
        }

    def rules(self, project: str, subject: str | None) -> list[Rule]:
        """The rules of a subject (of every subject of the project with None), by subject,
        then oldest first."""
        params = {"project": project, "subject": subject}
        return [rows.rule_from_row(r, self.codec) for r in self._read("rules_of", params)]

    def rule_scopes(self, projects: Sequence[str], threshold: int) -> list[tuple[str, str]]:
        """(project, subject) of every scope holding an active memory re-observed at least
        `threshold` times, in order; only those of `projects` unless it is empty."""
        params = {
            "projects": self._array(list(projects)) if projects else None,
            "threshold": threshold,
        }
        return [(r["project"], r["subject"]) for r in self._read("rule_scopes", params)]

    def memory_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope with two or more active memories, in order;
        only those of `projects` unless it is empty."""
        return self._scopes("memory_scopes", projects)

    def tombstone_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope holding a superseded or retracted fact, in
        order; only those of `projects` unless it is empty."""
        return self._scopes("tombstone_scopes", projects)

    def _scopes(self, query: str, projects: Sequence[str]) -> list[tuple[str, str]]:
        params = {"projects": self._array(list(projects)) if projects else None}
        return [(r["project"], r["subject"]) for r in self._read(query, params)]

    def facts_by_identity(self, project: str, subject: str, keys: Sequence[str]) -> list[Fact]:
        """Every non-retracted fact whose identity key is in `keys`, any status."""
        return self._facts("facts_by_identity", project, subject, keys=keys)

    def active_facts_by_predicate(
        self, project: str, subject: str, predicates: Sequence[str]
    ) -> list[Fact]:
        """Active state facts of these predicates, whatever their qualifiers."""
        return self._facts("active_facts_by_predicate", project, subject, predicates=predicates)

    def memories_by_norm(
        self, project: str, subject: str, norm_hashes: Sequence[str]
    ) -> list[Fact]:
        """Active or candidate memory facts whose normalised text hash is in `norm_hashes`."""
        return self._facts("memories_by_norm", project, subject, norm_hashes=norm_hashes)

    def facts_with_sources(
        self, project: str, subject: str, event_ids: Sequence[str]
    ) -> list[Fact]:
        wanted = set(event_ids)
        found = self._facts("facts_with_sources", project, subject, event_ids=event_ids)
        # fact_sources only grows; the fact's own list is the truth if a revision dropped one.
        return [f for f in found if wanted.intersection(f.source_event_ids)]

    def _facts(self, query: str, project: str, subject: str, **lists: Sequence[str]) -> list[Fact]:
        if not all(lists.values()):
            return []
        params: dict[str, Any] = {"project": project, "subject": subject}
        params.update({name: self._array(values) for name, values in lists.items()})
        return [rows.fact_from_row(r, self.codec) for r in self._read(query, params)]

    def nearest_facts(
        self, project: str, subject: str, vectors: Vector, k: int, model_id: str
    ) -> list[list[Neighbour]]:
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if k <= 0 or queries.shape[0] == 0:
            return [[] for _ in range(queries.shape[0])]
        with self._tx(write=False) as db:
            return self._nearest(db, (project, subject, model_id), queries, k)

    # -- recall (the two arms of Memory.search) ----------------------------------------------------
    def recall_words(
        self, scope: RecallScope, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """Facts of the scope holding any of `terms`, best BM25 first, with their score."""
        if not terms or limit <= 0 or (scope.among is not None and not scope.among):
            return []
        params = {
            "project": scope.project,
            "subject": scope.subject,
            "kinds": self._array(scope.kinds) if scope.kinds is not None else None,
            "among": self._array(scope.among) if scope.among is not None else None,
            "limit": limit,
            **self._word_query(terms),
        }
        read_id = self.codec.read_id
        return [
            (read_id(r["fact_id"]), float(r["score"])) for r in self._read("recall_words", params)
        ]

    def recall_nearest(
        self, scope: RecallScope, vector: Vector | Callable[[], Vector], k: int
    ) -> list[Neighbour]:
        """The k facts of the scope whose recall vector (made by the scope's model) is
        nearest `vector` (or what the function `vector` returns), nearest first."""
        if k <= 0 or (scope.among is not None and not scope.among):
            return []

        def question() -> Vector:
            found = vector() if callable(vector) else vector
            return np.asarray(found, dtype=np.float32).reshape(1, -1)

        with self._nearest_reads() as db:
            return self._recall_nearest(db, scope, question, k)

    def aliases(self, project: str, predicates: Sequence[str]) -> dict[str, Alias]:
        if not predicates:
            return {}
        params = {"project": project, "predicates": self._array(predicates)}
        found = self._read("aliases_for", params)
        return {r["alias"]: rows.alias_from_row(r, self.codec) for r in found}

    def conflicts_for(self, project: str, subject: str, keys: Sequence[str]) -> list[ConflictSet]:
        if not keys:
            return []
        params = {"project": project, "subject": subject, "keys": self._array(keys)}
        found = self._read("conflicts_for", params)
        return [rows.conflict_from_row(r, self.codec) for r in found]

    def seen_claims(self, event_ids: Sequence[str]) -> set[tuple[str, str]]:
        if not event_ids:
            return set()
        found = self._read("seen_claims", {"event_ids": self._array(event_ids)})
        read_id = self.codec.read_id
        return {(read_id(r["event_id"]), read_id(r["claim_hash"])) for r in found}

    def active_facts(self, project: str, subject: str, limit: int) -> list[Fact]:
        """Active state facts of the subject, most recently reinforced first."""
        params = {"project": project, "subject": subject, "limit": limit}
        return [rows.fact_from_row(r, self.codec) for r in self._read("active_facts", params)]

    def facts_to_reembed(
        self, model_id: str, project: str | None, after_id: str | None, limit: int
    ) -> list[Fact]:
        params = {
            "model_id": model_id,
            "project": project,
            "after_id": self.codec.id(after_id),
            "limit": limit,
        }
        return [rows.fact_from_row(r, self.codec) for r in self._read("facts_to_reembed", params)]

    def replace_identity_vectors(self, model_id: str, vectors: Sequence[IdentityVector]) -> None:
        if not vectors:
            return
        c = self.codec
        params = [
            {
                "fact_id": c.id(v.fact_id),
                "project": v.project,
                "subject": v.subject,
                "model_id": model_id,
                "dim": int(np.asarray(v.vector).size),
                "text_hash": c.id(v.text_hash),
                "vector": self._vector_param(v.vector),
            }
            for v in vectors
        ]
        with self._tx() as db:
            self._many(db, "delete_fact_vector", [{"fact_id": p["fact_id"]} for p in params])
            self._store_vectors(db, params)
        self._vectors_written({p["dim"] for p in params})
        self._logged(len(params))

    def prune_vector_log(self, keep: int | None = None) -> int:
        keep = VECTOR_LOG_KEEP if keep is None else keep
        if keep < 0:
            raise InvalidInput(f"keep must be 0 or more rows of the vector log, not {keep}")
        return self._write("prune_vector_changes", {"keep": keep})

    _unpruned = 0  # vectors this store wrote since it last pruned the log

    def _logged(self, vectors: int) -> None:
        """This store wrote `vectors` new vectors (each logged, as is each status change).
        Every VECTOR_LOG_KEEP / 2 of them, the log is pruned: housekeeping, which never
        fails a write."""
        self._unpruned += vectors
        if self._unpruned < VECTOR_LOG_KEEP // 2:
            return
        self._unpruned = 0

        def prune() -> None:
            try:
                self.prune_vector_log()
            except DistillError as exc:
                log.warning("could not prune the vector change log: %s", exc)

        self._after_commit(prune)

    # -- writes ------------------------------------------------------------------------------------
    def apply(self, plan: Plan, job_id: str | None, audit: Sequence[AuditEntry]) -> None:
        """Write every action, then the audit entries, all or nothing (see `plan_writer`)."""
        with self._tx() as db:
            dims = write_plan(self, db, plan, audit)
        if dims:
            self._vectors_written(set(dims))
            self._logged(len(dims))

    # -- embedding cache ---------------------------------------------------------------------------
    def cached_embeddings(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        if not hashes:
            return {}
        params = {"model_id": model_id, "hashes": self._array(hashes)}
        found = self._read("cached_embeddings", params)
        read_id = self.codec.read_id
        return {read_id(r["text_hash"]): rows.from_blob(r["vector"]) for r in found}

    def cache_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None:
        if not vectors:
            return
        params = [
            {"model_id": model_id, "text_hash": self.codec.id(h), "vector": rows.to_blob(v)}
            for h, v in vectors.items()
        ]
        with self._tx() as db:
            self._many(db, "cache_embedding", params)

    # -- extraction cache --------------------------------------------------------------------------
    def cached_extractions(self, extractor: str, event_ids: Sequence[str]) -> dict[str, list[Any]]:
        if not event_ids:
            return {}
        params = {"extractor": extractor, "ids": self._array(event_ids)}
        found = self._read("cached_extractions", params)
        read_id = self.codec.read_id
        return {read_id(r["event_id"]): rows.loads(r["candidates"]) for r in found}

    def cache_extractions(
        self, extractor: str, answers: dict[str, list[Any]], now: datetime
    ) -> None:
        if not answers:
            return
        stamp = self.codec.time(now)
        params = [
            {
                "extractor": extractor,
                "event_id": self.codec.id(event_id),
                "candidates": json.dumps(list(candidates)),
                "now": stamp,
            }
            for event_id, candidates in answers.items()
        ]
        with self._tx() as db:
            self._many(db, "cache_extraction", params)

    def forget_extractions(self, project: str | None) -> int:
        return self._write("forget_extractions", {"project": project})

    # -- queries -----------------------------------------------------------------------------------
    def fact(self, project: str, fact_id: str) -> Fact:
        found = self._read("fact_by_id", {"project": project, "id": self.codec.id(fact_id)})
        if not found:
            raise NotFound(f"no fact {fact_id} in project {project!r}")
        return rows.fact_from_row(found[0], self.codec)

    def ids_with_prefix(self, table: IdTable, project: str, prefix: str, limit: int) -> list[str]:
        if not ID_PREFIX_RE.fullmatch(prefix):
            return []
        params = {
            "project": project,
            "low": self.codec.id(prefix.ljust(ID_LENGTH, "0")),
            "high": self.codec.id(prefix.ljust(ID_LENGTH, "f")),
            "limit": limit,
        }
        return [self.codec.read_id(r["id"]) for r in self._read(_PREFIX_QUERIES[table], params)]

    def facts(
        self,
        project: str,
        subject: str | None,
        include_retired: bool,
        as_of: datetime | None,
    ) -> list[Fact]:
        """Active facts; every status with `include_retired`; or what was true at `as_of`
        (active or superseded facts whose validity covers it; `include_retired` is ignored)."""
        params = {"project": project, "subject": subject, "as_of": self.codec.time(as_of)}
        if as_of is not None:
            query = "facts_as_of"
        else:
            query = "facts_every_status" if include_retired else "facts_active"
        return [rows.fact_from_row(r, self.codec) for r in self._read(query, params)]

    def audit_for(self, project: str, fact_id: str) -> list[AuditEntry]:
        params = {"project": project, "fact_id": self.codec.id(fact_id)}
        found = self._read("audit_for_fact", params)
        return [rows.audit_from_row(r, self.codec) for r in found]

    def audit(self, project: str, subject: str | None, limit: int) -> list[AuditEntry]:
        params = {"project": project, "subject": subject, "limit": limit}
        return [rows.audit_from_row(r, self.codec) for r in self._read("audit_latest", params)]

    def fact_changes_after(
        self, project: str, subject: str | None, after: datetime
    ) -> list[AuditEntry]:
        params = {"project": project, "subject": subject, "after": self.codec.time(after)}
        return [
            rows.audit_from_row(r, self.codec) for r in self._read("fact_changes_after", params)
        ]

    def observations_for_events(self, project: str, event_ids: Sequence[str]) -> list[Observation]:
        if not event_ids:
            return []
        params = {"project": project, "event_ids": self._array(event_ids)}
        found = self._read("observations_for_events", params)
        return [rows.observation_from_row(r, self.codec) for r in found]

    def observations_for(self, project: str, fact_id: str) -> list[Observation]:
        params = {"project": project, "fact_id": self.codec.id(fact_id)}
        found = self._read("observations_for_fact", params)
        return [rows.observation_from_row(r, self.codec) for r in found]

    def conflict(self, project: str, conflict_id: str) -> ConflictSet:
        params = {"project": project, "id": self.codec.id(conflict_id)}
        found = self._read("conflict_by_id", params)
        if not found:
            raise NotFound(f"no conflict set {conflict_id} in project {project!r}")
        return rows.conflict_from_row(found[0], self.codec)

    def conflicts(
        self, project: str, subject: str | None, status: ConflictStatus | None
    ) -> list[ConflictSet]:
        params = {
            "project": project,
            "subject": subject,
            "status": None if status is None else str(status),
        }
        return [rows.conflict_from_row(r, self.codec) for r in self._read("conflicts_list", params)]

    def erasable(self, project: str, subject: str | None) -> dict[str, int]:
        with self._tx(write=False) as db:
            return {
                k: int(v)
                for k, v in dict(
                    self._one(db, "erase_counts", {"project": project, "subject": subject})
                ).items()
            }

    def counts(self, project: str | None) -> StoreCounts:
        params = {"project": project}
        with self._tx(write=False) as db:
            events = self._one(db, "count_events", params)["n"]
            facts = dict.fromkeys((s.value for s in FactStatus), 0)
            for r in self._run(db, "count_facts_by_status", params):
                facts[r["status"]] = r["n"]
            jobs = dict.fromkeys((s.value for s in JobStatus), 0)
            for r in self._run(db, "count_jobs_by_status", params):
                jobs[r["status"]] = r["n"]
            open_sets = dict.fromkeys((k.value for k in ConflictKind), 0)
            for r in self._run(db, "count_open_conflicts", params):
                open_sets[r["kind"]] = r["n"]
            failed = self._load_jobs(db, "failed_jobs", params)
            running = self._load_jobs(db, "running_jobs", params)
            usage = self._one(db, "llm_usage", params)
            summarised = self._one(db, "count_consolidations", params)
            derived = self._one(db, "count_derive", params)
            patterns = self._one(db, "count_patterns", params)
        return StoreCounts(
            events=events,
            facts_by_status=facts,
            jobs_by_status=jobs,
            open_conflicts=sum(open_sets.values()),
            open_conflicts_by_kind=open_sets,
            failed_jobs=tuple(failed),
            running_jobs=tuple(running),
            llm_usage=LLMUsage(usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]),
            consolidations=int(summarised["consolidations"]),
            facts_consolidated=int(summarised["facts_consolidated"]),
            derive_cycles=int(derived["derive_cycles"]),
            facts_derived=int(derived["facts_derived"]),
            facts_invalidated=int(derived["facts_invalidated"]),
            procedures_by_status={
                status: int(patterns[f"procedures_{status}"])
                for status in ("candidate", "active", "deprecated")
            },
            topics_by_status={s: int(patterns[f"topics_{s}"]) for s in ("active", "retired")},
        )

    # -- derive ------------------------------------------------------------------------------------
    def votes(self, project: str, subject: str, after: str | None, limit: int) -> list[Observation]:
        params = {
            "project": project,
            "subject": subject,
            "after": self.codec.id(after),
            "limit": limit,
        }
        found = self._read("vote_observations", params)
        return [rows.observation_from_row(r, self.codec) for r in found]

    def vote_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        return self._scopes("vote_scopes", projects)

    def subjects(self, project: str) -> list[str]:
        return [r["subject"] for r in self._read("subjects_of", {"project": project})]

    def derive_invalidations(
        self, project: str | None, subject: str | None, since: datetime
    ) -> list[tuple[str, str, datetime]]:
        params = {"project": project, "subject": subject, "since": self.codec.time(since)}
        found = self._read("derive_invalidations", params)
        return [(r["project"], r["subject"], self.codec.read_time(r["at"])) for r in found]

    def iter_events(self, project: str | None, subject: str | None = None) -> Iterator[Event]:
        """Every event (of a project, of a subject) in (occurred_at, id) order, read a page
        per short transaction."""
        after: tuple[Any, Any] = (None, None)  # the first page starts at the beginning
        while True:
            params = {
                "project": project,
                "subject": subject,
                "after_time": after[0],
                "after_id": after[1],
                "limit": EVENT_PAGE_SIZE,
            }
            page = self._read("events_page", params)
            for r in page:
                yield rows.event_from_row(r, self.codec)
            if len(page) < EVENT_PAGE_SIZE:
                return
            after = (page[-1]["occurred_at"], page[-1]["id"])
