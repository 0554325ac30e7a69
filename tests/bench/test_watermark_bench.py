"""bench/watermark.py at a small size: the second cycle over unchanged memory asks nothing and
writes nothing, and a changed text is asked about alone (the checks the bench exits on)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "watermark.py"


def test_the_second_cycle_is_free_and_an_edit_costs_one_call() -> None:
    spec = importlib.util.spec_from_file_location("bench_watermark", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    result = bench.run(subjects=2, memories=35)

    assert sum(result["first"]["calls"].values()) > 0
    assert result["second"]["calls"] == {"judge": 0, "summarise": 0, "promote_rules": 0}
    assert result["second"]["audit_entries"] == 0 and result["second"]["marks_changed"] == 0
    assert result["third"]["asked"]["judge"] == [result["third"]["edited"]]
    assert all(result["ok"].values())
