"""`Service`: what the app serves from. One `Memory` answers every request (its store keeps
one connection per thread, and FastAPI runs each request's handler on a thread of its pool),
and the background `Worker` consolidates what the requests add, with a `Memory` per thread
of its own, as `distill worker` does.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Callable

from fastapi import Request

from distill.key_ports import KeyStore
from distill.memory import Memory
from distill.service.api_keys import key_store
from distill.service.config import Reloader
from distill.service.worker import Totals, Worker

log = logging.getLogger("distill.http")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
WORKER_INTERVAL = 1.0  # seconds the worker waits when nothing is due (SQLite polls)
STOP_WAIT = 30.0  # seconds shutdown waits for the worker to finish the job it is deciding


class Service:
    def __init__(
        self,
        open_memory: Callable[[], Memory],
        *,
        loopback: bool,
        worker_threads: int = 1,
        interval: float = WORKER_INTERVAL,
        config: Reloader | None = None,
    ) -> None:
        self.memory = open_memory()
        self.keys: KeyStore = key_store(self.memory.store)
        self.loopback = loopback  # bound to a loopback address only: open access may apply
        # The configuration file's (`distill serve --config`): the backlog's bound, and the
        # background worker's schedule and trigger. None: no bound, jobs only.
        self.config = config
        schedule, trigger = None, None
        if config is not None:
            settings = config.loaded.settings
            bound = settings.backlog
            self.memory.set_backlog_bound(bound.max_events or None, bound.retry_after_seconds)
            schedule = config.schedule
            own = settings.worker
            trigger = own.trigger() if own.min_events > 1 else None
        self.worker = (
            Worker(
                open_memory,
                concurrency=worker_threads,
                interval=interval,
                schedule=schedule,
                trigger=trigger,
            )
            if worker_threads
            else None
        )
        self._thread: threading.Thread | None = None

    def open_access(self, host_header: str) -> bool:
        """Whether a request without a key is served (see `auth`)."""
        return self.loopback and is_loopback_host(host_header) and self.keys.count_keys().made == 0

    @property
    def totals(self) -> Totals | None:
        return self.worker.totals if self.worker is not None else None

    def start(self) -> None:
        if self.worker is not None and self._thread is None:
            self._thread = threading.Thread(
                target=self._work, name="distill-serve-worker", daemon=True
            )
            self._thread.start()

    def _work(self) -> None:
        assert self.worker is not None
        try:
            self.worker.run()
        except Exception:  # a configuration error: requests are still served
            log.exception("the background worker stopped; consolidation is not running")

    def close(self) -> None:
        """Stop the worker (the job being decided is finished, the others released) and
        close the memory."""
        if self.worker is not None:
            self.worker.stop()
        if self._thread is not None:
            self._thread.join(STOP_WAIT)
            self._thread = None
        self.memory.close()


def service(request: Request) -> Service:
    found: Service = request.app.state.service
    return found


def is_loopback_address(host: str) -> bool:
    """Whether binding to `host` serves this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # another name: it may resolve to any interface
        return False


def is_loopback_host(header: str) -> bool:
    """Whether a `Host` header names this machine (with or without a port)."""
    host = header.strip().lower()
    if host.startswith("["):  # [::1]:8420
        host = host[: host.find("]") + 1]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host in LOOPBACK_NAMES
