"""What every suite is given: where the data is, how much of it to use, the seed, and the
embedder to build memories with. Suites load data through the public `Memory` API only."""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from distill.adapters.embed import make_embedder
from distill.errors import ConfigurationError
from distill.memory import Memory
from distill.ports import LLM, Embedder

Progress = Callable[[str, int, int], None]


def default_data_dir() -> Path:
    """`../shared/data` from the working directory, else from the repository root."""
    here = Path.cwd() / ".." / "shared" / "data"
    if here.is_dir():
        return here.resolve()
    repo = Path(__file__).resolve().parents[2]
    return (repo / ".." / "shared" / "data").resolve()


# When the datasets' facts were stated: every event of a suite says it at this one time, so
# that two arrival orders differ only in arrival, never in what was said when.
STATED_AT = datetime(2025, 1, 1, tzinfo=UTC)


def year_start(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


class ArrivalClock:
    """Arrival time: each round of events is recorded a minute after the one before."""

    def __init__(self) -> None:
        self.current = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def step(self) -> None:
        self.current += timedelta(minutes=1)


def _quiet(_label: str, _done: int, _total: int) -> None:
    return None


@dataclass
class EvalContext:
    data_dir: Path
    limit: int | None = None
    seed: int = 0
    embedder: str | Embedder = "local"
    progress: Progress = _quiet
    llm: LLM | None = None  # a real model, for the suites that can ask one (judge, locomo)
    # The locomo suite runs the hygiene passes (dedupe; judge with a model) after
    # consolidating and measures again; off: `--no-passes`.
    hygiene: bool = True
    offline: bool = False  # and its dedupe with the offline tier: `--offline`
    # The locomo suite's recall gate for the summariser (`--summarise-gate`): scripted
    # summarisers, faithful and lossy, over copies of the consolidated store.
    summarise_gate: bool = False
    _embedder: Embedder | None = field(default=None, repr=False)

    def path(self, *parts: str) -> Path:
        """A data file, or a clear error saying where it was looked for."""
        found = self.data_dir.joinpath(*parts)
        if not found.exists():
            raise ConfigurationError(
                f"evaluation data not found: {found} (pass --data DIR, the folder holding "
                "locomo/, sick/, stsbenchmark/, wikidata_temporal/ and yago15k_temporal/)"
            )
        return found

    def read_json(self, *parts: str) -> Any:
        return json.loads(self.path(*parts).read_text(encoding="utf-8"))

    def rng(self, salt: str = "") -> random.Random:
        return random.Random(f"{self.seed}:{salt}")

    def take(self, items: list[Any]) -> list[Any]:
        """The first `limit` items (all without a limit): slices are reproducible."""
        return items if self.limit is None else items[: self.limit]

    def shared_embedder(self) -> Embedder:
        """One embedder for the whole run: the model loads once."""
        if self._embedder is None:
            self._embedder = make_embedder(self.embedder)
        return self._embedder

    @contextmanager
    def memory(self, **options: Any) -> Iterator[Memory]:
        """A fresh memory on a temporary SQLite file, removed afterwards."""
        with tempfile.TemporaryDirectory(prefix="distill-eval-") as tmp:
            mem = Memory(os.path.join(tmp, "eval.db"), embedder=self.shared_embedder(), **options)
            try:
                yield mem
            finally:
                mem.close()
