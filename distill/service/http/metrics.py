"""`/metrics` in Prometheus's text format: requests by route and status, their latency, events
accepted, and (`distill.service.worker_metrics`, as `distill worker --metrics-port` serves
them) what the background worker did and what the database holds.

Each app has its own registry (two apps in one process, as in the tests, never share
counters). Routes are labelled by their template (`/v1/memories/{fact_id}`), never by the
path a client sent, so that ids do not become label values. What the database holds is read
when Prometheus scrapes, over every project: which is why `/metrics` takes an admin key.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from distill.service.http.state import Service
from distill.service.worker_metrics import Holdings

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
        self.registry.register(Holdings(lambda: svc.memory, lambda: svc.totals))

    def render(self) -> bytes:
        return generate_latest(self.registry)


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
