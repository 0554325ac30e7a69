"""bench/consolidate.py at a tiny N with the hashing embedder: the JSON that bench/report.py
collects and the table a person reads. Timings are not checked (they are the bench's
business), the counts are: they follow from the events the bench generates."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from distill.core.identity import identity_text

BENCH = Path(__file__).resolve().parents[2] / "bench" / "consolidate.py"
N = 200  # two subjects: one job each


def bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_consolidate", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_bench(*args: str) -> str:
    command = [sys.executable, str(BENCH), "--n", str(N), "--embedder", "hashing", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def test_json_has_a_row_per_size_and_a_summary_row_per_size() -> None:
    events = bench_module().make_events(N)
    texts = {e["text"] for e in events}
    texts |= {identity_text(c["predicate"], c["value"]) for e in events for c in e["claims"]}

    result = json.loads(run_bench("--repeat", "1", "--json"))

    assert result["target_ratio"] == {str(N): 1.25}  # 1.15 is for N = 10,000 only
    [row] = result["rows"]
    assert row["n"] == N
    assert row["embedder"].startswith("hashing")
    assert row["texts_embedded"] == len(texts)
    counters = dict(row["counters"])
    assert counters.pop("jobs_done") == N // 100
    assert sum(counters.values()) == N  # every claim got exactly one outcome
    assert row["ratios"] == [row["ratio"]]
    assert row["peak_rss_mb"] > 0 and row["ms_per_event"] > 0
    # CPU time: the whole process's on both sides, and the deciding thread's, a part of it.
    cpu_ratio = row["consolidate_cpu_s"] / row["embed_cpu_s"]  # of rounded figures: about
    assert row["cpu_ratio"] == pytest.approx(cpu_ratio, rel=0.1)
    assert row["cpu_ratios"] == [row["cpu_ratio"]]
    deciding_s = row["deciding_cpu_ms_per_event"] * N / 1000
    assert 0 < deciding_s <= row["consolidate_cpu_s"] + 0.001
    [summary] = result["summary"]
    assert summary["value"] == row["ratio"]
    assert summary["met"] == (row["ratio"] <= 1.25)


def test_table_and_plot(tmp_path: Path) -> None:
    plot = tmp_path / "consolidate.png"

    out = run_bench("--repeat", "1", "--plot", str(plot))

    assert "consolidation ÷ embedding of the same texts (hashing embedder)" in out
    assert "ratio (median)" in out and "peak RSS MB" in out
    assert "cpu ratio" in out and "deciding ms/event" in out
    assert f"{N:,}" in out.split("┡", 1)[1]  # N is in the table's body
    if plot.exists():  # matplotlib installed (the bench extra)
        assert plot.read_bytes().startswith(b"\x89PNG")
        assert f"plot: {plot}" in out
    else:
        assert "pip install -e '.[bench]'" in out
