"""The lint, format and type checks the README names, run by the test command CI runs.

They were run by hand only, and drift followed: `bench/` and `scripts/` had gathered 54 mypy
errors between two clean-ups, one of them a name shadowed with another type. Each check
runs the tool the `dev` extra installs, on every Python tree of the repository, with the
settings of pyproject.toml; a failure prints what the tool said.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TREES = ["distill", "tests", "bench", "scripts"]
CHECKS = {
    "ruff check": [sys.executable, "-m", "ruff", "check", *TREES],
    "ruff format": [sys.executable, "-m", "ruff", "format", "--check", *TREES],
    # tests/ is left to pytest: its fixtures and factories are typed where it helps a reader
    "mypy": [sys.executable, "-m", "mypy", "distill", "bench", "scripts"],
}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_code_passes(check: str) -> None:
    done = subprocess.run(
        CHECKS[check], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{check} failed:\n{done.stdout}\n{done.stderr}"
