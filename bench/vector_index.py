"""The two in-memory vector indexes side by side: exact (`FlatIndex`) and HNSW (`AnnIndex`).

    python bench/vector_index.py                       # 5k, 10k, 20k, 50k vectors; k 5 and 50
    python bench/vector_index.py --sizes 10000 --queries 100

For each size N, N random unit vectors of 384 dimensions (the default embedder's) go into
both indexes; then one query per call, half of them stored vectors moved a little (a fact
asked about in other words), half random (nothing close), k = 5 (identity matching's depth)
and k = 50 (search's vector arm). Reported: p50/p95 milliseconds a lookup, the share of the
true k nearest the graph returned (the flat index returns all of them by construction), the
flat index's p50 over the graph's (the ratio `flat_index.FLAT_MAX_VECTORS` is set from: below
it, exact is no slower), and the graph's build time. Random vectors are the hardest case for
a graph: real embeddings have structure, and its recall on them is higher.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from distill.adapters.store.ann_index import AnnIndex
from distill.adapters.store.flat_index import FlatIndex

DIM = 384


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    normed: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normed


def timed(index: Any, queries: np.ndarray, k: int) -> tuple[list[float], list[set[str]]]:
    ms, found = [], []
    for q in queries:
        started = time.perf_counter()
        hood = index.nearest(q[None, :], k)[0]
        ms.append((time.perf_counter() - started) * 1000)
        found.append({n.fact_id for n in hood})
    return ms, found


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def measure(n: int, queries: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    matrix = unit_rows(rng, n)
    ids = [f"f{i:07d}" for i in range(n)]
    flat = FlatIndex(DIM)
    flat.add(ids, matrix)
    started = time.perf_counter()
    graph = AnnIndex(DIM)
    graph.add(ids, matrix)
    build_s = time.perf_counter() - started
    moved = matrix[rng.integers(0, n, queries // 2)] + 0.05 * unit_rows(rng, queries // 2)
    asked = np.vstack(
        [
            moved / np.linalg.norm(moved, axis=1, keepdims=True),
            unit_rows(rng, queries - queries // 2),
        ]
    )
    out = []
    for k in (5, 50):
        timed(flat, asked[:10], k), timed(graph, asked[:10], k)  # warm
        flat_ms, truth = timed(flat, asked, k)
        graph_ms, got = timed(graph, asked, k)
        recall = statistics.fmean(len(g & t) / len(t) for g, t in zip(got, truth, strict=True))
        flat_p50, graph_p50 = statistics.median(flat_ms), statistics.median(graph_ms)
        out.append(
            {
                "vectors": n,
                "k": k,
                "flat_p50_ms": round(flat_p50, 3),
                "flat_p95_ms": round(p95(flat_ms), 3),
                "graph_p50_ms": round(graph_p50, 3),
                "graph_p95_ms": round(p95(graph_ms), 3),
                "flat_over_graph_p50": round(
                    statistics.median(flat_ms) / statistics.median(graph_ms), 2
                ),
                "graph_recall": round(recall, 3),
                "graph_build_s": round(build_s, 1),
            }
        )
    return out


@click.command()
@click.option("--sizes", default="5000,10000,20000,50000", show_default=True)
@click.option("--queries", default=200, show_default=True)
@click.option("--seed", default=7, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def main(sizes: str, queries: int, seed: int, as_json: bool) -> None:
    """Exact and HNSW in-memory lookups, timed side by side."""
    rows = [row for n in (int(s) for s in sizes.split(",")) for row in measure(n, queries, seed)]
    if as_json:
        print(json.dumps({"machine": platform.machine(), "rows": rows}, indent=2))
        return
    table = Table(title=f"in-memory vector lookups, one query a call ({platform.machine()})")
    for name in rows[0]:
        table.add_column(name.replace("_", " "), justify="right")
    for row in rows:
        table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in row.values()))
    Console().print(table)


if __name__ == "__main__":
    main()
