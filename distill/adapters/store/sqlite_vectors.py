"""Nearest facts by vector, for `SqliteStore`: exact below a size, ANN above.

Two sets of vectors are searched this way, each named by a `VectorScope`: the identity
vectors of a subject's active state facts (identity matching, during consolidation), and the
recall vectors of the active facts of any kind of a subject or of a whole project (the vector
arm of `Memory.search`).

A scope with fewer than `vector_cache.INDEX_MIN_VECTORS` live vectors of one embedder is
searched exactly: its rows are read and scored with numpy. The first lookup that reads at
least that many starts building an index of them in a background thread (at 100k vectors
that takes minutes, and the lookup may hold SQLite's write lock); lookups stay exact until it
is ready. How an index stays current with what other processes write: `vector_cache`.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np

from distill.adapters.store import rows
from distill.adapters.store.queries import load_queries
from distill.adapters.store.vector_cache import (
    Changes,
    Matrix,
    ScopeKey,
    VectorCache,
    VectorScope,
)
from distill.adapters.store.vector_search import exact_nearest
from distill.ports import Neighbour

QUERIES = load_queries("sqlite")


def nearest(
    cache: VectorCache,
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
    found = cache.lookup(key, queries, k, lambda mark: _changes_since(db, key, mark), uncommitted)
    if found is not None:
        return found
    mark, _ = _latest_change(db)
    found_rows = db.execute(QUERIES[scope.queries[0]], _params(scope))
    usable = [r for r in found_rows if r["dim"] == key[1]]
    if not usable:
        return [[] for _ in range(queries.shape[0])]
    ids = [rows.unpack_id(r["fact_id"]) for r in usable]
    matrix = np.stack([rows.from_blob(r["vector"]) for r in usable])
    if len(usable) >= cache.min_vectors and not uncommitted and cache.wanted(key):
        cache.start_build(key, lambda: (ids, matrix, mark))
    return exact_nearest(ids, matrix, queries, k)


def _params(scope: VectorScope) -> dict[str, object]:
    kinds = json.dumps(list(scope.kinds)) if scope.kinds is not None else None
    return {
        "project": scope.project,
        "subject": scope.subject,
        "model_id": scope.model_id,
        "kinds": kinds,
    }


def _latest_change(db: sqlite3.Connection) -> tuple[int, int]:
    """The newest change logged, and the newest pruned from the log."""
    found = db.execute(QUERIES["latest_vector_change"]).fetchone()
    return int(found["seq"]), int(found["pruned"])


def _changes_since(db: sqlite3.Connection, key: ScopeKey, after: int) -> tuple[Changes | None, int]:
    """The facts of the scope logged after `after` (their vector if the scope searches them
    now, else None), and the last change logged; None for the facts when the log was pruned
    past `after` (the index is built again)."""
    latest, pruned = _latest_change(db)
    if pruned > after:
        return None, latest
    if latest <= after:  # nothing new, or this transaction began before the index's
        return {}, after
    scope, dim = key
    params = {**_params(scope), "dim": dim, "after": after}
    changed: dict[str, Matrix | None] = {}
    for r in db.execute(QUERIES[scope.queries[1]], params):
        fact_id = rows.unpack_id(r["fact_id"])
        changed[fact_id] = rows.from_blob(r["vector"]) if r["live"] else None
    return changed, latest
