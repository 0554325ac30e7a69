"""Every domain operation of the `Store` port, written once over named SQL.

`SqlStore` is the store; `SqliteStore` and `PostgresStore` are its two backends, and each
supplies only what really differs between them:

- the SQL text: `sql/<backend>_*.sql`, with `:name` or `%(name)s` parameters;
- a list parameter (`_array`): one JSON text read with `json_each`, or a Python list read
  with `= ANY(...)`;
- a bulk statement (`_many`): sqlite3's `executemany`, or a psycopg cursor's;
- locks (`_lock`): none in SQLite, where one writer at a time is the rule, or
  `pg_advisory_xact_lock`;
- new events (`_events_stored`, `wait_for_events`): polling, or NOTIFY / LISTEN;
- vectors (`_vector_param`, `_nearest`, `_vectors_written`): BLOBs searched exactly or
  through an in-memory HNSW index, or pgvector and its HNSW indexes;
- migrations (`_run_migration`, `_check_can_migrate`): statements one by one, or one script
  once pgvector is known to be there;
- connections (`self._db`): one per thread either way, with the same transaction rules.

The SQL files stay the source of truth: both define the same query names (a test checks
it), so the code below names a query and never holds SQL of its own. The queries return
the same columns on both backends and `rows` turns them into models either way.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

import numpy as np

from distill import ids
from distill.adapters.store import rows
from distill.adapters.store.claims import process_alive, this_process
from distill.adapters.store.plan_writer import write_plan
from distill.adapters.store.queries import Migration
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
from distill.errors import ClaimLost, NotFound, StoreError
from distill.ports import Claim, LLMUsage, Neighbour, Owner, Reclaimed, StoreCounts, Vector

EVENT_PAGE_SIZE = 500  # rows per read transaction when iterating over every event


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class DB(Protocol):
    """A driver connection inside a transaction: sqlite3's and psycopg's both fit."""

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


class Connections(Protocol):
    """A backend's connections (one per thread) and the transactions on them."""

    def transaction(
        self, write: bool = True, rollback: bool = False
    ) -> AbstractContextManager[Any]: ...
    def close(self) -> None: ...


class SqlStore(ABC):
    """`distill.ports.Store` over a backend's named SQL. See the module docstring."""

    queries: ClassVar[Mapping[str, str]]
    migrations: ClassVar[tuple[Migration, ...]]
    # The driver's integrity errors (unique, foreign key, check), caught where a write is
    # refused so that the refusal can say which invariant it protects.
    integrity_errors: ClassVar[tuple[type[Exception], ...]]

    def __init__(self, connections: Connections, where: str) -> None:
        self._db = connections
        self._tx = connections.transaction
        self.owner = this_process()  # who this store's claims say made them
        self.where = where  # the database, fit to be shown (no password)
        try:
            self.migrate()
        except BaseException:
            self._db.close()
            raise

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what each backend supplies ----------------------------------------------------------------
    @abstractmethod
    def _array(self, values: Sequence[Any]) -> Any:
        """A list as one query parameter."""

    @abstractmethod
    def _many(self, db: DB, query: str, params: list[dict[str, Any]]) -> int:
        """Run a named statement once per parameter set; returns the rows it changed."""

    @abstractmethod
    def _vector_param(self, vector: Vector) -> Any:
        """An identity vector as the parameter its column takes."""

    @abstractmethod
    def _nearest(
        self, db: DB, scope: tuple[str, str, str], queries: Vector, k: int
    ) -> list[list[Neighbour]]:
        """For each row of `queries`, the k nearest active state facts of scope (project,
        subject, model id), nearest first, ties by fact id."""

    @abstractmethod
    def _breaks_active_identity(self, exc: Exception) -> bool:
        """Whether a driver's integrity error is the one-active-fact-per-identity index."""

    @abstractmethod
    def _run_migration(self, db: DB, migration: Migration) -> None: ...

    def _lock(self, db: DB, *parts: str) -> None:
        """Hold a lock named by `parts` until the transaction ends (re-entrant in it)."""
        return None  # nothing to do unless the backend says otherwise

    def _check_can_migrate(self, db: DB) -> None:
        """Raise, saying what to do, if this database cannot take the migrations it lacks."""
        return None  # nothing to do unless the backend says otherwise

    def _events_stored(self, db: DB) -> None:
        """New events were stored in this transaction: wake whoever waits for them."""
        return None  # nothing to do unless the backend says otherwise

    def _vectors_written(self, dims: set[int]) -> None:
        """A plan stored identity vectors of these dimensions."""
        return None  # nothing to do unless the backend says otherwise

    def _hold_claims(self) -> None:
        """Before claiming: make sure others can tell that this store is alive."""
        return None  # without sessions to watch, the process and the heartbeat tell

    def _session_gone(self, token: str) -> bool:
        """Whether the connection of the store that made claims under `token` is gone."""
        return False  # unknown without sessions: the lease decides

    def wait_for_events(self, timeout: float, stop: threading.Event) -> bool:
        """Without notifications: wait out the timeout (or the stop); the caller polls."""
        stop.wait(timeout)
        return False

    def close(self) -> None:
        """Close every connection this store opened, in every thread. Idempotent."""
        self._db.close()

    # -- small helpers -----------------------------------------------------------------------------
    def _run(self, db: DB, query: str, params: Mapping[str, Any] | None = None) -> Any:
        return db.execute(self.queries[query], params or {})

    def _one(self, db: DB, query: str, params: Mapping[str, Any] | None = None) -> Any:
        row = self._run(db, query, params).fetchone()
        if row is None:  # pragma: no cover - every caller's query returns a row
            raise StoreError(f"query {query} returned nothing")
        return row

    def _read(self, query: str, params: Mapping[str, Any]) -> list[Any]:
        """All rows of one named query, in a read transaction of its own."""
        with self._tx(write=False) as db:
            return list(self._run(db, query, params).fetchall())

    def _write(self, query: str, params: Mapping[str, Any]) -> int:
        with self._tx() as db:
            return int(self._run(db, query, params).rowcount)

    # -- lifecycle ---------------------------------------------------------------------------------
    def migrate(self) -> None:
        """Apply the migrations this database lacks, in order; a no-op when up to date."""
        latest = self.migrations[-1].version
        with self._tx() as db:
            # One migrating store at a time, so that stores started at once on a fresh
            # database do not race to create the same tables.
            self._lock(db, "distill", "migrations")
            self._run(db, "create_migrations_table")
            current = int(self._one(db, "schema_version")["version"])
            if current > latest:
                raise StoreError(
                    f"the database at {self.where} has schema version {current}, but this "
                    f"distill knows only up to {latest}; upgrade distill "
                    "(pip install --upgrade distill)"
                )
            if current < latest:
                self._check_can_migrate(db)
            for migration in self.migrations:
                if migration.version <= current:
                    continue
                self._run_migration(db, migration)
                params = {"version": migration.version, "applied_at": rows.ts(datetime.now(UTC))}
                self._run(db, "record_migration", params)

    def schema_version(self) -> int:
        with self._tx(write=False) as db:
            return int(self._one(db, "schema_version")["version"])

    def serialised(self, project: str, subject: str) -> AbstractContextManager[None]:
        """A write transaction holding the subject's lock, taken before anything is read."""
        return self._serialised(project, subject)

    @contextmanager
    def _serialised(self, project: str, subject: str) -> Iterator[None]:
        with self._tx() as db:
            self._lock(db, "subject", project, subject)
            yield

    def dry_run(self) -> AbstractContextManager[None]:
        """A transaction in which everything happens as usual and that is always rolled back:
        whatever runs inside sees its own writes, and nobody else ever sees them."""
        return self._dry_run()

    @contextmanager
    def _dry_run(self) -> Iterator[None]:
        with self._tx(rollback=True):
            yield

    # -- events and jobs ---------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], now: datetime) -> list[tuple[Event, bool]]:
        stamp = rows.ts(now)
        params = [rows.event_params(e) for e in events]  # refuses naive datetimes up front
        stored: list[tuple[Event, bool]] = []
        with self._tx() as db:
            # In a fixed order, so that two batches naming the same subjects cannot deadlock.
            # Not the consolidation lock: an agent never waits for a consolidation.
            for project, subject in sorted({(e.project, e.subject) for e in events}):
                self._lock(db, "append", project, subject)
            for event, event_row in zip(events, params, strict=True):
                if self._run(db, "insert_event", event_row).rowcount == 0:
                    key = {"project": event.project, "idempotency_key": event.idempotency_key}
                    stored.append((rows.event_from_row(self._one(db, "event_by_key", key)), False))
                    continue
                scope = {"project": event.project, "subject": event.subject, "now": stamp}
                pending = self._run(db, "pending_job_for_subject", scope).fetchone()
                if pending is None:
                    job_id = ids.new_id()  # sorts in creation order: ties on time are fair
                    self._run(db, "insert_job", {**scope, "id": job_id})
                else:
                    job_id = pending["id"]
                    self._run(db, "touch_job", {"id": job_id, "now": stamp})
                link = {"job_id": job_id, "event_id": event.id}
                self._run(db, "attach_event_to_job", link)
                stored.append((event, True))
            if any(new for _, new in stored):
                self._events_stored(db)
        return stored

    def events(self, ids: Sequence[str]) -> list[Event]:
        """The stored events among `ids`, in (occurred_at, id) order."""
        if not ids:
            return []
        found = self._read("events_by_ids", {"ids": self._array(ids)})
        return [rows.event_from_row(r) for r in found]

    def set_event_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None:
        """Store derived embeddings of events: the only thing ever written to an event."""
        if not vectors:
            return
        params = [
            {"id": event_id, "model_id": model_id, "embedding": self._vector_param(vector)}
            for event_id, vector in vectors.items()
        ]
        with self._tx() as db:
            if self._many(db, "set_event_embedding", params) != len(params):
                raise NotFound("some of these events do not exist")

    def claim_jobs(self, now: datetime, limit: int, max_attempts: int) -> list[Job]:
        if limit <= 0:
            return []
        stamp = rows.ts(now)
        self._hold_claims()
        with self._tx() as db:
            due = self._run(
                db, "due_jobs", {"now": stamp, "limit": limit, "max_attempts": max_attempts}
            ).fetchall()
            if not due:
                return []
            found = self._array([r["id"] for r in due])
            owner = self.owner
            claim = {"token": owner.token, "host": owner.host, "pid": owner.pid}
            claim["started"] = owner.started
            self._run(db, "mark_jobs_running", {"ids": found, "now": stamp, **claim})
            return self._load_jobs(db, "jobs_by_ids", {"ids": found})

    def reclaim(self, now: datetime, stalled_before: datetime, max_attempts: int) -> Reclaimed:
        """Take back the running jobs of claimers that are gone (see `claims`), and of any
        claimer whose heartbeat is older than `stalled_before`; say what is still held."""
        others = [c for c in self._running_claims() if c.owner.token != self.owner.token]
        gone = [c for c in others if self._claimer_gone(c.owner)]
        params = {"now": rows.ts(now), "max_attempts": max_attempts}
        with self._tx() as db:
            taken = 0
            if gone:
                tokens = self._array([c.owner.token for c in gone])
                taken = self._run(db, "reclaim_claims", {**params, "tokens": tokens}).rowcount
            stalled = self._run(
                db, "reclaim_stalled", {**params, "stalled_before": rows.ts(stalled_before)}
            ).rowcount
        held = [c for c in self._running_claims() if c.owner.token != self.owner.token]
        return Reclaimed(tuple(gone), int(taken), int(stalled), tuple(held))

    def _running_claims(self) -> list[Claim]:
        claims = []
        for r in self._read("running_claims", {}):
            token = r["claim_token"] or ""  # a claim made before claims had owners
            host, pid, started = r["claim_host"] or "", r["claim_pid"] or 0, r["claim_started"]
            owner = Owner(token, host, pid, float(started or 0.0))
            claims.append(Claim(owner, int(r["jobs"]), rows.as_opt_time(r["since"])))
        return claims

    def _claimer_gone(self, owner: Owner) -> bool:
        """Whether the owner of a claim is known to be gone: its process, on this host, or
        its session, where the backend can tell. Unknown owners are left to the lease."""
        if not owner.token:
            return False
        if owner.host == self.owner.host and not process_alive(owner.pid, owner.started):
            return True
        return self._session_gone(owner.token)

    def earlier_open_job(self, job_id: str) -> bool:
        return bool(self._read("earlier_open_job", {"id": job_id}))

    def heartbeat(self, now: datetime) -> None:
        """Mark every job this store holds as still being worked on."""
        self._write("heartbeat", {"token": self.owner.token, "now": rows.ts(now)})

    def finish_job(self, job_id: str, now: datetime) -> None:
        params = {"id": job_id, "now": rows.ts(now), "token": self.owner.token}
        self._claimed_job("finish_job", params)

    def fail_job(self, job_id: str, error: str, now: datetime, retry_at: datetime | None) -> None:
        params = {"id": job_id, "error": error, "now": rows.ts(now), "retry_at": rows.ts(retry_at)}
        self._claimed_job("fail_job", {**params, "token": self.owner.token})

    def _claimed_job(self, query: str, params: dict[str, Any]) -> None:
        """Change a job this store holds; raise `ClaimLost` if it holds it no longer."""
        with self._tx() as db:
            if self._run(db, query, params).rowcount:
                return
            if not self._run(db, "jobs_by_ids", {"ids": self._array([params["id"]])}).fetchall():
                raise NotFound(f"no job {params['id']}")
        raise ClaimLost(
            f"job {params['id']} is no longer held by this run: it was taken back (its claim "
            "looked abandoned) and may be another run's now"
        )

    def add_job_usage(self, job_id: str, usage: LLMUsage) -> None:
        params = {
            "id": job_id,
            "calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        }
        self._update_job("add_job_usage", params)

    def _update_job(self, query: str, params: dict[str, Any]) -> None:
        if self._write(query, params) == 0:
            raise NotFound(f"no job {params['id']}")

    def release_jobs(self, job_ids: Sequence[str], now: datetime) -> None:
        if job_ids:
            params = {"ids": self._array(job_ids), "now": rows.ts(now), "token": self.owner.token}
            self._write("release_jobs", params)

    def requeue_jobs(self, project: str | None, now: datetime) -> int:
        return self._write("requeue_jobs", {"project": project, "now": rows.ts(now)})

    def job(self, job_id: str) -> Job:
        with self._tx(write=False) as db:
            found = self._load_jobs(db, "jobs_by_ids", {"ids": self._array([job_id])})
        if not found:
            raise NotFound(f"no job {job_id}")
        return found[0]

    def jobs(self, project: str | None = None) -> list[Job]:
        with self._tx(write=False) as db:
            return self._load_jobs(db, "jobs_list", {"project": project})

    def _load_jobs(self, db: DB, query: str, params: dict[str, Any]) -> list[Job]:
        found = self._run(db, query, params).fetchall()
        if not found:
            return []
        event_ids: dict[str, list[str]] = {r["id"]: [] for r in found}
        for link in self._run(db, "job_event_ids", {"ids": self._array(list(event_ids))}):
            event_ids[link["job_id"]].append(link["event_id"])
        return [rows.job_from_row(r, tuple(event_ids[r["id"]])) for r in found]

    # -- reads for adjudication --------------------------------------------------------------------
    def facts_by_ids(self, project: str, fact_ids: Sequence[str]) -> list[Fact]:
        """The facts of the project among `fact_ids` (any status); others are left out."""
        if not fact_ids:
            return []
        params = {"project": project, "ids": self._array(fact_ids)}
        return [rows.fact_from_row(r) for r in self._read("facts_by_ids", params)]

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
        return [rows.fact_from_row(r) for r in self._read(query, params)]

    def nearest_facts(
        self, project: str, subject: str, vectors: Vector, k: int, model_id: str
    ) -> list[list[Neighbour]]:
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if k <= 0 or queries.shape[0] == 0:
            return [[] for _ in range(queries.shape[0])]
        with self._tx(write=False) as db:
            return self._nearest(db, (project, subject, model_id), queries, k)

    def aliases(self, project: str, predicates: Sequence[str]) -> dict[str, Alias]:
        if not predicates:
            return {}
        params = {"project": project, "predicates": self._array(predicates)}
        return {r["alias"]: rows.alias_from_row(r) for r in self._read("aliases_for", params)}

    def open_conflicts_for(
        self, project: str, subject: str, keys: Sequence[str]
    ) -> list[ConflictSet]:
        if not keys:
            return []
        params = {"project": project, "subject": subject, "keys": self._array(keys)}
        return [rows.conflict_from_row(r) for r in self._read("open_conflicts_for", params)]

    def seen_claims(self, event_ids: Sequence[str]) -> set[tuple[str, str]]:
        if not event_ids:
            return set()
        found = self._read("seen_claims", {"event_ids": self._array(event_ids)})
        return {(r["event_id"], r["claim_hash"]) for r in found}

    def active_facts(self, project: str, subject: str, limit: int) -> list[Fact]:
        """Active state facts of the subject, most recently reinforced first."""
        params = {"project": project, "subject": subject, "limit": limit}
        return [rows.fact_from_row(r) for r in self._read("active_facts", params)]

    # -- writes ------------------------------------------------------------------------------------
    def apply(self, plan: Plan, job_id: str | None, audit: Sequence[AuditEntry]) -> None:
        """Write every action, then the audit entries, all or nothing (see `plan_writer`)."""
        with self._tx() as db:
            dims = write_plan(self, db, plan, audit)
        if dims:
            self._vectors_written(dims)

    # -- embedding cache ---------------------------------------------------------------------------
    def cached_embeddings(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        if not hashes:
            return {}
        params = {"model_id": model_id, "hashes": self._array(hashes)}
        found = self._read("cached_embeddings", params)
        return {r["text_hash"]: rows.from_blob(r["vector"]) for r in found}

    def cache_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None:
        if not vectors:
            return
        params = [
            {"model_id": model_id, "text_hash": h, "vector": rows.to_blob(v)}
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
        return {r["event_id"]: rows.loads(r["candidates"]) for r in found}

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
        with self._tx() as db:
            self._many(db, "cache_extraction", params)

    def forget_extractions(self, project: str | None) -> int:
        return self._write("forget_extractions", {"project": project})

    # -- queries -----------------------------------------------------------------------------------
    def fact(self, fact_id: str) -> Fact:
        found = self._read("fact_by_id", {"id": fact_id})
        if not found:
            raise NotFound(f"no fact {fact_id}")
        return rows.fact_from_row(found[0])

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
        return [rows.fact_from_row(r) for r in self._read(query, params)]

    def audit_for(self, fact_id: str) -> list[AuditEntry]:
        return [rows.audit_from_row(r) for r in self._read("audit_for_fact", {"fact_id": fact_id})]

    def audit(self, project: str, subject: str | None, limit: int) -> list[AuditEntry]:
        params = {"project": project, "subject": subject, "limit": limit}
        return [rows.audit_from_row(r) for r in self._read("audit_latest", params)]

    def observations_for_events(self, event_ids: Sequence[str]) -> list[Observation]:
        if not event_ids:
            return []
        found = self._read("observations_for_events", {"event_ids": self._array(event_ids)})
        return [rows.observation_from_row(r) for r in found]

    def observations_for(self, fact_id: str) -> list[Observation]:
        found = self._read("observations_for_fact", {"fact_id": fact_id})
        return [rows.observation_from_row(r) for r in found]

    def conflict(self, conflict_id: str) -> ConflictSet:
        found = self._read("conflict_by_id", {"id": conflict_id})
        if not found:
            raise NotFound(f"no conflict set {conflict_id}")
        return rows.conflict_from_row(found[0])

    def conflicts(
        self, project: str, subject: str | None, status: ConflictStatus | None
    ) -> list[ConflictSet]:
        params = {
            "project": project,
            "subject": subject,
            "status": None if status is None else str(status),
        }
        return [rows.conflict_from_row(r) for r in self._read("conflicts_list", params)]

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
            open_conflicts = self._one(db, "count_open_conflicts", params)["n"]
            failed = self._load_jobs(db, "failed_jobs", params)
            running = self._load_jobs(db, "running_jobs", params)
            usage = self._one(db, "llm_usage", params)
        return StoreCounts(
            events=events,
            facts_by_status=facts,
            jobs_by_status=jobs,
            open_conflicts=open_conflicts,
            failed_jobs=tuple(failed),
            running_jobs=tuple(running),
            llm_usage=LLMUsage(usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]),
        )

    def iter_events(self, project: str | None) -> Iterator[Event]:
        """Every event in (occurred_at, id) order, read a page per short transaction."""
        after: tuple[Any, Any] = (None, None)  # the first page starts at the beginning
        while True:
            params = {
                "project": project,
                "after_time": after[0],
                "after_id": after[1],
                "limit": EVENT_PAGE_SIZE,
            }
            page = self._read("events_page", params)
            for r in page:
                yield rows.event_from_row(r)
            if len(page) < EVENT_PAGE_SIZE:
                return
            after = (page[-1]["occurred_at"], page[-1]["id"])
