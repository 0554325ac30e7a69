"""bench/storage.py at a tiny N with the hashing embedder: every b-tree of the file is
measured and attributed to its table, the figures add up, and the verdict follows from them.
The sizes themselves are the bench's business; only their bookkeeping is checked."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "storage.py"
N = 300  # three subjects: one job each


def bench_module() -> ModuleType:
    sys.path.insert(0, str(BENCH.parent))  # the bench imports its sibling, consolidate.py
    try:
        spec = importlib.util.spec_from_file_location("bench_storage", BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH.parent))
    return module


def run_bench(*args: str) -> str:
    command = [sys.executable, str(BENCH), "--n", str(N), "--embedder", "hashing", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("mix", ["claims", "chat", "mixed"])
def test_every_mix_is_n_events_of_its_kind(mix: str) -> None:
    events = list(bench_module().iter_mix(mix, N))

    assert len(events) == N
    with_claims = sum(1 for e in events if e.get("claims"))
    expected = {"claims": (N, N), "chat": (0, 0), "mixed": (N // 4, 3 * N // 4)}[mix]
    assert expected[0] <= with_claims <= expected[1]
    assert all(e["text"] for e in events)


def test_json_attributes_every_btree_to_its_table_and_the_bytes_add_up(tmp_path: Path) -> None:
    kept = tmp_path / "kept.db"

    result = json.loads(run_bench("--json", "--keep", str(kept)))

    assert result["n"] == N and result["mix"] == "claims"
    assert result["embedder"].startswith("hashing")
    assert result["counters"]["jobs_done"] == N // 100
    tables = {t["table"]: t for t in result["tables"]}
    assert {"events", "facts", "audit", "observations", "fact_vectors"} <= set(tables)
    assert "sqlite_autoindex_events_1" in {b["btree"] for b in tables["events"]["btrees"]}
    for table in tables.values():
        assert table["bytes"] == sum(b["bytes"] for b in table["btrees"])
        assert table["per_event"] == round(table["bytes"] / N, 1)
    used = sum(t["bytes"] for t in tables.values())
    assert used + result["free_bytes"] == result["file_bytes"] == kept.stat().st_size
    assert result["bytes_per_event"] == round(result["file_bytes"] / N, 1)
    assert result["ratio_to_text"] == round(result["file_bytes"] / result["text_bytes"], 1)
    assert result["met"] == (result["bytes_per_event"] <= 2400)
    assert [row["met"] for row in result["summary"]] == [result["met"]] * 2


def test_table_names_the_tables_the_file_and_the_verdict() -> None:
    out = run_bench("--mix", "chat")

    assert f"{N:,} chat events" in out
    body = out.split("┡", 1)[1]
    assert "audit" in body and "sqlite_autoindex_audit_1" in body and "file" in body
    assert "target ≤ 2,400 B/event (≤ 120 MB at 50,000)" in out
