"""The embedded store: one SQLite file in WAL mode, zero setup.

SQLite has one writer at a time, so every write transaction (`BEGIN IMMEDIATE`) is already
serialised against every other writer; `serialised(project, subject)` needs no lock of its
own. A nested `serialised` (or `apply` inside one) uses a savepoint, so it rolls back alone.
Connections and transactions: `sqlite_connection`; rows ↔ models: `sqlite_rows`; the SQL:
`sql/sqlite_*.sql`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from distill import ids
from distill.adapters.store import sqlite_rows as rows
from distill.adapters.store.queries import load_migrations, load_queries
from distill.adapters.store.sqlite_apply import apply_plan
from distill.adapters.store.sqlite_connection import SqliteConnections, split_statements
from distill.adapters.store.sqlite_vectors import SqliteVectors
from distill.core.models import (
    Alias,
    AuditEntry,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactStatus,
    Job,
    JobStatus,
    Observation,
)
from distill.core.plan import (
    Plan,
)
from distill.errors import NotFound, StoreError
from distill.ports import LLMUsage, Neighbour, StoreCounts, Vector

QUERIES = load_queries("sqlite")
MIGRATIONS = load_migrations("sqlite")

EVENT_PAGE_SIZE = 500  # rows per read transaction when iterating over every event


class SqliteStore:
    """`distill.ports.Store` on SQLite."""

    def __init__(self, path: str | Path, *, ann_min_vectors: int | None = None) -> None:
        """`ann_min_vectors`: active vectors of one subject from which lookups use an ANN
        index instead of exact search (default `sqlite_vectors.INDEX_MIN_VECTORS`)."""
        self.path = str(path)
        self._db = SqliteConnections(self.path)
        self._tx = self._db.transaction
        self._vectors = SqliteVectors(ann_min_vectors)
        try:
            self.migrate()
        except BaseException:
            self._db.close()
            raise

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lifecycle ---------------------------------------------------------------------------------
    def migrate(self) -> None:
        """Apply the migrations this database lacks, in order; a no-op when up to date."""
        latest = MIGRATIONS[-1].version
        with self._tx() as db:
            db.execute(QUERIES["create_migrations_table"])
            current = db.execute(QUERIES["schema_version"]).fetchone()["version"]
            if current > latest:
                raise StoreError(
                    f"the database at {self.path} has schema version {current}, but this "
                    f"distill knows only up to {latest}; upgrade distill "
                    "(pip install --upgrade distill)"
                )
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                for statement in split_statements(migration.sql):
                    db.execute(statement)
                db.execute(
                    QUERIES["record_migration"],
                    {"version": migration.version, "applied_at": rows.ts(datetime.now(UTC))},
                )

    def schema_version(self) -> int:
        with self._tx(write=False) as db:
            return int(db.execute(QUERIES["schema_version"]).fetchone()["version"])

    def close(self) -> None:
        """Close every connection this store opened, in every thread. Idempotent."""
        self._db.close()
        self._vectors.close()

    def serialised(self, project: str, subject: str) -> AbstractContextManager[None]:
        """A write transaction (SQLite serialises all writers, so every subject too)."""
        return self._serialised()

    @contextmanager
    def _serialised(self) -> Iterator[None]:
        with self._tx():
            yield

    # -- events and jobs ---------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], now: datetime) -> list[tuple[Event, bool]]:
        stamp = rows.ts(now)
        stored: list[tuple[Event, bool]] = []
        with self._tx() as db:
            for event in events:
                if db.execute(QUERIES["insert_event"], rows.event_params(event)).rowcount == 0:
                    key = {"project": event.project, "idempotency_key": event.idempotency_key}
                    existing = db.execute(QUERIES["event_by_key"], key).fetchone()
                    stored.append((rows.event_from_row(existing), False))
                    continue
                scope = {"project": event.project, "subject": event.subject, "now": stamp}
                pending = db.execute(QUERIES["pending_job_for_subject"], scope).fetchone()
                if pending is None:
                    job_id = ids.new_id()  # sorts in creation order: ties on time are fair
                    db.execute(QUERIES["insert_job"], {**scope, "id": job_id})
                else:
                    job_id = pending["id"]
                    db.execute(QUERIES["touch_job"], {"id": job_id, "now": stamp})
                db.execute(QUERIES["attach_event_to_job"], {"job_id": job_id, "event_id": event.id})
                stored.append((event, True))
        return stored

    def events(self, ids: Sequence[str]) -> list[Event]:
        """The stored events among `ids`, in (occurred_at, id) order."""
        if not ids:
            return []
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["events_by_ids"], {"ids": _json(ids)}).fetchall()
        return [rows.event_from_row(r) for r in found]

    def set_event_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None:
        """Store derived embeddings of events: the only thing ever written to an event."""
        if not vectors:
            return
        params = [
            {"id": event_id, "model_id": model_id, "embedding": rows.to_blob(vector)}
            for event_id, vector in vectors.items()
        ]
        with self._tx() as db:
            before = db.total_changes
            db.executemany(QUERIES["set_event_embedding"], params)
            if db.total_changes - before != len(params):
                raise NotFound("some of these events do not exist")

    def claim_jobs(self, now: datetime, limit: int, max_attempts: int) -> list[Job]:
        if limit <= 0:
            return []
        stamp = rows.ts(now)
        with self._tx() as db:
            due = db.execute(
                QUERIES["due_jobs"], {"now": stamp, "limit": limit, "max_attempts": max_attempts}
            ).fetchall()
            ids = _json([r["id"] for r in due])
            db.execute(QUERIES["mark_jobs_running"], {"ids": ids, "now": stamp})
            return self._load_jobs(db, "jobs_by_ids", {"ids": ids})

    def reclaim_stalled(self, now: datetime, stalled_before: datetime, max_attempts: int) -> int:
        params = {
            "now": rows.ts(now),
            "stalled_before": rows.ts(stalled_before),
            "max_attempts": max_attempts,
        }
        with self._tx() as db:
            return db.execute(QUERIES["reclaim_stalled"], params).rowcount

    def wait_for_events(self, timeout: float, stop: threading.Event) -> bool:
        """SQLite cannot notify: wait out the timeout (or the stop); the caller polls."""
        stop.wait(timeout)
        return False

    def earlier_open_job(self, job_id: str) -> bool:
        with self._tx(write=False) as db:
            return db.execute(QUERIES["earlier_open_job"], {"id": job_id}).fetchone() is not None

    def heartbeat(self, job_ids: Sequence[str], now: datetime) -> None:
        if not job_ids:
            return
        with self._tx() as db:
            db.execute(QUERIES["heartbeat"], {"ids": _json(job_ids), "now": rows.ts(now)})

    def finish_job(self, job_id: str, now: datetime) -> None:
        self._update_job("finish_job", {"id": job_id, "now": rows.ts(now)})

    def fail_job(self, job_id: str, error: str, now: datetime, retry_at: datetime | None) -> None:
        params = {"id": job_id, "error": error, "now": rows.ts(now), "retry_at": rows.ts(retry_at)}
        self._update_job("fail_job", params)

    def add_job_usage(self, job_id: str, usage: LLMUsage) -> None:
        params = {
            "id": job_id,
            "calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        }
        self._update_job("add_job_usage", params)

    def _update_job(self, query: str, params: dict[str, Any]) -> None:
        with self._tx() as db:
            if db.execute(QUERIES[query], params).rowcount == 0:
                raise NotFound(f"no job {params['id']}")

    def release_jobs(self, job_ids: Sequence[str], now: datetime) -> None:
        if not job_ids:
            return
        with self._tx() as db:
            db.execute(QUERIES["release_jobs"], {"ids": _json(job_ids), "now": rows.ts(now)})

    def requeue_jobs(self, project: str | None, now: datetime) -> int:
        with self._tx() as db:
            params = {"project": project, "now": rows.ts(now)}
            return db.execute(QUERIES["requeue_jobs"], params).rowcount

    def job(self, job_id: str) -> Job:
        with self._tx(write=False) as db:
            found = self._load_jobs(db, "jobs_by_ids", {"ids": _json([job_id])})
        if not found:
            raise NotFound(f"no job {job_id}")
        return found[0]

    def jobs(self, project: str | None = None) -> list[Job]:
        with self._tx(write=False) as db:
            return self._load_jobs(db, "jobs_list", {"project": project})

    def _load_jobs(self, db: sqlite3.Connection, query: str, params: dict[str, Any]) -> list[Job]:
        found = db.execute(QUERIES[query], params).fetchall()
        if not found:
            return []
        event_ids: dict[str, list[str]] = {r["id"]: [] for r in found}
        links = db.execute(QUERIES["job_event_ids"], {"ids": _json(list(event_ids))})
        for link in links:
            event_ids[link["job_id"]].append(link["event_id"])
        return [rows.job_from_row(r, tuple(event_ids[r["id"]])) for r in found]

    # -- reads for adjudication --------------------------------------------------------------------
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
        params.update({name: _json(values) for name, values in lists.items()})
        with self._tx(write=False) as db:
            return [rows.fact_from_row(r) for r in db.execute(QUERIES[query], params)]

    def nearest_facts(
        self, project: str, subject: str, vectors: Vector, k: int, model_id: str
    ) -> list[list[Neighbour]]:
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if k <= 0 or queries.shape[0] == 0:
            return [[] for _ in range(queries.shape[0])]
        scope = (project, subject, model_id)
        with self._tx(write=False) as db:
            return self._vectors.nearest(db, scope, queries, k, self._db.uncommitted())

    def aliases(self, project: str, predicates: Sequence[str]) -> dict[str, Alias]:
        if not predicates:
            return {}
        params = {"project": project, "predicates": _json(predicates)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["aliases_for"], params).fetchall()
        return {r["alias"]: rows.alias_from_row(r) for r in found}

    def open_conflicts_for(
        self, project: str, subject: str, keys: Sequence[str]
    ) -> list[ConflictSet]:
        if not keys:
            return []
        params = {"project": project, "subject": subject, "keys": _json(keys)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["open_conflicts_for"], params).fetchall()
        return [rows.conflict_from_row(r) for r in found]

    def seen_claims(self, event_ids: Sequence[str]) -> set[tuple[str, str]]:
        if not event_ids:
            return set()
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["seen_claims"], {"event_ids": _json(event_ids)})
            return {(r["event_id"], r["claim_hash"]) for r in found}

    def active_facts(self, project: str, subject: str, limit: int) -> list[Fact]:
        """Active state facts of the subject, most recently reinforced first."""
        params = {"project": project, "subject": subject, "limit": limit}
        with self._tx(write=False) as db:
            return [rows.fact_from_row(r) for r in db.execute(QUERIES["active_facts"], params)]

    # -- writes ------------------------------------------------------------------------------------
    def apply(self, plan: Plan, job_id: str | None, audit: Sequence[AuditEntry]) -> None:
        """Write every action, then the audit entries, all or nothing (see `sqlite_apply`)."""
        with self._tx() as db:
            apply_plan(db, plan, audit)

    # -- embedding cache ---------------------------------------------------------------------------
    def cached_embeddings(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        if not hashes:
            return {}
        params = {"model_id": model_id, "hashes": _json(hashes)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["cached_embeddings"], params).fetchall()
        return {r["text_hash"]: rows.from_blob(r["vector"]) for r in found}

    def cache_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None:
        if not vectors:
            return
        with self._tx() as db:
            db.executemany(
                QUERIES["cache_embedding"],
                [
                    {"model_id": model_id, "text_hash": h, "vector": rows.to_blob(v)}
                    for h, v in vectors.items()
                ],
            )

    # -- extraction cache --------------------------------------------------------------------------
    def cached_extractions(self, extractor: str, event_ids: Sequence[str]) -> dict[str, list[Any]]:
        if not event_ids:
            return {}
        params = {"extractor": extractor, "ids": _json(event_ids)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["cached_extractions"], params).fetchall()
        return {r["event_id"]: json.loads(r["candidates"]) for r in found}

    def cache_extractions(
        self, extractor: str, answers: dict[str, list[Any]], now: datetime
    ) -> None:
        if not answers:
            return
        stamp = rows.ts(now)
        with self._tx() as db:
            db.executemany(
                QUERIES["cache_extraction"],
                [
                    {
                        "extractor": extractor,
                        "event_id": event_id,
                        "candidates": _json(candidates),
                        "now": stamp,
                    }
                    for event_id, candidates in answers.items()
                ],
            )

    def forget_extractions(self, project: str | None) -> int:
        with self._tx() as db:
            return db.execute(QUERIES["forget_extractions"], {"project": project}).rowcount

    # -- queries -----------------------------------------------------------------------------------
    def fact(self, fact_id: str) -> Fact:
        with self._tx(write=False) as db:
            row = db.execute(QUERIES["fact_by_id"], {"id": fact_id}).fetchone()
        if row is None:
            raise NotFound(f"no fact {fact_id}")
        return rows.fact_from_row(row)

    def facts(
        self,
        project: str,
        subject: str | None,
        include_retired: bool,
        as_of: datetime | None,
    ) -> list[Fact]:
        """Active facts; every status with `include_retired`; or what was true at `as_of`
        (active or superseded facts whose validity covers it; `include_retired` is ignored)."""
        params = {"project": project, "subject": subject, "as_of": rows.ts(as_of)}
        if as_of is not None:
            query = "facts_as_of"
        else:
            query = "facts_every_status" if include_retired else "facts_active"
        with self._tx(write=False) as db:
            return [rows.fact_from_row(r) for r in db.execute(QUERIES[query], params)]

    def audit_for(self, fact_id: str) -> list[AuditEntry]:
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["audit_for_fact"], {"fact_id": fact_id}).fetchall()
        return [rows.audit_from_row(r) for r in found]

    def audit(self, project: str, subject: str | None, limit: int) -> list[AuditEntry]:
        params = {"project": project, "subject": subject, "limit": limit}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["audit_latest"], params).fetchall()
        return [rows.audit_from_row(r) for r in found]

    def observations_for_events(self, event_ids: Sequence[str]) -> list[Observation]:
        if not event_ids:
            return []
        with self._tx(write=False) as db:
            found = db.execute(
                QUERIES["observations_for_events"], {"event_ids": _json(event_ids)}
            ).fetchall()
        return [rows.observation_from_row(r) for r in found]

    def observations_for(self, fact_id: str) -> list[Observation]:
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["observations_for_fact"], {"fact_id": fact_id}).fetchall()
        return [rows.observation_from_row(r) for r in found]

    def conflict(self, conflict_id: str) -> ConflictSet:
        with self._tx(write=False) as db:
            row = db.execute(QUERIES["conflict_by_id"], {"id": conflict_id}).fetchone()
        if row is None:
            raise NotFound(f"no conflict set {conflict_id}")
        return rows.conflict_from_row(row)

    def conflicts(
        self, project: str, subject: str | None, status: ConflictStatus | None
    ) -> list[ConflictSet]:
        params = {"project": project, "subject": subject, "status": _opt_str(status)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["conflicts_list"], params).fetchall()
        return [rows.conflict_from_row(r) for r in found]

    def counts(self, project: str | None) -> StoreCounts:
        params = {"project": project}
        with self._tx(write=False) as db:
            events = db.execute(QUERIES["count_events"], params).fetchone()["n"]
            facts = dict.fromkeys((s.value for s in FactStatus), 0)
            for r in db.execute(QUERIES["count_facts_by_status"], params):
                facts[r["status"]] = r["n"]
            jobs = dict.fromkeys((s.value for s in JobStatus), 0)
            for r in db.execute(QUERIES["count_jobs_by_status"], params):
                jobs[r["status"]] = r["n"]
            open_conflicts = db.execute(QUERIES["count_open_conflicts"], params).fetchone()["n"]
            failed = self._load_jobs(db, "failed_jobs", params)
            usage = db.execute(QUERIES["llm_usage"], params).fetchone()
        return StoreCounts(
            events=events,
            facts_by_status=facts,
            jobs_by_status=jobs,
            open_conflicts=open_conflicts,
            failed_jobs=tuple(failed),
            llm_usage=LLMUsage(usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]),
        )

    def iter_events(self, project: str | None) -> Iterator[Event]:
        """Every event in (occurred_at, id) order, read a page per short transaction."""
        after_time, after_id = "", ""
        while True:
            params = {
                "project": project,
                "after_time": after_time,
                "after_id": after_id,
                "limit": EVENT_PAGE_SIZE,
            }
            with self._tx(write=False) as db:
                page = db.execute(QUERIES["events_page"], params).fetchall()
            for r in page:
                yield rows.event_from_row(r)
            if len(page) < EVENT_PAGE_SIZE:
                return
            after_time, after_id = page[-1]["occurred_at"], page[-1]["id"]


# -- helpers ---------------------------------------------------------------------------------------
def _json(values: Sequence[Any]) -> str:
    return json.dumps(list(values))


def _opt_str(value: object | None) -> str | None:
    return None if value is None else str(value)
