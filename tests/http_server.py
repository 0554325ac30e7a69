"""A real HTTP API for the tests: `create_app` on uvicorn, on 127.0.0.1 and a free port, in a
thread of the test process, with its background worker polling every `POLL` seconds; and
httpx clients that carry a key.

The server's socket is bound before it starts (port 0: the kernel picks a free one), so two
tests never race for a port. `distill serve` itself, in a subprocess, is tested in
tests/acceptance/test_http_serve.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import uvicorn

from distill import Memory
from distill.service.api_keys import create_key
from distill.service.config import Reloader
from distill.service.http import Service, create_app

POLL = 0.05  # seconds the background worker waits when nothing is due
START_TIMEOUT = 10.0  # seconds for the server to listen
DEADLINE = 10.0  # seconds a test waits for the worker to consolidate what it sent


@dataclass
class Api:
    url: str
    service: Service

    def key(self, project: str | None, admin: bool = False) -> str:
        """A new key's token (an admin key with `admin`)."""
        made = create_key(
            self.service.memory.store, project, "test", datetime.now(UTC), admin=admin
        )
        return made.token

    def client(self, token: str | None = None, header: str = "bearer") -> httpx.Client:
        headers = {}
        if token is not None:
            headers = (
                {"Authorization": f"Bearer {token}"} if header == "bearer" else {"X-API-Key": token}
            )
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0)


@contextmanager
def running_api(
    database: str, worker_threads: int = 1, loopback: bool = True, config: Reloader | None = None
) -> Iterator[Api]:
    """The API on `database` (a SQLite path or a PostgreSQL URL), hashing embedder; with
    `config`, as `distill serve --config` (a backlog bound, the worker's schedule)."""
    svc = Service(
        lambda: Memory(database, embedder="hashing"),
        loopback=loopback,
        worker_threads=worker_threads,
        interval=POLL,
        config=config,
    )
    config = uvicorn.Config(create_app(svc), host="127.0.0.1", port=0, log_level="warning")
    sock = config.bind_socket()
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, START_TIMEOUT, "the server to start")
        host, port = sock.getsockname()[:2]
        yield Api(f"http://{host}:{port}", svc)
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT)
        sock.close()


def wait_for(ready: Callable[[], Any], timeout: float = DEADLINE, what: str = "it") -> Any:
    """Poll `ready` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = ready()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def claim_event(
    subject: str, predicate: str, value: dict[str, Any], at: str = "2024-05-01T10:00:00Z"
) -> dict[str, Any]:
    """One event carrying one claim, as a client sends it."""
    return {
        "subject": subject,
        "text": f"{predicate} is {value}",
        "occurred_at": at,
        "claims": [{"predicate": predicate, "value": value}],
    }


def assert_error(response: httpx.Response, status: int, kind: str | None = None) -> str:
    """The response is an error of this status in the API's one shape; returns its message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
    if kind is not None:
        assert body["error"]["type"] == kind, body
    assert "Traceback" not in response.text
    return str(body["error"]["message"])
