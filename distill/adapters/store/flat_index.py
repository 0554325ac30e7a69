"""An exact in-memory index: every vector of a scope in one matrix, scored by one product.

Below some ten thousand vectors, scoring them all is as fast as walking an HNSW graph
(`ann_index`) and is exact: one matrix-vector product over a contiguous float32 matrix reads
15 MB at 10,000 vectors of 384 dimensions. What it saves against the graph is the graph's
own costs: a breadth of candidates to walk, their vectors copied out, and answers that miss
a share of the true neighbours when many vectors sit at nearly the same distance (random
vectors: the graph found 73% of the true 50 nearest at 10,000, bench/vector_index.py; exact
search finds them all). Its product runs on one thread (see `_candidates`). `vector_cache`
uses it for scopes below `FLAT_MAX_VECTORS` and moves a scope that outgrows it to the graph.

The answers are `exact_nearest`'s over the live vectors: the same ids, distances and ties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from distill.adapters.store.vector_search import exact_nearest, overlay_rows
from distill.ports import Neighbour

Matrix = npt.NDArray[np.float32]

# Vectors from which a scope is searched through the HNSW graph instead. Flat over graph, p50
# a lookup, 384-dim vectors, 2 cores, back to back (bench/vector_index.py; BENCHMARKS.md,
# "Search's vector arm in memory"): 0.83 (k = 5) and 0.41 (k = 50) at 5,000; 0.99 and 0.58 at
# 10,000; 1.16 and 0.61 at 15,000; 1.63 and 0.79 at 20,000. Up to here the flat index is as
# fast for identity matching (k = 5) within 0.15 ms, faster for search (k = 50), and exact
# where the graph found 62-87% of the true neighbours of random vectors.
FLAT_MAX_VECTORS = 16_000


class FlatIndex:
    """Fact ids and their vectors of one dimension, searched exactly.

    A removed fact's row stays in the matrix, masked, until removed rows outnumber live ones;
    then the matrix is compacted.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix = np.empty((64, dim), dtype=np.float32)  # rows in use: `_used`
        self._used = 0
        self._dead = np.zeros(64, dtype=bool)
        self._ids: list[str] = []  # row -> fact id (a removed row keeps its old id, masked)
        self._rows: dict[str, int] = {}  # fact id -> row, live rows only

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, fact_id: object) -> bool:
        return fact_id in self._rows

    def items(self) -> tuple[list[str], Matrix]:
        """The live ids and their vectors (a copy), in row order."""
        return list(self._rows), self._matrix[list(self._rows.values())]

    def add(self, ids: Sequence[str], matrix: Matrix) -> None:
        """Index these facts' vectors; facts already indexed keep the vector they have."""
        fresh = [i for i, fact_id in enumerate(ids) if fact_id not in self._rows]
        if not fresh:
            return
        rows = np.asarray(matrix, dtype=np.float32)[fresh]
        end = self._used + len(fresh)
        if end > len(self._matrix):
            capacity = max(end, 2 * len(self._matrix))
            grown = np.empty((capacity, self.dim), dtype=np.float32)
            grown[: self._used] = self._matrix[: self._used]
            dead = np.zeros(capacity, dtype=bool)
            dead[: self._used] = self._dead[: self._used]
            self._matrix, self._dead = grown, dead
        self._matrix[self._used : end] = rows
        for offset, i in enumerate(fresh):
            self._rows[ids[i]] = self._used + offset
            self._ids.append(ids[i])
        self._used = end

    def remove(self, ids: Sequence[str]) -> None:
        """Stop returning these facts (ids not indexed are ignored)."""
        for fact_id in ids:
            row = self._rows.pop(fact_id, None)
            if row is not None:
                self._dead[row] = True
        if self._used - len(self._rows) > max(len(self._rows), 64):
            self._compact()

    def nearest(
        self, queries: Matrix, k: int, overlay: Mapping[str, Matrix | None] | None = None
    ) -> list[list[Neighbour]]:
        """For each query, the `k` nearest indexed facts, nearest first, ties by id.

        `overlay` overrides the index for the facts it names without changing it: a vector
        makes a fact searched, None hides it (a transaction's own uncommitted writes).
        """
        overlay = overlay or {}
        masked = self._dead[: self._used].copy()
        for fact_id in overlay:
            row = self._rows.get(fact_id)
            if row is not None:
                masked[row] = True
        extra_ids, extra = overlay_rows(overlay, self.dim)
        live = self._used - int(masked.sum())
        results: list[list[Neighbour]] = []
        for query in np.atleast_2d(np.asarray(queries, dtype=np.float32)):
            rows = self._candidates(query, k, masked, live)
            ids = [self._ids[r] for r in rows] + extra_ids
            matrix = np.concatenate([self._matrix[rows], extra])
            results.append(exact_nearest(ids, matrix, query[None, :], k)[0])
        return results

    def _candidates(
        self, query: Matrix, k: int, masked: npt.NDArray[np.bool_], live: int
    ) -> npt.NDArray[np.intp]:
        """The live rows at most as far as the k-th nearest (ties at the edge included)."""
        if k <= 0 or live == 0:
            return np.empty(0, dtype=np.intp)
        # Not `@`: numpy's BLAS splits a product this size over threads that then spin,
        # taking the cores from a question being embedded beside the next search (2 cores:
        # search p95 with the model 16-25 ms against 12-14 with one BLAS thread); einsum's
        # own loop is one thread and as fast as BLAS on one (0.9 against 1.4 ms at 10,000).
        distances = 1.0 - np.einsum("ij,j->i", self._matrix[: self._used], query)
        distances[masked] = np.inf
        if live <= k:
            return np.flatnonzero(~masked)
        edge = np.partition(distances, k - 1)[k - 1]
        return np.flatnonzero(distances <= edge)

    def _compact(self) -> None:
        ids, matrix = self.items()
        self._matrix, self._used = matrix, len(ids)
        self._dead = np.zeros(len(ids), dtype=bool)
        self._ids = ids
        self._rows = {fact_id: row for row, fact_id in enumerate(ids)}
