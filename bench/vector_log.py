"""What an in-memory vector index pays to catch up from the change log, against rebuilding.

    python bench/vector_log.py                  # 20,000 changes (VECTOR_LOG_KEEP)
    python bench/vector_log.py --n 5000 --json

One subject of a fresh SQLite store gets N facts with a random 384-value vector each (the
default embedder's size), written through `SqliteStore.apply` in plans of 1,000, so that
`vector_changes` logs N changes. Then, in one read transaction, each `--repeat` times:

- `catch up`: the index's read of every change logged after mark 0 (`changed_recall_vectors`,
  a join per fact to its vector), as a lookup makes when it is that far behind;
- `rebuild`: the read a rebuilt index starts from (`active_recall_vectors`, every live vector
  of the scope, and the matrix made of them).

The ratio catch up ÷ rebuild is what sizes `sql_store.VECTOR_LOG_KEEP`: the log keeps as
many changes as an index may fall behind by before reading them costs about what rebuilding a
scope of as many vectors does. (Building an HNSW graph over the vectors comes on top of the
rebuild's read, in the background, while searches are answered exactly.)
"""

from __future__ import annotations

import json
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from distill.adapters.store import sqlite_vectors
from distill.adapters.store.sqlite import SqliteStore
from distill.adapters.store.vector_cache import VectorScope
from distill.core.models import Fact, FactKind, FactStatus, Trust
from distill.core.plan import CreateFact, Plan
from distill.ids import new_id

DIM = 384
PLAN_FACTS = 1_000
MODEL = "bench-model"
PROJECT, SUBJECT = "bench", "user-1"
AT = datetime(2026, 1, 1, tzinfo=UTC)


def fill(store: SqliteStore, n: int, rng: np.random.Generator) -> None:
    for start in range(0, n, PLAN_FACTS):
        count = min(PLAN_FACTS, n - start)
        matrix = rng.standard_normal((count, DIM)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        actions = [
            CreateFact(fact(start + i), "new", vector=v, vector_model=MODEL)
            for i, v in enumerate(matrix)
        ]
        store.apply(Plan(actions=list(actions)), None, [])


def fact(i: int) -> Fact:
    return Fact(
        id=new_id(),
        project=PROJECT,
        subject=SUBJECT,
        kind=FactKind.STATE,
        predicate=f"attribute_{i}",
        value={"n": i},
        text=f"attribute {i}: n={i}",
        identity_key=f"attribute_{i}",
        status=FactStatus.ACTIVE,
        valid_from=AT,
        recorded_at=AT,
        last_reinforced_at=AT,
        trust=Trust.TRUSTED,
    )


def measure(n: int, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "bench.db", ann_min_vectors=10**9)
        try:
            fill(store, n, rng)
            scope = VectorScope(PROJECT, SUBJECT, MODEL, recall=True)
            key = (scope, DIM)
            catch_up, rebuild = [], []
            with store._tx(write=False) as db:
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    changed, _ = sqlite_vectors._changes_since(db, key, 0)
                    catch_up.append(time.perf_counter() - t0)
                    assert changed is not None and len(changed) == n
                    t0 = time.perf_counter()
                    found = db.execute(
                        sqlite_vectors.QUERIES[scope.queries[0]], sqlite_vectors._params(scope)
                    ).fetchall()
                    matrix = np.stack([np.frombuffer(r["vector"], np.float32) for r in found])
                    rebuild.append(time.perf_counter() - t0)
                    assert matrix.shape == (n, DIM)
        finally:
            store.close()
    up, down = statistics.median(catch_up), statistics.median(rebuild)
    return {
        "n": n,
        "catch_up_ms": round(1000 * up, 1),
        "rebuild_read_ms": round(1000 * down, 1),
        "ratio": round(up / down, 3),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
    }


@click.command()
@click.option("--n", default=20_000, show_default=True, help="Changes logged (and vectors).")
@click.option("--repeat", default=3, show_default=True, help="Reads of each; the median shows.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(n: int, repeat: int, as_json: bool) -> None:
    result = measure(n, repeat)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title=f"Catching up {n:,} changes against reading {n:,} vectors (SQLite)")
    for column in ("catch up ms", "rebuild's read ms", "catch up ÷ rebuild"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{result['catch_up_ms']:.1f}", f"{result['rebuild_read_ms']:.1f}", f"{result['ratio']}"
    )
    Console().print(table)
    print(result["machine"])


if __name__ == "__main__":
    main()
