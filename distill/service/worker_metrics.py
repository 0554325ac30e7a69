"""What the database holds and what the worker did, as Prometheus metrics: the families
`distill serve`'s `/metrics` and `distill worker --metrics-port` share.

Everything is read when Prometheus scrapes: the database's counts over every project (facts,
jobs, open conflicts, events, derive's work, procedures and topics, each project's backlog
and its bound) and the worker's `Totals` (jobs, errors, and per pass: cycles by result,
seconds, facts changed, model calls and tokens, failures). Nothing is kept here between two
scrapes, so a scrape always says what is true then.

`distill worker --metrics-port` serves them with prometheus_client's own small HTTP server
(its registry holds only these families), bound to 127.0.0.1 unless told otherwise: they
name projects and count what they hold, never their content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from distill.service.worker import Totals

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from distill.memory import Memory


class Holdings(Collector):
    """What the database holds and what the worker did, read at each scrape: `memory` gives
    the `Memory` to read with, `totals` the worker's (None: no worker in this process)."""

    def __init__(self, memory: Callable[[], Memory], totals: Callable[[], Totals | None]) -> None:
        self.memory = memory
        self.totals = totals

    def collect(self) -> Iterator[Metric]:
        counts = self.memory().store.counts(None)
        facts = GaugeMetricFamily("distill_facts", "Facts by status.", labels=["status"])
        for status, n in counts.facts_by_status.items():
            facts.add_metric([status], n)
        yield facts
        jobs = GaugeMetricFamily("distill_jobs", "Consolidation jobs by status.", labels=["status"])
        for status, n in counts.jobs_by_status.items():
            jobs.add_metric([status], n)
        yield jobs
        conflicts = GaugeMetricFamily(
            "distill_open_conflicts", "Open conflict sets by kind.", labels=["kind"]
        )
        for kind, n in counts.open_conflicts_by_kind.items():
            conflicts.add_metric([kind], n)
        yield conflicts
        yield GaugeMetricFamily("distill_events", "Events stored.", value=counts.events)
        derive = CounterMetricFamily(
            "distill_derive", "What the derive pass did (from its audit).", labels=["what"]
        )
        derive.add_metric(["cycles"], counts.derive_cycles)
        derive.add_metric(["facts_derived"], counts.facts_derived)
        derive.add_metric(["facts_invalidated"], counts.facts_invalidated)
        yield derive
        kept = GaugeMetricFamily(
            "distill_patterns",
            "Procedures and topics kept, by kind and status.",
            labels=["kind", "status"],
        )
        for status, n in counts.procedures_by_status.items():
            kept.add_metric(["procedure", status], n)
        for status, n in counts.topics_by_status.items():
            kept.add_metric(["topic", status], n)
        yield kept
        totals = self.totals()
        if totals is not None:
            done = CounterMetricFamily(
                "distill_worker_jobs", "Jobs the worker ran.", labels=["outcome"]
            )
            done.add_metric(["done"], totals.jobs_done)
            done.add_metric(["failed"], totals.jobs_failed)
            yield done
            yield CounterMetricFamily(
                "distill_worker_errors",
                "Runs of the worker that failed.",
                value=totals.errors,
            )
            yield from _passes(totals)
        yield from self._backlog()

    def _backlog(self) -> Iterator[Metric]:
        memory = self.memory()
        backlog = GaugeMetricFamily(
            "distill_backlog_events",
            "Events waiting for consolidation, by project (what backpressure bounds).",
            labels=["project"],
        )
        for project in memory.store.schedule_projects():
            backlog.add_metric([project], memory.backlog(project))
        yield backlog
        bound = memory.max_backlog
        if bound is not None:
            yield GaugeMetricFamily(
                "distill_backlog_bound_events", "The backlog's bound per project.", value=bound
            )


def _passes(totals: Totals) -> Iterator[Metric]:
    """What the worker's passes did: `extract` (the jobs) and each scheduled pass."""
    with totals.lock:
        cycles = dict(totals.cycles)
        seconds = dict(totals.seconds)
        facts = dict(totals.facts)
        calls, tokens = dict(totals.model_calls), dict(totals.model_tokens)
        failures = dict(totals.failures)
    family = CounterMetricFamily(
        "distill_pass_cycles",
        "Runs of a pass by result (clean, cap, budget, error; failed: jobs that failed).",
        labels=["pass", "result"],
    )
    for (name, result), n in sorted(cycles.items()):
        family.add_metric([name, result], n)
    yield family
    duration = SummaryMetricFamily(
        "distill_pass_duration_seconds", "Time spent in a pass's runs.", labels=["pass"]
    )
    for name in sorted(seconds):
        runs = sum(n for (p, _), n in cycles.items() if p == name)
        duration.add_metric([name], count_value=runs, sum_value=seconds[name])
    yield duration
    changed = CounterMetricFamily(
        "distill_pass_facts",
        "Facts a pass changed, by change (created, superseded, merged, reinforced, conflict, "
        "pruned, rules).",
        labels=["pass", "change"],
    )
    for (name, change), n in sorted(facts.items()):
        changed.add_metric([name, change], n)
    yield changed
    for metric, what, values in (
        ("distill_pass_model_calls", "Model calls a pass made.", calls),
        ("distill_pass_model_tokens", "Model tokens (prompt and answer) a pass spent.", tokens),
        ("distill_pass_failures", "Runs of a pass that failed (jobs: jobs failed).", failures),
    ):
        family = CounterMetricFamily(metric, what, labels=["pass"])
        for name, n in sorted(values.items()):
            family.add_metric([name], n)
        yield family


class MetricsServer:
    """`distill worker --metrics-port`: the families above on their own HTTP server (any
    path answers; Prometheus scrapes `/metrics`), until `close`."""

    def __init__(
        self,
        memory: Callable[[], Memory],
        totals: Callable[[], Totals | None],
        host: str,
        port: int,
    ) -> None:
        registry = CollectorRegistry()
        registry.register(Holdings(memory, totals))
        self._server: WSGIServer
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)

    @property
    def port(self) -> int:
        """The port bound (the one chosen when asked for 0)."""
        return int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
