"""Who is calling, and on which project they act.

A request carries a key as `Authorization: Bearer <token>` or `X-API-Key: <token>`. A
project's key acts on its project, always: the project is never read from a body, and a
`?project=` naming another one is refused (403, whatever that project holds, so the refusal
tells nothing about it). An admin key acts on the project its request names with
`?project=P` (a query parameter, so that it is the same on every method); the routes that
span projects (`/v1/consolidate`, `/metrics`) take only admin keys. Unknown, revoked and
missing keys are one 401: a revoked key stops working on its next request, since every
request looks its key up.

Without keys: a server bound to a loopback address, on a database where no key was ever
made, serves every caller as an admin acting on `default` (or `?project=`), as the CLI on
the same machine could. That ends with the first key made, even once it is revoked, and
only requests whose `Host` is a loopback name are served so, so that a web page cannot
reach the server through a DNS name of its own. `distill serve` refuses any other address
without keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from distill.service.api_keys import authenticate
from distill.service.http.errors import ApiError
from distill.service.http.state import Service, service

OPEN_PROJECT = "default"  # what a caller acts on without keys, unless it names a project

_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <key>`")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The key, as is.")


@dataclass(frozen=True)
class Caller:
    """Whom a request acts for: a key (None without keys) and the project it acts on."""

    key_id: str | None
    project: str | None  # None: an admin key that named no project
    admin: bool

    def scoped(self) -> str:
        if self.project is None:
            raise ApiError(
                400, "project_required", "an admin key names the project: add ?project=P"
            )
        return self.project


def caller(
    request: Request,
    svc: Annotated[Service, Depends(service)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
    project: Annotated[
        str | None,
        Query(description="Admin keys only: the project to act on.", min_length=1),
    ] = None,
) -> Caller:
    token = bearer.credentials if bearer is not None else header
    if token is None:
        if not svc.open_access(request.headers.get("host", "")):
            raise ApiError(
                401,
                "unauthorized",
                "an API key is required: Authorization: Bearer <key> or X-API-Key: <key>",
            )
        return Caller(None, project or OPEN_PROJECT, admin=True)
    key = authenticate(svc.memory.store, token)
    if key is None:
        raise ApiError(401, "unauthorized", "the API key is not valid (unknown or revoked)")
    if key.project is None:
        return Caller(key.id, project, admin=True)
    if project is not None and project != key.project:
        raise ApiError(403, "forbidden", "this key acts on its own project only")
    return Caller(key.id, key.project, admin=False)


def project_of(who: Annotated[Caller, Depends(caller)]) -> str:
    """The project a request acts on: its key's, or the one an admin key named."""
    return who.scoped()


def admin(who: Annotated[Caller, Depends(caller)]) -> Caller:
    if not who.admin:
        raise ApiError(403, "forbidden", "this route takes an admin key")
    return who


Project = Annotated[str, Depends(project_of)]
Admin = Annotated[Caller, Depends(admin)]
