"""Nearest-neighbour search over identity vectors.

Exact search with numpy: vectors are L2-normalised, so cosine distance is ``1 - dot``. The
SQLite store uses it for small subjects, and to score the candidates its ANN index proposes
for large ones (`ann_index`, `sqlite_vectors`), so both give the same distances and ties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from distill.errors import EmbeddingMismatch
from distill.ports import Neighbour


def exact_nearest(
    ids: Sequence[str],
    matrix: npt.NDArray[np.float32],
    queries: npt.NDArray[np.float32],
    k: int,
) -> list[list[Neighbour]]:
    """For each row of `queries`, up to `k` of `ids` nearest first, ties broken by id.

    `matrix` holds one L2-normalised row per id; `queries` is (m, dim). Rows of another size
    come from another model: comparing them is refused, not broadcast or truncated.
    """
    if k <= 0 or not ids:
        return [[] for _ in range(len(queries))]
    if matrix.ndim != 2 or queries.ndim != 2 or matrix.shape[1] != queries.shape[1]:
        raise EmbeddingMismatch(
            f"cannot compare query vectors of shape {queries.shape} with stored vectors of "
            f"shape {matrix.shape}: they come from two embedding models. Search with the "
            "embedder the facts were stored with"
        )
    distances = 1.0 - queries.astype(np.float32) @ matrix.astype(np.float32).T
    id_rank = np.argsort(np.argsort(np.asarray(ids, dtype=object), kind="stable"), kind="stable")
    results: list[list[Neighbour]] = []
    for row in distances:
        # lexsort sorts by the last key first: distance, then the id's rank.
        order = np.lexsort((id_rank, row))[:k]
        results.append([Neighbour(ids[i], float(row[i])) for i in order])
    return results


def overlay_rows(
    overlay: Mapping[str, npt.NDArray[np.float32] | None], dim: int
) -> tuple[list[str], npt.NDArray[np.float32]]:
    """The facts an index's overlay adds (those given a vector), sorted by id, and their
    vectors as one matrix: a transaction's uncommitted writes, searched beside the index."""
    ids = sorted(i for i, v in overlay.items() if v is not None)
    if not ids:
        return [], np.empty((0, dim), dtype=np.float32)
    return ids, np.stack([np.asarray(overlay[i], dtype=np.float32) for i in ids])
