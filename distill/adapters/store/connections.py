"""One driver connection per thread, for every backend.

A store is used from several threads (the engine prepares the next batch on one while it
decides on another; a worker runs several), and neither sqlite3 nor psycopg connections may
be shared by threads mid-transaction. So each thread gets its own, opened on first use and
remembered, so that `close()` can close them all, from any thread. A backend supplies how to
open one (`_open`) and, if its connections can break, how to tell (`_broken`).
"""

from __future__ import annotations

import threading
from typing import Any, Generic, Protocol, TypeVar

from distill.errors import StoreError


class _Closable(Protocol):
    raw: Any


C = TypeVar("C", bound=_Closable)


class PerThread(Generic[C]):
    """The connections of one store, one per thread."""

    def __init__(self, where: str) -> None:
        self.where = where  # the database, fit to be shown
        self._local = threading.local()
        self._opened: list[C] = []
        self._opened_lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Close every connection, in every thread. Idempotent."""
        self._closed = True
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.raw.close()

    def _open(self) -> C:
        raise NotImplementedError

    def _broken(self, conn: C) -> bool:
        """Whether a connection can no longer be used (the server closed it, say)."""
        return False

    def _conn(self) -> C:
        if self._closed:
            raise StoreError(f"the store on {self.where} is closed")
        conn: C | None = getattr(self._local, "conn", None)
        if conn is None or self._broken(conn):
            conn = self._local.conn = self._remember(self._open())
        return conn

    def _remember(self, conn: C) -> C:
        with self._opened_lock:
            self._opened.append(conn)
        return conn
