"""Nearest facts by vector, for `SqliteStore`: exact below a size, ANN above.

Two sets of vectors are searched this way, each named by a `VectorScope`: the identity
vectors of a subject's active state facts (identity matching, during consolidation), and the
recall vectors of the active facts of any kind of a subject or of a whole project (the vector
arm of `Memory.search`). What follows holds for both.

A subject with fewer than `INDEX_MIN_VECTORS` active identity vectors of one embedder is
searched exactly, as it always was: its rows are read and scored with numpy. The first lookup
that reads at least that many starts building an `AnnIndex` of them in a background thread
(at 100k vectors that takes minutes, and the lookup may hold SQLite's write lock); lookups stay
exact until it is ready. The index is kept in memory per (project, subject, model, dimension)
for the life of the store.

Every process and thread may write the same file, so an index is only a cache: before each
lookup it reads the `vector_changes` rows committed after the last one it saw (triggers write
them whenever a vector is stored or its fact changes status or kind) and re-reads those facts:
an active state fact is added, anything else removed. A retired fact is therefore never
returned, and a fact made active anywhere is found by the next lookup.

A lookup inside a transaction that has written but not committed sees its own writes, which
may still be rolled back (a dry run is one such transaction): they are searched as an overlay
on the index and never folded into it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.adapters.store import rows
from distill.adapters.store.ann_index import AnnIndex
from distill.adapters.store.queries import load_queries
from distill.adapters.store.vector_search import exact_nearest
from distill.ports import Neighbour

QUERIES = load_queries("sqlite")
log = logging.getLogger(__name__)

# Active vectors of one subject from which an ANN index replaces exact search. Exact search
# reads every vector of the subject from SQLite on each lookup: 9-24 ms at 1,000 vectors and
# 110 ms at 2,000 on a busy 2-core machine, against 0.3-0.5 ms from the index
# (bench/lookup.py). Below this, an index would cost memory (~2 KB a vector) for little.
INDEX_MIN_VECTORS = 1_000

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class VectorScope:
    """Which vectors a lookup searches: those of one subject (or, for recall, of the whole
    project when `subject` is None) made by one model, of active state facts (`recall`
    False) or of active facts of the `kinds` (a JSON list; None: every kind)."""

    project: str
    subject: str | None
    model_id: str
    recall: bool = False
    kinds: str | None = None

    @property
    def queries(self) -> tuple[str, str]:
        """The named queries that read every vector of the scope, and those changed since."""
        if self.recall:
            return "active_recall_vectors", "changed_recall_vectors"
        return "active_state_vectors", "changed_vectors"

    def params(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "subject": self.subject,
            "model_id": self.model_id,
            "kinds": self.kinds,
        }


_ScopeKey = tuple[VectorScope, int]  # the scope, and the vectors' dimension


@dataclass
class _Scope:
    index: AnnIndex
    seq: int  # the last vector_changes row folded into the index


class SqliteVectors:
    """The ANN indexes of one store, and the lookup that chooses between them and exact."""

    def __init__(self, min_vectors: int | None = None) -> None:
        self.min_vectors = INDEX_MIN_VECTORS if min_vectors is None else min_vectors
        self._scopes: dict[_ScopeKey, _Scope] = {}
        self._building: set[_ScopeKey] = set()  # being built, or failed to build: exact
        self._builders: list[threading.Thread] = []
        self._closed = False
        self._lock = threading.Lock()  # an index is not safe to search while it changes

    def nearest(
        self,
        db: sqlite3.Connection,
        scope: VectorScope,
        queries: Matrix,
        k: int,
        uncommitted: bool,
    ) -> list[list[Neighbour]]:
        """For each row of `queries`, the `k` nearest facts of the scope.

        `db` is in a transaction, all reads happen in it; `uncommitted` says whether that
        transaction has written anything yet.
        """
        key = (scope, queries.shape[1])
        with self._lock:
            known = self._scopes.get(key)
            if known is not None:
                return self._search(db, key, known, queries, k, uncommitted)
            build = key not in self._building and not uncommitted
        found = db.execute(QUERIES[scope.queries[0]], scope.params()).fetchall()
        usable = [r for r in found if r["dim"] == key[1]]
        if not usable:
            return [[] for _ in range(queries.shape[0])]
        ids = [rows.unpack_id(r["fact_id"]) for r in usable]
        matrix = np.stack([rows.from_blob(r["vector"]) for r in usable])
        if build and len(usable) >= self.min_vectors:
            self._start_build(key, ids, matrix, _latest_change(db))
        return exact_nearest(ids, matrix, queries, k)

    def wait_for_builds(self) -> None:
        """Return once every index being built is ready (for tests and benchmarks)."""
        with self._lock:
            builders = list(self._builders)
        for builder in builders:
            builder.join()

    def close(self) -> None:
        """Drop every index; a build still running is discarded when it ends."""
        with self._lock:
            self._closed = True
            self._scopes.clear()

    def _start_build(self, key: _ScopeKey, ids: list[str], matrix: Matrix, seq: int) -> None:
        """Index the vectors read at change `seq`; lookups catch up from there once it is in."""
        with self._lock:
            if key in self._building or key in self._scopes:
                return
            self._building.add(key)
            builder = threading.Thread(
                target=self._build, args=(key, ids, matrix, seq), name="distill-ann", daemon=True
            )
            self._builders = [b for b in self._builders if b.is_alive()] + [builder]
        builder.start()

    def _build(self, key: _ScopeKey, ids: list[str], matrix: Matrix, seq: int) -> None:
        try:
            index = AnnIndex(key[1])
            index.add(ids, matrix)
        except Exception:  # the lookups stay exact, and correct
            log.exception("could not build the vector index of %s", key[0])
            return
        with self._lock:
            self._building.discard(key)
            if not self._closed:
                self._scopes[key] = _Scope(index, seq)

    def _search(
        self,
        db: sqlite3.Connection,
        key: _ScopeKey,
        scope: _Scope,
        queries: Matrix,
        k: int,
        uncommitted: bool,
    ) -> list[list[Neighbour]]:
        latest = _latest_change(db)
        if latest <= scope.seq:  # nothing new, or this transaction began before the index's
            return scope.index.nearest(queries, k)
        changed = _changed_vectors(db, key, scope.seq)
        if uncommitted:
            return scope.index.nearest(queries, k, overlay=changed)
        scope.index.remove([fact_id for fact_id, v in changed.items() if v is None])
        live = {fact_id: v for fact_id, v in sorted(changed.items()) if v is not None}
        if live:
            scope.index.add(list(live), np.stack(list(live.values())))
        scope.seq = latest
        return scope.index.nearest(queries, k)


def _latest_change(db: sqlite3.Connection) -> int:
    return int(db.execute(QUERIES["latest_vector_change"]).fetchone()["seq"])


def _changed_vectors(
    db: sqlite3.Connection, key: _ScopeKey, after: int
) -> dict[str, Matrix | None]:
    """The facts of the scope logged after `after`: their vector if the scope searches them
    now, else None."""
    scope, dim = key
    params = {**scope.params(), "dim": dim, "after": after}
    changed: dict[str, Matrix | None] = {}
    for r in db.execute(QUERIES[scope.queries[1]], params):
        fact_id = rows.unpack_id(r["fact_id"])
        changed[fact_id] = rows.from_blob(r["vector"]) if r["live"] else None
    return changed
