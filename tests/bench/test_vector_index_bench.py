"""bench/vector_index.py at a tiny size: a row per size and k, the flat index and the graph
both timed, the graph's recall a share. Timings are not checked, only that they were taken."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "vector_index.py"


def test_a_row_per_size_and_depth_with_both_indexes_timed() -> None:
    command = [sys.executable, str(BENCH), "--sizes", "300,600", "--queries", "20", "--json"]
    out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    assert [(r["vectors"], r["k"]) for r in out["rows"]] == [
        (300, 5),
        (300, 50),
        (600, 5),
        (600, 50),
    ]
    for row in out["rows"]:
        assert row["flat_p50_ms"] > 0 and row["graph_p50_ms"] > 0
        assert 0.0 < row["graph_recall"] <= 1.0
        assert row["flat_over_graph_p50"] > 0


def test_the_table_names_every_column() -> None:
    command = [sys.executable, str(BENCH), "--sizes", "300", "--queries", "20"]
    table = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    assert "in-memory vector lookups" in table and "300" in table
