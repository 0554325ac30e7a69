"""The embedded store: one SQLite file in WAL mode, zero setup.

Every operation is `SqlStore`'s; this module supplies what SQLite does its own way. SQLite
has one writer at a time, so every write transaction (`BEGIN IMMEDIATE`) is already
serialised against every other writer and no lock is needed. Ids and hashes are stored as
16-byte BLOBs and instants as integer microseconds (`rows.PACKED`). Lists travel as one JSON
array expanded with `json_each` (a list of ids through `stored_id`); vectors are float32
BLOBs, searched exactly or, in large subjects, through an in-memory HNSW index
(`sqlite_vectors`). Connections and transactions: `sqlite_connection`; the SQL:
`sql/sqlite_*.sql`.

Before anything is written, `sqlite_file` looks at what the path names: a new or empty file
is created and migrated, another application's database is refused, and a database this
user cannot write (or one opened with ``?mode=ro``) is served read-only. Its migrations are
then read before any write lock is taken, so opening an up-to-date database writes nothing,
and a reader never waits for a writer.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from distill.adapters.store import rows, sqlite_vectors
from distill.adapters.store.queries import Migration, load_migrations, load_queries
from distill.adapters.store.sql_base import DB
from distill.adapters.store.sql_keys import SqlKeys
from distill.adapters.store.sql_schedule import SqlSchedule
from distill.adapters.store.sql_store import SqlStore
from distill.adapters.store.sqlite_connection import SqliteConnections, split_statements
from distill.adapters.store.sqlite_file import open_file
from distill.adapters.store.vector_cache import VectorCache, VectorScope
from distill.adapters.store.vector_search import exact_nearest
from distill.errors import StoreError
from distill.ports import Neighbour, RecallScope, Vector

log = logging.getLogger("distill.store")
# Seconds an erase waits for other connections' reads to end, so that its checkpoint can copy
# the zeroed pages over the erased ones in the file.
CHECKPOINT_WAIT_S = 5.0

QUERIES = load_queries("sqlite")
# How SQLite names the unique index of one active fact per identity in its error message.
_ACTIVE_IDENTITY_INDEX = "facts.project, facts.subject, facts.identity_key"


class SqliteStore(SqlStore, SqlKeys, SqlSchedule):
    """`distill.ports.Store` on SQLite."""

    queries = QUERIES
    migrations = load_migrations("sqlite")
    codec = rows.PACKED
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(
        self,
        path: str | Path,
        *,
        ann_min_vectors: int | None = None,
        busy_timeout: float | None = None,
        read_only: bool | None = None,
    ) -> None:
        """`path`: a file (with options if any: ``memory.db?busy_timeout=60&mode=ro``) or
        ``:memory:``. `ann_min_vectors`: active vectors of one subject from which lookups use
        an ANN index instead of exact search (default `vector_cache.INDEX_MIN_VECTORS`).
        `busy_timeout`: seconds a writer waits for another's write lock (default
        `sqlite_file.BUSY_TIMEOUT_S`). `read_only`: serve reads and refuse writes (by default
        when the path says ``mode=ro`` or this user cannot write the database)."""
        self.file = open_file(str(path), busy_timeout, read_only)
        self.path = self.file.path
        self._vectors = VectorCache(ann_min_vectors)
        self._connections = SqliteConnections(self.file, self._claimers)
        super().__init__(self._connections, self.path)

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    def close(self) -> None:
        super().close()
        self._vectors.close()

    def _array(self, values: Sequence[Any]) -> str:
        return json.dumps(list(values))

    def _many(self, db: DB, query: str, params: list[dict[str, Any]]) -> int:
        if not params:
            return 0
        return int(db.executemany(self.queries[query], params).rowcount)  # type: ignore[attr-defined]

    def _facts_inserted(self, db: DB, fact_ids: Sequence[str]) -> None:
        # Once for all of a plan's new facts, not by a trigger per row (sqlite_0016): the
        # trigger was two thirds of a fact's insert.
        if not fact_ids:
            return
        ids = {"ids": self._array(fact_ids)}
        self._run(db, "index_fact_words_rows", ids)
        self._run(db, "index_fact_words", ids)

    def _store_vectors(self, db: DB, params: list[dict[str, Any]]) -> int:
        # A vector is stored once, in the embedding cache under (model, text hash), where the
        # engine already put it; the fact's row names it. Written again here (a no-op when
        # present) so that a plan never names a vector the cache lacks.
        self._many(db, "cache_embedding", params)
        return self._many(db, "insert_fact_vector", params)

    def _erase(
        self, db: DB, scope: Mapping[str, Any], statements: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> dict[str, int]:
        # The deleted rows' bytes are overwritten with zeros, not left in free pages of the file.
        was = db.execute("PRAGMA secure_delete").fetchone()[0]
        db.execute("PRAGMA secure_delete = ON")
        try:
            return super()._erase(db, scope, statements)
        finally:
            db.execute(f"PRAGMA secure_delete = {int(was)}")

    def forget_erased(self) -> None:
        """Copy the write-ahead log into the file and empty it, so that no copy of an erased
        page stays in the log (the file's own pages were zeroed as they were freed)."""
        raw = self._connections.raw()
        # The full-text index keeps a deleted fact's words in its segments until they merge:
        # 'optimize' merges them all into one, without the deleted words.
        with self._tx() as db:
            self._run(db, "merge_fact_words", {})
        # A checkpoint cannot pass a page that another connection (another thread's, in a
        # server) still reads in its snapshot: it reports itself busy, and until it completes
        # the file's own copy of an erased page still holds the erased bytes. Such reads are
        # short, so try again for a while; say so if it never completes.
        deadline = time.monotonic() + CHECKPOINT_WAIT_S
        while raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] != 0:
            if time.monotonic() > deadline:
                log.warning(
                    "erase: the write-ahead log of %s could not be emptied within %s s (another "
                    "connection is reading); erased pages stay in the file until it is",
                    self.path,
                    CHECKPOINT_WAIT_S,
                )
                return
            time.sleep(0.02)

    def _vector_param(self, vector: Vector) -> bytes:
        return rows.to_blob(vector)

    def _nearest(
        self, db: DB, scope: tuple[str, str, str], queries: Vector, k: int
    ) -> list[list[Neighbour]]:
        uncommitted = self._connections.uncommitted()
        vectors = VectorScope(*scope)
        conn = cast(sqlite3.Connection, db)
        return sqlite_vectors.nearest(self._vectors, conn, vectors, queries, k, uncommitted)

    def _recall_nearest(
        self, db: DB, scope: RecallScope, question: Callable[[], Vector], k: int
    ) -> list[Neighbour]:
        query = question()  # nothing here waits on the server: no reason to read first
        if scope.among is None:  # the active facts: an ANN index once there are many
            vectors = VectorScope(scope.project, scope.subject, scope.model_id, True, scope.kinds)
            conn = cast(sqlite3.Connection, db)
            uncommitted = self._connections.uncommitted()
            return sqlite_vectors.nearest(self._vectors, conn, vectors, query, k, uncommitted)[0]
        params = {"project": scope.project, "model_id": scope.model_id}
        found = self._run(db, "recall_vectors_of", {**params, "among": self._array(scope.among)})
        usable = [r for r in found if r["dim"] == query.shape[1]]
        if not usable:
            return []
        ids = [rows.unpack_id(r["fact_id"]) for r in usable]
        matrix = np.stack([rows.from_blob(r["vector"]) for r in usable])
        return exact_nearest(ids, matrix, query, k)[0]

    def _word_query(self, terms: Sequence[str]) -> dict[str, Any]:
        # Each word quoted, so that AND, NOT, NEAR, * or : in a question are words, not syntax;
        # joined by OR: FTS5's default (all words) finds almost nothing for a question.
        return {"match": " OR ".join(f'"{t}"' for t in terms)}

    def _breaks_active_identity(self, exc: Exception) -> bool:
        return _ACTIVE_IDENTITY_INDEX in str(exc)

    def _run_migration(self, db: DB, migration: Migration) -> None:
        for statement in split_statements(migration.sql):
            db.execute(statement)

    def _current_version(self, db: DB) -> int | None:
        if self.file.new:  # no tables when looked at: the write path makes them, or finds
            return None  # that another store just did
        return int(self._one(db, "schema_version")["version"])

    def _check_can_migrate(self, db: DB) -> None:
        if self.file.read_only is not None:
            current = int(self._one(db, "schema_version")["version"])
            raise StoreError(
                f"the SQLite database at {self.path} has schema version {current} and this "
                f"distill needs version {self.migrations[-1].version}, but it is read-only "
                f"({self.file.read_only}): open it once with write access, for example with "
                "`distill migrate`, to bring it up to date"
            )

    def _claimers(self) -> list[str]:
        """The running consolidations of other stores, for a writer kept waiting."""
        return [
            f"{c.owner.describe()} ({c.jobs} running job(s)"
            + (f" since {c.since:%H:%M:%S} UTC)" if c.since else ")")
            for c in self._running_claims()
            if c.owner.token != self.owner.token
        ]
