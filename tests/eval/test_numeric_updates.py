"""The `numeric-updates` suite on a slice written here in population_timelines.json's
format (issue 5): shuffled population figures must end as one current value, closed
history, no loss and no stale value served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distill.eval import EvalContext, run_suite
from distill.eval.numeric_updates import runs

SERIES = [
    {"subject": "Q1", "relation": "P1082 population",
     "values": [{"year": 1990, "value": 100}, {"year": 2000, "value": 120},
                {"year": 2010, "value": 120}, {"year": 2020, "value": 90}]},
    {"subject": "Q2", "relation": "P1082 population",
     "values": [{"year": 1962, "value": 143}, {"year": 1999, "value": 82}]},
]  # fmt: skip


def write_slice(root: Path) -> Path:
    folder = root / "wikidata_temporal"
    folder.mkdir(parents=True)
    (folder / "population_timelines.json").write_text(
        json.dumps({"source": "written by the test", "timelines": SERIES})
    )
    return root


def test_runs_fold_consecutive_repeats() -> None:
    """120 in 2000 and again in 2010 is one run that ends when 90 starts."""
    assert runs(SERIES[0]["values"]) == [(100, 1990, 2000), (120, 2000, 2020), (90, 2020, None)]


def test_shuffled_series_end_right_with_nothing_lost_or_leaked(tmp_path: Path) -> None:
    """Every target of the suite holds on this slice for several arrival orders."""
    for seed in range(4):
        result = run_suite(
            "numeric-updates", EvalContext(write_slice(tmp_path / str(seed)), seed=seed,
                                           embedder="hashing")
        )  # fmt: skip
        got = {m.name: m.value for m in result.metrics}
        assert got["final value correct"] == 1.0
        assert got["older values closed at the next value's start"] == 1.0
        assert got["values lost"] == 0
        assert got["same-value repeats stored as extra versions"] == 0
        assert got["stale values served by facts()"] == 0
        assert got["facts(as_of) gives that year's value"] == 1.0
        assert result.params["values"] == 6
        assert not result.targets_missed


@pytest.mark.slow
def test_full_data_meets_every_target() -> None:
    """All of population_timelines.json (hashing embedder): every target of the suite."""
    from distill.eval import default_data_dir

    data = default_data_dir()
    if not (data / "wikidata_temporal" / "population_timelines.json").exists():
        pytest.skip("Wikidata data not found")
    result = run_suite("numeric-updates", EvalContext(data, embedder="hashing"))
    assert not result.targets_missed
    assert result.params == {"entities": 1038, "values": 3731, "limit": None, "seed": 0}
