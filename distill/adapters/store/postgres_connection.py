"""PostgreSQL connections and transactions for `PostgresStore`.

One psycopg connection per thread (the engine prepares the next batch on a second thread),
in autocommit mode with explicit transactions, as `SqliteConnections` does: the outermost
`transaction()` is BEGIN … COMMIT, a nested write is a savepoint (it rolls back alone, and
leaves the outer transaction usable after a failed statement), a nested read reuses the
transaction it is in. Work registered with `after_commit` runs once the outermost
transaction has committed, and is dropped if it rolls back.

A database shared with other applications is normal in PostgreSQL (unlike a SQLite file, it is
named on purpose), so it is not refused: Distill's tables go into the URL's schema beside the
others'. A name Distill needs that another application took stops the migration, which runs
in one transaction, with nothing written; the error says how to give Distill a schema of its
own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from distill.adapters.store.connections import PerThread
from distill.adapters.store.urls import hide_passwords
from distill.errors import DistillError, IntegrityViolation, StoreError

log = logging.getLogger(__name__)

Connection = psycopg.Connection[dict[str, Any]]
CONNECT_TIMEOUT_S = 10  # how long to wait for the server before failing at start-up


class _Connection:
    """One psycopg connection, how deep the transaction on it is nested, and what to do
    after it commits."""

    def __init__(self, raw: Connection) -> None:
        self.raw = raw
        self.depth = 0
        self.after_commit: list[Callable[[], None]] = []


class PostgresConnections(PerThread[_Connection]):
    """The connections of one store to one database, and the transactions on them."""

    def __init__(self, url: str, setup: Callable[[Connection], None]) -> None:
        super().__init__(describe(url))
        self.url = url
        self._setup = setup

    def connect(self) -> Connection:
        """A new connection of its own (not this thread's), set up like the others."""
        try:
            raw: Connection = psycopg.connect(
                self.url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT_S
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL at {self.where}: {first_line(exc)} "
                "(is the server running, do the URL's host, user and database exist, and is "
                "its password right?)"
            ) from exc
        try:
            self._setup(raw)
        except BaseException:
            raw.close()
            raise
        return raw

    @contextmanager
    def transaction(self, write: bool = True, rollback: bool = False) -> Iterator[Connection]:
        """The current transaction, or a new one; a nested write is a savepoint. A new
        transaction with `rollback` is always rolled back, however its block ends.

        Driver errors leave as `IntegrityViolation` or `StoreError`, after the rollback.
        """
        conn = self._conn()
        if conn.depth == 0:
            yield from self._outer(conn, rollback)
        elif write:
            yield from _savepoint(conn)
        else:
            yield conn.raw

    @contextmanager
    def statement(self) -> Iterator[Connection]:
        """For one statement that only reads: the current transaction, or none. In
        autocommit mode one statement is a transaction of its own (one snapshot), so a BEGIN
        and a COMMIT around it would be two more round trips for nothing: 0.22 ms of a 0.31 ms
        read of the open conflict sets on a local server (200 reads, 2 cores).

        Driver errors leave as `IntegrityViolation` or `StoreError`.
        """
        conn = self._conn()
        if conn.depth > 0:
            yield conn.raw
            return
        try:
            yield conn.raw
        except psycopg.Error as exc:
            raise translate(exc) from exc

    def in_transaction(self) -> bool:
        """Whether this thread's connection is in a transaction of the store's."""
        return self._conn().depth > 0

    def after_commit(self, work: Callable[[], None]) -> None:
        """Run `work` once this thread's transaction commits (now, if there is none)."""
        conn = self._conn()
        if conn.depth == 0:
            work()
        else:
            conn.after_commit.append(work)

    def _outer(self, conn: _Connection, rollback: bool) -> Iterator[Connection]:
        conn.depth = 1
        try:
            with conn.raw.transaction(force_rollback=rollback):
                yield conn.raw
        except psycopg.Error as exc:  # a deferred foreign key fails at COMMIT, for one
            conn.after_commit.clear()
            raise translate(exc) from exc
        except BaseException:
            conn.after_commit.clear()
            raise
        finally:
            conn.depth = 0
        work, conn.after_commit = conn.after_commit, []
        if rollback:
            return
        for step in work:
            try:
                step()
            except DistillError as exc:  # what committed stays committed; this was extra
                log.warning("work after a commit failed: %s", exc)

    def _open(self) -> _Connection:
        return _Connection(self.connect())

    def _broken(self, conn: _Connection) -> bool:
        return bool(conn.raw.closed)


def _savepoint(conn: _Connection) -> Iterator[Connection]:
    conn.depth += 1
    try:
        with conn.raw.transaction():  # psycopg makes a nested transaction a savepoint
            yield conn.raw
    except psycopg.Error as exc:
        raise translate(exc) from exc
    finally:
        conn.depth -= 1


def translate(exc: psycopg.Error) -> DistillError:
    """A driver error as the Distill error it means."""
    if isinstance(exc, pg_errors.ForeignKeyViolation):
        return IntegrityViolation(
            "a fact, observation or job names an event or fact that is not stored"
        )
    if isinstance(exc, pg_errors.IntegrityError):
        return IntegrityViolation(f"the store refused a write: {first_line(exc)}")
    if isinstance(exc, pg_errors.DuplicateTable):  # only migrations create tables
        return StoreError(
            f"PostgreSQL failed: {first_line(exc)}: another application's table or index has "
            "a name distill needs, in the schema the URL uses; nothing was written. Give "
            "distill its own database, or its own schema: CREATE SCHEMA distill, then add "
            "options=-csearch_path%3Ddistill,public to the URL's query"
        )
    if isinstance(exc, pg_errors.DeadlockDetected):
        return StoreError(
            f"PostgreSQL broke a deadlock by failing this transaction: {hide_passwords(str(exc))}"
        )
    return StoreError(f"PostgreSQL failed: {first_line(exc)}")


def describe(url: str) -> str:
    """Where a connection string points, without its password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unparsable connection string"
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"{user}{host}{port}/{parts.get('dbname', '')}"


def first_line(exc: BaseException) -> str:
    text = hide_passwords(str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__
