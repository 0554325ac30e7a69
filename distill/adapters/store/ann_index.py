"""An approximate nearest-neighbour index over identity vectors, answered exactly.

An HNSW graph (voyager, Spotify's build of hnswlib: a 0.3 MB wheel with no dependencies)
proposes candidates; their stored vectors are then scored with `exact_nearest`, the same
function exact search uses, so a result is exactly the exact-search result whenever the true
neighbours are among the candidates: same ids, same distances, ties broken by id. The graph
only decides which vectors get scored.

The index is built single-threaded with a fixed seed, so the same insertions give the same
graph and the same answers. Vectors are L2-normalised, so inner product ranks as cosine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from voyager import Index, Space, StorageDataType

from distill.adapters.store.vector_search import exact_nearest, overlay_rows
from distill.ports import Neighbour

Matrix = npt.NDArray[np.float32]

# Graph shape: links per node and the breadth of the search while inserting. With these the
# index returned the true nearest of every near-copy query of bench/lookup.py (random 384-dim
# vectors, 2k to 100k); wider only slows the build, the cost that already dominates.
GRAPH_LINKS = 16
BUILD_BREADTH = 100
# Candidates scored exactly per query: this many per wanted neighbour, and at least
# MIN_CANDIDATES; the breadth of the graph search is at least SEARCH_BREADTH.
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 32
SEARCH_BREADTH = 128
SEED = 1


class AnnIndex:
    """Fact ids and their vectors of one dimension, searchable approximately.

    Removal only hides a node (HNSW cannot unlink it cheaply); once hidden nodes outnumber
    the visible ones the graph is rebuilt from the visible vectors.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._graph = self._new_graph()
        self._labels: dict[str, int] = {}  # fact id -> graph label, visible nodes only
        self._ids: dict[int, str] = {}  # graph label -> fact id, visible nodes only
        self._next_label = 0
        self._hidden = 0

    def __len__(self) -> int:
        return len(self._labels)

    def __contains__(self, fact_id: object) -> bool:
        return fact_id in self._labels

    def add(self, ids: Sequence[str], matrix: Matrix) -> None:
        """Index these facts' vectors; facts already indexed keep the vector they have."""
        fresh = [i for i, fact_id in enumerate(ids) if fact_id not in self._labels]
        if not fresh:
            return
        labels = np.arange(self._next_label, self._next_label + len(fresh), dtype=np.uint64)
        self._next_label += len(fresh)
        rows = np.ascontiguousarray(np.asarray(matrix, dtype=np.float32)[fresh])
        self._graph.add_items(rows, ids=labels.tolist(), num_threads=1)
        for i, label in zip(fresh, labels.tolist(), strict=True):
            self._labels[ids[i]] = label
            self._ids[label] = ids[i]

    def remove(self, ids: Sequence[str]) -> None:
        """Stop returning these facts (ids not indexed are ignored)."""
        for fact_id in ids:
            label = self._labels.pop(fact_id, None)
            if label is None:
                continue
            del self._ids[label]
            self._graph.mark_deleted(label)
            self._hidden += 1
        if self._hidden > len(self._labels):
            self._rebuild()

    def nearest(
        self, queries: Matrix, k: int, overlay: Mapping[str, Matrix | None] | None = None
    ) -> list[list[Neighbour]]:
        """For each query, the `k` nearest indexed facts, nearest first, ties by id.

        `overlay` overrides the index for the facts it names without changing it: a vector
        makes a fact searched (exactly), None hides it. A transaction that has not committed
        yet searches its own writes this way.
        """
        overlay = overlay or {}
        extra_ids, extra = overlay_rows(overlay, self.dim)
        results: list[list[Neighbour]] = []
        for query in np.atleast_2d(np.asarray(queries, dtype=np.float32)):
            found = self._candidates(query, k, hidden=overlay)
            matrix = np.concatenate([self._vectors(found), extra])
            results.append(exact_nearest(found + extra_ids, matrix, query[None, :], k)[0])
        return results

    def _candidates(self, query: Matrix, k: int, hidden: Mapping[str, object]) -> list[str]:
        """At least `k` graph candidates not in `hidden` (or every one there is)."""
        count = max(k * CANDIDATES_PER_RESULT, MIN_CANDIDATES)
        while count < len(self):
            labels, _ = self._graph.query(
                query, k=count, num_threads=1, query_ef=max(SEARCH_BREADTH, count)
            )
            kept = [self._ids[int(label)] for label in labels]
            kept = [fact_id for fact_id in kept if fact_id not in hidden]
            if len(kept) >= k:
                return kept
            count *= 2  # the overlay hid too many: look further
        return [fact_id for fact_id in self._labels if fact_id not in hidden]  # all of them

    def _vectors(self, ids: Sequence[str]) -> Matrix:
        if not ids:
            return self._empty()
        labels = [self._labels[fact_id] for fact_id in ids]
        return np.asarray(self._graph.get_vectors(labels), dtype=np.float32)

    def _rebuild(self) -> None:
        ids = sorted(self._labels)
        matrix = self._vectors(ids)
        self._graph = self._new_graph()
        self._labels, self._ids, self._next_label, self._hidden = {}, {}, 0, 0
        self.add(ids, matrix)

    def _new_graph(self) -> Index:
        return Index(
            Space.InnerProduct,
            num_dimensions=self.dim,
            M=GRAPH_LINKS,
            ef_construction=BUILD_BREADTH,
            random_seed=SEED,
            storage_data_type=StorageDataType.Float32,
        )

    def _empty(self) -> Matrix:
        return np.empty((0, self.dim), dtype=np.float32)
