"""SQLite connections and transactions for `SqliteStore`.

File databases get one connection per thread; ``":memory:"`` gets one shared connection
(a second one would be another, empty database) guarded by a re-entrant lock. Transactions
are explicit (`isolation_level=None`): the outermost is `BEGIN IMMEDIATE` for writes (take
the write lock up front, so a writer never fails half-way on a busy database) or a deferred
`BEGIN` for reads; a nested write is a savepoint, so it rolls back alone.

What the file is and how to open it (read-only, options) is decided before the first
connection (`sqlite_file`); how a writer waits for the write lock, and what it says while it
waits, is `sqlite_lock`. On a read-only database a write transaction is refused before it
begins, saying why the database is read-only.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from distill.adapters.store import rows
from distill.adapters.store.connections import PerThread
from distill.adapters.store.sqlite_file import SqliteFile
from distill.adapters.store.sqlite_lock import Suspects, begin_write, is_busy
from distill.core.identity import content_hash
from distill.core.watermark import signature
from distill.errors import DistillError, IntegrityViolation, StoreError

WAL_RETRY_PAUSE_S = 0.01  # seconds between tries to switch a contended new file to WAL


def add_functions(raw: sqlite3.Connection) -> None:
    """The SQL functions distill's queries and migrations call, on a new connection."""
    # A list of ids arrives as JSON text: its items are packed as the columns are.
    raw.create_function("stored_id", 1, rows.pack_id, deterministic=True)
    # The watermark's signature of a text (core.watermark), for unmarked_memories.
    raw.create_function("text_signature", 1, signature, deterministic=True)
    # The embedding cache's key of a text (core.identity), for sqlite_0018.
    raw.create_function("content_hash", 1, content_hash, deterministic=True)


class _Connection:
    """One sqlite3 connection, how deep the transaction on it is nested, and how many rows
    the connection had changed when the outermost one began."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw
        self.lock = threading.RLock()
        self.depth = 0
        self.changes_at_begin = 0


class SqliteConnections(PerThread[_Connection]):
    """The connections of one store to one database, and the transactions on them."""

    def __init__(self, file: SqliteFile, suspects: Suspects) -> None:
        """`suspects`: who may hold the write lock when a writer waits (see `sqlite_lock`)."""
        super().__init__(file.path)
        self.file = file
        self.path = file.path
        self._suspects = suspects
        self._memory = file.memory
        self._shared = self._remember(self._open()) if self._memory else None

    def raw(self) -> sqlite3.Connection:
        """This thread's sqlite3 connection (for diagnostics; use `transaction` to work)."""
        return self._conn().raw

    def uncommitted(self) -> bool:
        """Whether this thread's current transaction has written rows it may still roll back
        (what it reads then is not yet true for anyone else)."""
        conn = self._conn()
        return conn.depth > 0 and conn.raw.total_changes != conn.changes_at_begin

    @contextmanager
    def transaction(
        self, write: bool = True, rollback: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """The current transaction, or a new one; a nested write is a savepoint. A new
        transaction with `rollback` is always rolled back, however its block ends.

        Driver errors leave as `IntegrityViolation` or `StoreError`, after the rollback.
        """
        if write and self.file.read_only is not None:
            raise StoreError(
                f"the SQLite database at {self.path} is read-only ({self.file.read_only}), "
                "and this writes to it; nothing was written"
            )
        conn = self._conn()
        with conn.lock:
            if conn.depth == 0:
                yield from self._outer(conn, write, rollback)
            elif write:
                yield from _savepoint(conn)
            else:
                yield conn.raw

    def statement(self) -> AbstractContextManager[sqlite3.Connection]:
        """For one statement that only reads: a read transaction (a deferred BEGIN costs
        SQLite no round trip)."""
        return self.transaction(write=False)

    def _open(self) -> _Connection:
        try:
            raw = sqlite3.connect(
                self.file.uri,
                uri=True,
                isolation_level=None,  # explicit transactions only
                check_same_thread=False,  # so that close() can close every thread's connection
                timeout=self.file.busy_timeout,
            )
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the SQLite database at {self.path}: {exc} "
                "(does its folder exist, and may distill write there?)"
            ) from exc
        try:
            raw.row_factory = sqlite3.Row
            raw.execute(f"PRAGMA busy_timeout = {round(self.file.busy_timeout * 1000)}")
            if not self._memory and self.file.read_only is None:
                _use_wal(raw, self.file.busy_timeout)
            raw.execute("PRAGMA synchronous = NORMAL")
            raw.execute("PRAGMA foreign_keys = ON")
            add_functions(raw)
        except sqlite3.Error as exc:
            raw.close()
            raise StoreError(f"cannot set up the SQLite database at {self.path}: {exc}") from exc
        return _Connection(raw)

    def _conn(self) -> _Connection:
        if self._shared is not None and not self._closed:
            return self._shared
        return super()._conn()

    def _outer(
        self, conn: _Connection, write: bool, rollback: bool
    ) -> Iterator[sqlite3.Connection]:
        try:
            if write:
                begin_write(conn.raw, self.path, self.file.busy_timeout, self._suspects)
            else:
                conn.raw.execute("BEGIN")
        except sqlite3.Error as exc:
            raise translate(exc) from exc
        conn.depth = 1
        conn.changes_at_begin = conn.raw.total_changes
        try:
            yield conn.raw
            conn.raw.execute("ROLLBACK" if rollback else "COMMIT")  # foreign keys checked here
        except BaseException as exc:
            if conn.raw.in_transaction:
                conn.raw.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise translate(exc) from exc
            raise
        finally:
            conn.depth = 0


def _use_wal(raw: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL. Two processes creating one file at once can make the switch fail as
    busy without SQLite's busy handler being consulted, so wait here instead."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            raw.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_PAUSE_S)


def _savepoint(conn: _Connection) -> Iterator[sqlite3.Connection]:
    name = f"distill_{conn.depth}"
    conn.raw.execute(f"SAVEPOINT {name}")
    conn.depth += 1
    try:
        yield conn.raw
    except BaseException as exc:
        conn.raw.execute(f"ROLLBACK TO {name}")
        conn.raw.execute(f"RELEASE {name}")
        if isinstance(exc, sqlite3.Error):
            raise translate(exc) from exc
        raise
    else:
        conn.raw.execute(f"RELEASE {name}")
    finally:
        conn.depth -= 1


def translate(exc: sqlite3.Error) -> DistillError:
    """A driver error as the Distill error it means."""
    if isinstance(exc, sqlite3.IntegrityError):
        if "FOREIGN KEY" in str(exc):
            return IntegrityViolation(
                "a fact, observation or job names an event or fact that is not stored"
            )
        return IntegrityViolation(f"the store refused a write: {exc}")
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY:
        return StoreError(
            f"SQLite failed: {exc} (may this user write the database file and its folder?)"
        )
    return StoreError(f"SQLite failed: {exc}")


def split_statements(script: str) -> Iterator[str]:
    """Cut a SQL script into statements (sqlite3.complete_statement knows the syntax)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    leftover = [ln for ln in buffer.splitlines() if ln.strip() and not ln.lstrip().startswith("--")]
    if leftover:
        raise StoreError(f"a SQL script ends with an incomplete statement: {leftover[0][:80]}")
