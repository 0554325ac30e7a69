"""bench/llm_drift.py, small, with the hashing embedder: a model renaming attributes in half
its answers, over real HTTP, with and without naming the fact it updates. The bench's own
target is the assertion: no stale value is ever served as current and unflagged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "llm_drift.py"


def test_a_renaming_model_leaves_no_stale_value_served_unflagged() -> None:
    command = [
        sys.executable, str(BENCH), "--subjects", "3", "--drift", "0.5", "--embedder", "hashing",
        "--json",
    ]  # fmt: skip
    out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=300).stdout
    rows = json.loads(out)["rows"]

    assert [(r["drift"], r["updates"]) for r in rows] == [(0.5, False), (0.5, True)]
    for row in rows:
        assert row["events"] == 3 * 5 * 6
        assert row["stale_unflagged"] == 0, row
        assert row["served"] == row["attributes"] + row["stale_contested"], row
