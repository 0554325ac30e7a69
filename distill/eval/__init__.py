"""Evaluation on public data: `distill eval SUITE`.

Each suite is a module with `NAME`, `TITLE` and `run(ctx) -> SuiteResult`. Suites read the
datasets described in `../shared/data/DATA.md` (never copied into this repository) and load
them through the public `Memory` API, as a user would.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import import_module

from distill.eval.context import EvalContext, default_data_dir
from distill.eval.results import Dataset, Metric, SuiteResult, Table

__all__ = [
    "SUITES",
    "Dataset",
    "EvalContext",
    "Metric",
    "SuiteResult",
    "Table",
    "default_data_dir",
    "run_suite",
]

# Suite name → module, in the order `all` runs them.
SUITES: dict[str, str] = {
    "timelines": "distill.eval.timelines",
    "numeric-updates": "distill.eval.numeric_updates",
    "pairs": "distill.eval.pairs",
    "locomo": "distill.eval.locomo",
    "scenarios": "distill.eval.scenarios",
    "drift": "distill.eval.drift",
    "judge": "distill.eval.judge",
    "derive": "distill.eval.derive",
}


def run_suite(name: str, ctx: EvalContext) -> SuiteResult:
    module = import_module(SUITES[name])
    runner: Callable[[EvalContext], SuiteResult] = module.run
    started = time.perf_counter()
    result = runner(ctx)
    result.seconds = round(time.perf_counter() - started, 2)
    result.params.setdefault("limit", ctx.limit)
    result.params.setdefault("seed", ctx.seed)
    return result
