"""What an evaluation suite returns: metrics with their targets, tables, and the datasets
(with their licenses) it read. One shape for every suite, so `distill eval all` can
summarise them and `--json` writes the same thing a table shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Dataset:
    name: str
    license: str
    path: str


@dataclass(frozen=True)
class Metric:
    """One measured number. `target` is a readable bound ("= 1.0", "≤ 0.01"); `met` says
    whether the value is within it (None when the metric has no target)."""

    name: str
    value: float | int
    target: str | None = None
    met: bool | None = None
    note: str = ""

    @classmethod
    def at_least(cls, name: str, value: float, bound: float, note: str = "") -> Metric:
        return cls(name, value, f"≥ {bound:g}", value >= bound - 1e-12, note)

    @classmethod
    def at_most(cls, name: str, value: float, bound: float, note: str = "") -> Metric:
        return cls(name, value, f"≤ {bound:g}", value <= bound + 1e-12, note)

    @classmethod
    def info(cls, name: str, value: float | int, note: str = "") -> Metric:
        return cls(name, value, None, None, note)


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]


@dataclass
class SuiteResult:
    suite: str
    title: str
    datasets: list[Dataset]
    metrics: list[Metric] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def targets_met(self) -> int:
        return sum(1 for m in self.metrics if m.met is True)

    @property
    def targets_missed(self) -> list[Metric]:
        return [m for m in self.metrics if m.met is False]

    def summary_row(self) -> list[str]:
        """Suite, targets met out of those with a target, the names of the missed ones, and
        seconds: one row of the `all` summary."""
        with_target = sum(1 for m in self.metrics if m.met is not None)
        missed = ", ".join(m.name for m in self.targets_missed) or "—"
        return [self.suite, f"{self.targets_met}/{with_target}", missed, f"{self.seconds:g}"]

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["targets"] = {
            "met": self.targets_met,
            "missed": [m.name for m in self.targets_missed],
        }
        return data


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) >= 1000:
            return f"{int(value):,}"
        return f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
