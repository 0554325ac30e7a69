"""bench/soak.py for a few seconds, with a model failing one call in five: the backlog stays
at its bound (plus one event per client), push-back happens, and after the drain every
accepted event is the source of a fact and no fact comes from a refused one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


@pytest.mark.http
def test_a_short_soak_keeps_the_bound_pushes_back_and_loses_nothing() -> None:
    command = [
        sys.executable, str(BENCH), "--seconds", "6", "--rate", "40", "--delay", "0.2",
        "--bound", "30", "--fail-every", "5", "--json",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)

    assert result["pushed_back"] > 0 and 0 < result["push_back_rate"] < 1
    assert result["backlog_peak"] <= 30 + result["clients"]
    assert result["model_failures"] > 0
    assert result["accepted"] == result["events_stored"] == result["facts"] > 0
    assert result["accepted_without_fact"] == result["facts_from_unaccepted"] == 0
    assert result["server_errors_logged"] == 0
