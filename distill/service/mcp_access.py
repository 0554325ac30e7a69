"""Who may call `distill mcp` over HTTP, and on which project each request acts.

The keys are the HTTP API's (`distill keys create|list|revoke`, hashed in the store), checked
by the same function, `api_keys.authenticate`, on every HTTP request: a key revoked while a
client is connected stops working on that client's next request, and the project is decided
per request, never once for a connection or a session. An MCP session id names a
conversation, not a caller: a request that carries another key acts on that key's project.

The rules are the HTTP API's (`distill.service.http.auth`), with one difference: without
keys, the project is the server's (`--project`), as over stdio, not `?project=`.

- A key as `Authorization: Bearer <key>` or `X-API-Key: <key>`.
- A project's key acts on its project. A `?project=` naming another one is refused (403,
  whatever that project holds, so the refusal tells nothing about it).
- An admin key names its project in the endpoint's URL, `http://HOST:PORT/mcp?project=P`
  (a query parameter, since an MCP client sends every request of a session to the URL it
  was given), and gets 400 without one: the server's `--project` is not a silent default
  for a key that may act anywhere.
- Unknown, revoked and missing keys are one 401.
- Without keys: on a database where no key was ever made, a server bound to loopback serves
  every caller on the server's project (the machine's own users could open the database
  anyway); the first key made ends that, even once it is revoked. `distill mcp` refuses to
  bind anywhere else without an active key.

A refusal is the HTTP API's error body, `{"error": {"type": ..., "message": ...}}`, before
the request reaches the MCP SDK. What was decided travels to the tools in the ASGI scope
(`PROJECT_SCOPE_KEY`): the SDK hands each tool call the HTTP request that carried it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread

from distill.ports import Store
from distill.service.api_keys import authenticate, key_store

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PROJECT_SCOPE_KEY = "distill.project"  # where a request's project waits for its tools


@dataclass(frozen=True)
class Refusal:
    """A request not served: its HTTP status and the error body's type and message."""

    status: int
    type: str
    message: str

    def body(self) -> bytes:
        return json.dumps({"error": {"type": self.type, "message": self.message}}).encode()


MISSING_KEY = Refusal(
    401,
    "unauthorized",
    "an API key is required: Authorization: Bearer <key> or X-API-Key: <key> "
    "(distill keys create --project P makes one)",
)
INVALID_KEY = Refusal(401, "unauthorized", "the API key is not valid (unknown or revoked)")
FOREIGN_PROJECT = Refusal(403, "forbidden", "this key acts on its own project only")
PROJECT_REQUIRED = Refusal(
    400, "project_required", "an admin key names the project: connect to /mcp?project=P"
)


def token_of(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The key a request carries, as the HTTP API reads it: Bearer first, then X-API-Key."""
    found = {name.lower(): value.decode("latin-1") for name, value in headers}
    scheme, _, credentials = found.get(b"authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    header = found.get(b"x-api-key", "").strip()
    return header or None


class KeyedEndpoint:
    """ASGI middleware in front of the MCP SDK's streamable HTTP app: every HTTP request is
    authenticated against `store`'s keys and given its project, or refused."""

    def __init__(self, app: ASGIApp, store: Store, project: str, *, loopback: bool) -> None:
        self.app = app
        self.store = store
        self.keys = key_store(store)
        self.project = project  # the server's: served without keys only
        self.loopback = loopback

    def decide(self, token: str | None, asked: str | None) -> str | Refusal:
        """The project a request acts on, or why it is refused."""
        if token is None:
            if self.loopback and self.keys.count_keys().made == 0:
                return self.project
            return MISSING_KEY
        key = authenticate(self.store, token)
        if key is None:
            return INVALID_KEY
        if key.project is None:
            return asked if asked else PROJECT_REQUIRED
        if asked is not None and asked != key.project:
            return FOREIGN_PROJECT
        return key.project

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan: the SDK's session manager starts there
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        asked = query.get("project", [None])[-1]
        # A key is one indexed read; off the event loop, as FastAPI runs the HTTP API's.
        decided = await anyio.to_thread.run_sync(self.decide, token_of(scope["headers"]), asked)
        if isinstance(decided, Refusal):
            await refuse(decided, send)
            return
        scope[PROJECT_SCOPE_KEY] = decided
        await self.app(scope, receive, send)


async def refuse(refusal: Refusal, send: Send) -> None:
    body = refusal.body()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if refusal.status == 401:  # RFC 6750: say which scheme the endpoint takes
        headers.append((b"www-authenticate", b'Bearer realm="distill"'))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
