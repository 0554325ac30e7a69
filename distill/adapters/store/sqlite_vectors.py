"""Nearest active state facts of a subject, for `SqliteStore`: exact below a size, ANN above.

A subject with fewer than `INDEX_MIN_VECTORS` active identity vectors of one embedder is
searched exactly, as it always was: its rows are read and scored with numpy. The first lookup
that reads at least that many builds an `AnnIndex` of them, kept in memory per
(project, subject, model, dimension) for the life of the store.

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

import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.adapters.store import sqlite_rows as rows
from distill.adapters.store.ann_index import AnnIndex
from distill.adapters.store.queries import load_queries
from distill.adapters.store.vector_search import exact_nearest
from distill.ports import Neighbour

QUERIES = load_queries("sqlite")

# Active vectors of one subject from which an ANN index replaces exact search. Exact search
# reads every vector of the subject from SQLite per lookup: ~N µs?; the index answers in
# about a millisecond whatever the size (measured by bench/lookup.py).
INDEX_MIN_VECTORS = 5_000

Matrix = npt.NDArray[np.float32]
_ScopeKey = tuple[str, str, str, int]  # project, subject, model id, dimension


@dataclass
class _Scope:
    index: AnnIndex
    seq: int  # the last vector_changes row folded into the index


class SqliteVectors:
    """The ANN indexes of one store, and the lookup that chooses between them and exact."""

    def __init__(self, min_vectors: int | None = None) -> None:
        self.min_vectors = INDEX_MIN_VECTORS if min_vectors is None else min_vectors
        self._scopes: dict[_ScopeKey, _Scope] = {}
        self._lock = threading.Lock()  # an index is not safe to search while it changes

    def nearest(
        self,
        db: sqlite3.Connection,
        scope: tuple[str, str, str],
        queries: Matrix,
        k: int,
        uncommitted: bool,
    ) -> list[list[Neighbour]]:
        """For each row of `queries`, the `k` nearest active state facts of the subject.

        `scope` is (project, subject, model id); `db` is in a transaction, all reads happen
        in it; `uncommitted` says whether that transaction has written anything yet.
        """
        project, subject, model_id = scope
        key = (project, subject, model_id, queries.shape[1])
        with self._lock:
            known = self._scopes.get(key)
            if known is not None:
                return self._search(db, key, known, queries, k, uncommitted)
        params = {"project": project, "subject": subject, "model_id": model_id}
        found = db.execute(QUERIES["active_state_vectors"], params).fetchall()
        usable = [r for r in found if r["dim"] == key[3]]
        if not usable:
            return [[] for _ in range(queries.shape[0])]
        ids = [r["fact_id"] for r in usable]
        matrix = np.stack([rows.from_blob(r["vector"]) for r in usable])
        if len(usable) >= self.min_vectors and not uncommitted:
            self._build(db, key, ids, matrix)
        return exact_nearest(ids, matrix, queries, k)

    def close(self) -> None:
        """Drop every index (they are caches; the next lookup rebuilds what it needs)."""
        with self._lock:
            self._scopes.clear()

    def _build(
        self, db: sqlite3.Connection, key: _ScopeKey, ids: list[str], matrix: Matrix
    ) -> None:
        seq = _latest_change(db)
        index = AnnIndex(key[3])
        index.add(ids, matrix)
        with self._lock:
            self._scopes.setdefault(key, _Scope(index, seq))

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
        live = sorted(fact_id for fact_id, v in changed.items() if v is not None)
        if live:
            scope.index.add(live, np.stack([changed[fact_id] for fact_id in live]))
        scope.seq = latest
        return scope.index.nearest(queries, k)


def _latest_change(db: sqlite3.Connection) -> int:
    return int(db.execute(QUERIES["latest_vector_change"]).fetchone()["seq"])


def _changed_vectors(db: sqlite3.Connection, key: _ScopeKey, after: int) -> dict[str, Any]:
    """The facts of the scope logged after `after`: their vector if they are active state
    facts now, else None."""
    project, subject, model_id, dim = key
    params = {"project": project, "subject": subject, "model_id": model_id, "dim": dim}
    changed: dict[str, Matrix | None] = {}
    for r in db.execute(QUERIES["changed_vectors"], {**params, "after": after}):
        changed[r["fact_id"]] = rows.from_blob(r["vector"]) if r["live"] else None
    return changed
