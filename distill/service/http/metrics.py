"""`/metrics` in Prometheus's text format: requests by route and status, their latency, events
accepted, what the background worker did, and what the database holds.

Each app has its own registry (two apps in one process, as in the tests, never share
counters). Routes are labelled by their template (`/v1/memories/{fact_id}`), never by the
path a client sent, so that ids do not become label values. What the database holds is read
when Prometheus scrapes, over every project: which is why `/metrics` takes an admin key.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from distill.service.http.state import Service
from distill.service.worker import Totals

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: a read answers in milliseconds, a batch of events or a dry run in up to seconds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Label values a client cannot multiply: any other method is counted as "other".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Metrics:
    def __init__(self, svc: Service) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "distill_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "distill_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.events = Counter(
            "distill_events_accepted",
            "Events accepted by POST /v1/events: new ones, and those already stored.",
            ["stored"],
            registry=self.registry,
        )
        self.refused = Counter(
            "distill_events_refused",
            "Events POST /v1/events refused because the project's backlog was full (429).",
            registry=self.registry,
        )
        self.registry.register(_Holdings(svc))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Holdings(Collector):
    """What the database holds and what the worker did, read at each scrape."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc

    def collect(self) -> Iterator[Metric]:
        counts = self.svc.memory.store.counts(None)
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
        totals = self.svc.totals
        if totals is not None:
            done = CounterMetricFamily(
                "distill_worker_jobs", "Jobs the background worker ran.", labels=["outcome"]
            )
            done.add_metric(["done"], totals.jobs_done)
            done.add_metric(["failed"], totals.jobs_failed)
            yield done
            yield CounterMetricFamily(
                "distill_worker_errors",
                "Runs of the background worker that failed.",
                value=totals.errors,
            )
            yield from _passes(totals)
        yield from self._backlog()

    def _backlog(self) -> Iterator[Metric]:
        store = self.svc.memory.store
        backlog = GaugeMetricFamily(
            "distill_backlog_events",
            "Events waiting for consolidation, by project (what backpressure bounds).",
            labels=["project"],
        )
        for project in store.schedule_projects():  # type: ignore[attr-defined]
            backlog.add_metric([project], self.svc.memory.backlog(project))
        yield backlog
        bound = self.svc.memory.max_backlog
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


class RequestMetrics:
    """Pure ASGI middleware: counts every answer (errors included) and times it."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception that escapes every handler

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.metrics.requests.labels(method, template, str(status)).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - started)
