"""bench/vector_log.py at a tiny N: both reads see every one of the N changes and vectors (the
bench asserts it), and the JSON and the table carry the figures. Timings are not checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "vector_log.py"


def run_bench(*args: str) -> str:
    command = [sys.executable, str(BENCH), "--n", "1500", "--repeat", "1", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def test_json_reports_both_reads_of_n_and_their_ratio() -> None:
    result = json.loads(run_bench("--json"))
    assert result["n"] == 1500
    assert result["catch_up_ms"] > 0 and result["rebuild_read_ms"] > 0
    ratio = result["catch_up_ms"] / result["rebuild_read_ms"]
    assert abs(result["ratio"] - ratio) <= 0.01 * ratio + 0.01  # of rounded figures


def test_the_table_names_the_sizes() -> None:
    out = run_bench()
    assert "Catching up 1,500 changes against reading 1,500 vectors" in out
    assert "catch up ÷ rebuild" in out
