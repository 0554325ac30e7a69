"""Every error the HTTP API answers, as `{"error": {"type": ..., "message": ...}}` with its
status, and never a traceback.

`STATUS` is the one table from Distill's errors to statuses: the first class of an error's
MRO found there decides. A 4xx says what was wrong in Distill's own words (they name the
field and the fix, and never another project's data: every read is scoped to the caller's
project, so a fact of another project is `NotFound` exactly as one that does not exist). A
5xx says only what kind of failure it was; the details go to the server's log, with the
traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from distill.errors import (
    AlreadyResolved,
    BacklogFull,
    ConfigurationError,
    DistillError,
    IntegrityViolation,
    InvalidInput,
    InvalidOperation,
    NotFound,
    PinnedFact,
    ProviderError,
    StoreError,
    TransientProviderError,
)

log = logging.getLogger("distill.http")

# status, type, and the message of a 5xx (None: the error's own message, safe to show).
STATUS: dict[type[DistillError], tuple[int, str, str | None]] = {
    InvalidInput: (422, "invalid_input", None),
    NotFound: (404, "not_found", None),
    AlreadyResolved: (409, "already_resolved", None),
    PinnedFact: (409, "pinned_fact", None),
    InvalidOperation: (409, "invalid_operation", None),
    IntegrityViolation: (409, "integrity_violation", None),
    BacklogFull: (429, "backlog_full", None),
    TransientProviderError: (
        503,
        "provider_unavailable",
        "the model provider is unavailable or rate-limited; try again later",
    ),
    ProviderError: (502, "provider_error", "the model provider failed; see the server's log"),
    StoreError: (503, "store_unavailable", "the database is unavailable; try again later"),
    ConfigurationError: (500, "configuration_error", "the server is misconfigured; see its log"),
    DistillError: (500, "internal_error", "an unexpected error; see the server's log"),
}
UNEXPECTED = "an unexpected error; see the server's log"
# Starlette's own HTTP errors (no route, a method the route lacks, a body too large).
HTTP_TYPES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


class ApiError(HTTPException):
    """An error of the HTTP layer itself (auth, a project, a cursor), with its type."""

    def __init__(self, status: int, type: str, message: str) -> None:
        super().__init__(status, message)
        self.type = type


def error_response(
    status: int, type: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": {"type": type, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def classify(exc: DistillError) -> tuple[int, str, str]:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            status, kind, public = STATUS[cls]
            return status, kind, public or str(exc)
    raise AssertionError("DistillError is in the table")  # pragma: no cover


def _distill_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DistillError)
    status, kind, message = classify(exc)
    if status >= 500:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    headers = None
    if isinstance(exc, TransientProviderError | BacklogFull) and exc.retry_after:
        headers = {"Retry-After": str(max(1, round(exc.retry_after)))}
    return error_response(status, kind, message, headers)


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    kind = getattr(exc, "type", None) or HTTP_TYPES.get(exc.status_code, "http_error")
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and kind == "not_found" and message == "Not Found":
        message = f"no route {request.url.path}; the API is described at /docs"
    return error_response(exc.status_code, kind, message, getattr(exc, "headers", None))


def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "invalid_json", "the body is not valid JSON")
    return error_response(422, "invalid_request", explain(errors))


def explain(errors: Any) -> str:
    """Pydantic's errors as one line, `where: problem; ...`, without echoing the input."""
    problems = []
    for error in _one_shape(errors):
        where = ".".join(str(p) for p in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(problems) or "invalid request"


def _one_shape(errors: Any) -> list[Any]:
    """A body that may take one of several shapes (`POST /v1/events`: one event or a batch)
    fails each of them, and pydantic names the shape in every error (`body.EventBatch.
    events`). The shape with the fewest problems is the one the caller meant: only its
    problems are told, as if it were the only shape (`body.subject: Field required`, not
    that line beside two about the batch the caller never sent)."""
    shapes: dict[str, list[Any]] = {}
    for error in errors:
        loc = tuple(error.get("loc", ()))
        if len(loc) < 2 or loc[0] != "body" or not str(loc[1])[:1].isupper():
            return list(errors)  # not a body of several shapes
        shapes.setdefault(str(loc[1]), []).append({**error, "loc": ("body", *loc[2:])})
    return min(shapes.values(), key=len) if len(shapes) > 1 else list(errors)


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal_error", UNEXPECTED)


def install(app: FastAPI) -> None:
    app.add_exception_handler(DistillError, _distill_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
