"""`create_app`: the HTTP API of one `Service`, with its middleware, error handlers, health
check, metrics and OpenAPI document (`/openapi.json`, read at `/docs`).

From the outside in: request metrics (they see every answer, errors included), the body
limit, then FastAPI (errors become `{"error": {...}}` in `errors`). The worker starts with
the app and stops with it: shutting down finishes the job being decided.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Annotated, Any

from fastapi import Depends, FastAPI
from fastapi.responses import Response

from distill.service.http import errors, routes_admin, routes_memories
from distill.service.http.auth import Admin
from distill.service.http.limits import BodyLimit
from distill.service.http.metrics import CONTENT_TYPE, Metrics, RequestMetrics
from distill.service.http.schemas import ErrorOut
from distill.service.http.state import Service, service

DESCRIPTION = """Distill's memory over HTTP: add events, and read back the facts consolidated
from them, on two time axes (`as_of`: what was true then; `known_at`: what Distill believed
then).

Authenticate with `Authorization: Bearer <key>` or `X-API-Key: <key>` (`distill keys create
--project P`). A key acts on its own project; an admin key names one with `?project=P`.
Every error is `{"error": {"type": ..., "message": ...}}`."""

# Every route may answer these; documented once for all.
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": what}
    for status, what in {
        400: "Malformed JSON, or an admin key that named no project",
        401: "No key, or an unknown or revoked one",
        403: "The key may not do this (another project, or an admin route)",
        404: "No such fact, conflict or subject in this project",
        409: "Not allowed in the current state (already resolved, pinned)",
        413: "The body is over the size limit",
        422: "The request is not valid: the message names the field",
        500: "An unexpected error (the details are in the server's log)",
        503: "The database or the model provider is unavailable",
    }.items()
}


def create_app(svc: Service) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc.start()
        try:
            yield
        finally:
            svc.close()

    app = FastAPI(
        title="Distill",
        version=version("distill"),
        description=DESCRIPTION,
        lifespan=lifespan,
        responses=ERRORS,
    )
    app.state.service = svc
    app.state.metrics = metrics = Metrics(svc)
    errors.install(app)
    app.include_router(routes_memories.router)
    app.include_router(routes_admin.router)

    @app.get("/healthz", tags=["admin"])
    def healthz(svc: Annotated[Service, Depends(service)]) -> dict[str, str]:
        """No key needed: whether the server answers and its database does."""
        svc.memory.store.schema_version()
        return {"status": "ok"}

    @app.get("/metrics", tags=["admin"], response_class=Response)
    def prometheus(who: Admin) -> Response:
        """Prometheus text format: requests, latency, events accepted, the worker's jobs,
        facts and jobs by status (over every project: admin keys only)."""
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    # Added last, run first: the body limit inside the metrics, so that a 413 is counted.
    app.add_middleware(BodyLimit)
    app.add_middleware(RequestMetrics, metrics=metrics)
    return app
