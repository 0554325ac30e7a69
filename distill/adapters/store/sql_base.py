"""The base of the store written once over named SQL: what a backend supplies, and what
every operation is built from.

`SqlStore` (`sql_store`, over `sql_jobs`, over this) is the store; `SqliteStore` and
`PostgresStore` are its two backends, and each supplies only what really differs:

- the SQL text: `sql/<backend>_*.sql`, with `:name` or `%(name)s` parameters;
- how ids, hashes and instants are stored (`codec`, see `rows`): SQLite packs them (16-byte
  ids, integer microseconds), PostgreSQL keeps text ids and `timestamptz`;
- a list parameter (`_array`): one JSON text read with `json_each`, or a Python list read
  with `= ANY(...)`;
- a bulk statement (`_many`): sqlite3's `executemany`, or a psycopg cursor's;
- locks (`_lock`): none in SQLite, where one writer at a time is the rule, or
  `pg_advisory_xact_lock`;
- new events (`_events_stored`, `wait_for_events`): polling, or NOTIFY / LISTEN;
- vectors (`_vector_param`, `_nearest`, `_recall_nearest`, `_vectors_written`): BLOBs
  searched exactly or through an in-memory HNSW index, or pgvector and its HNSW indexes;
- words (`_word_query`, `_facts_inserted`): an FTS5 MATCH of quoted words, or a tsquery's
  words; FTS5 fed once per plan by the writers of new facts, or fact_terms by its trigger;
- migrations (`_run_migration`, `_check_can_migrate`, `_current_version`): statements one by
  one, or one script once pgvector is known to be there; SQLite reads its version first and
  writes only when a migration is due;
- connections (`self._db`): one per thread either way, with the same transaction rules;
  housekeeping (`_after_commit`) runs at once inside SQLite's transaction, where writers take
  turns, and after PostgreSQL's commits.

The SQL files stay the source of truth: both define the same query names (a test checks
it), so the store's code names a query and never holds SQL of its own. The queries return
the same columns on both backends and `rows` turns them into models either way.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, Self

from distill.adapters.store import rows
from distill.adapters.store.claims import this_process
from distill.adapters.store.queries import Migration
from distill.errors import StoreError
from distill.ports import Neighbour, RecallScope, Vector


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class DB(Protocol):
    """A driver connection inside a transaction: sqlite3's and psycopg's both fit."""

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


class Connections(Protocol):
    """A backend's connections (one per thread) and the transactions on them."""

    def transaction(
        self, write: bool = True, rollback: bool = False
    ) -> AbstractContextManager[Any]: ...
    def statement(self) -> AbstractContextManager[Any]: ...
    def close(self) -> None: ...


class SqlBase(ABC):
    """A store over a backend's named SQL: its connections, the hooks each backend fills in,
    the helpers every operation uses, and the lifecycle (migrations, transactions)."""

    queries: ClassVar[Mapping[str, str]]
    migrations: ClassVar[tuple[Migration, ...]]
    codec: ClassVar[rows.Codec]  # every id, hash and instant a query takes or returns
    # The driver's integrity errors (unique, foreign key, check), caught where a write is
    # refused so that the refusal can say which invariant it protects.
    integrity_errors: ClassVar[tuple[type[Exception], ...]]

    def __init__(self, connections: Connections, where: str) -> None:
        self._db = connections
        self._tx = connections.transaction
        self.owner = this_process()  # who this store's claims say made them
        self.where = where  # the database, fit to be shown (no password)
        try:
            self.migrate()
        except BaseException:
            self._db.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what each backend supplies ----------------------------------------------------------------
    @abstractmethod
    def _array(self, values: Sequence[Any]) -> Any:
        """A list as one query parameter."""

    @abstractmethod
    def _many(self, db: DB, query: str, params: list[dict[str, Any]]) -> int:
        """Run a named statement once per parameter set; returns the rows it changed."""

    @abstractmethod
    def _vector_param(self, vector: Vector) -> Any:
        """An identity vector as the parameter its column takes."""

    @abstractmethod
    def _nearest(
        self, db: DB, scope: tuple[str, str, str], queries: Vector, k: int
    ) -> list[list[Neighbour]]:
        """For each row of `queries`, the k nearest active state facts of scope (project,
        subject, model id), nearest first, ties by fact id."""

    @abstractmethod
    def _recall_nearest(
        self, db: DB, scope: RecallScope, question: Callable[[], Vector], k: int
    ) -> list[Neighbour]:
        """The k facts of the recall scope nearest the vector `question` returns (shape
        (1, dim); call it once, after what needs no vector), nearest first, ties by id."""

    def _nearest_reads(self) -> AbstractContextManager[Any]:
        """Where `_recall_nearest` runs: a read transaction, unless the backend's is one
        statement (then `statement`, which may spare a transaction's round trips)."""
        return self._tx(write=False)

    @abstractmethod
    def _word_query(self, terms: Sequence[str]) -> dict[str, Any]:
        """The parameters `recall_words` takes for the question's words."""

    @abstractmethod
    def _breaks_active_identity(self, exc: Exception) -> bool:
        """Whether a driver's integrity error is the one-active-fact-per-identity index."""

    @abstractmethod
    def _run_migration(self, db: DB, migration: Migration) -> None: ...

    def _lock(self, db: DB, *parts: str) -> None:
        """Hold a lock named by `parts` until the transaction ends (re-entrant in it)."""
        return None  # nothing to do unless the backend says otherwise

    def _check_can_migrate(self, db: DB) -> None:
        """Raise, saying what to do, if this database cannot take the migrations it lacks."""
        return None  # nothing to do unless the backend says otherwise

    def _current_version(self, db: DB) -> int | None:
        """The schema version, read in a read transaction; None when it cannot be read
        without writing (no migrations table yet): then the migrations find out."""
        return None  # unless the backend says otherwise, `migrate` always takes the write path

    def _events_stored(self, db: DB) -> None:
        """New events were stored in this transaction: wake whoever waits for them."""
        return None  # nothing to do unless the backend says otherwise

    def _erase(
        self, db: DB, scope: Mapping[str, Any], statements: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> dict[str, int]:
        """Run the deletes of an erase (named statements with their parameters) in order;
        returns the rows each deleted. Every process's vector index (`vector_cache`) is told
        first, so that it drops the scope's vectors on its next lookup."""
        self._run(db, "note_erased_vectors", scope)
        return {query: int(self._run(db, query, params).rowcount) for query, params in statements}

    def forget_erased(self) -> None:
        """After an erase: make sure no copy of the erased rows stays in the database's own
        files, where the backend can."""
        return None  # unless the backend says otherwise

    def _store_vectors(self, db: DB, params: list[dict[str, Any]]) -> int:
        """Store the identity vectors of facts (fact id, model, text hash, vector); returns
        how many facts got one."""
        return self._many(db, "insert_fact_vector", params)

    def _vectors_written(self, dims: set[int]) -> None:
        """A plan stored identity vectors of these dimensions."""
        return None  # nothing to do unless the backend says otherwise

    def _after_commit(self, work: Callable[[], None]) -> None:
        """Run housekeeping `work` once this thread's transaction has committed."""
        work()  # SQLite: writers take turns, so inside the transaction it waits for no one

    def _facts_inserted(self, db: DB, fact_ids: Sequence[str]) -> None:
        """Index the words of facts just inserted in `db`'s transaction, in insertion order.
        Every writer of new facts (`insert_fact`) calls it once it has inserted them."""
        return None  # PostgreSQL's fact_terms trigger does it

    def _hold_claims(self) -> None:
        """Before claiming: make sure others can tell that this store is alive."""
        return None  # without sessions to watch, the process and the heartbeat tell

    def _session_gone(self, token: str) -> bool | None:
        """Whether the connection of the store that made claims under `token` is gone; None
        when the backend cannot tell (then the claimer's process, or the lease, decides)."""
        return None

    def wait_for_events(self, timeout: float, stop: threading.Event) -> bool:
        """Without notifications: wait out the timeout (or the stop); the caller polls."""
        stop.wait(timeout)
        return False

    def close(self) -> None:
        """Close every connection this store opened, in every thread. Idempotent."""
        self._db.close()

    # -- small helpers -----------------------------------------------------------------------------
    def _run(self, db: DB, query: str, params: Mapping[str, Any] | None = None) -> Any:
        return db.execute(self.queries[query], params or {})

    def _one(self, db: DB, query: str, params: Mapping[str, Any] | None = None) -> Any:
        row = self._run(db, query, params).fetchone()
        if row is None:  # pragma: no cover - every caller's query returns a row
            raise StoreError(f"query {query} returned nothing")
        return row

    def _read(self, query: str, params: Mapping[str, Any]) -> list[Any]:
        """All rows of one named query, one statement that is a transaction of its own (or
        part of the current one)."""
        with self._db.statement() as db:
            return list(self._run(db, query, params).fetchall())

    def _write(self, query: str, params: Mapping[str, Any]) -> int:
        with self._tx() as db:
            return int(self._run(db, query, params).rowcount)

    # -- lifecycle ---------------------------------------------------------------------------------
    # The version this store's `migrate` found and moved on from (0: a new database), or None
    # when it found the schema up to date (or another store migrated it meanwhile).
    migrated_from: int | None = None

    def migrate(self) -> None:
        """Apply the migrations this database lacks, in order; a no-op when up to date.

        The version is read first where the backend can: an up-to-date database is then
        opened without a write (a read-only one is served, and a reader does not wait for a
        writer's lock), and one that cannot take its migrations says so before any write."""
        latest = self.migrations[-1].version
        with self._tx(write=False) as db:
            current = self._current_version(db)
            if current is not None:
                self._refuse_newer(current, latest)
                if current == latest:
                    return
                self._check_can_migrate(db)
        with self._tx() as db:
            # One migrating store at a time, so that stores started at once on a fresh
            # database do not race to create the same tables.
            self._lock(db, "distill", "migrations")
            self._run(db, "create_migrations_table")
            current = int(self._one(db, "schema_version")["version"])
            self._refuse_newer(current, latest)
            if current < latest:
                self._check_can_migrate(db)
            if current < latest:
                self.migrated_from = current
            for migration in self.migrations:
                if migration.version <= current:
                    continue
                self._run_migration(db, migration)
                # A record for people, as text on every backend (not through the codec).
                params = {"version": migration.version, "applied_at": rows.ts(datetime.now(UTC))}
                self._run(db, "record_migration", params)

    def _refuse_newer(self, current: int, latest: int) -> None:
        if current > latest:
            raise StoreError(
                f"the database at {self.where} has schema version {current}, but this "
                f"distill knows only up to {latest}; upgrade distill "
                "(pip install --upgrade distill)"
            )

    def schema_version(self) -> int:
        with self._tx(write=False) as db:
            return int(self._one(db, "schema_version")["version"])

    def serialised(self, project: str, subject: str) -> AbstractContextManager[None]:
        """A write transaction holding the subject's lock, taken before anything is read."""
        return self._serialised(project, subject)

    @contextmanager
    def _serialised(self, project: str, subject: str) -> Iterator[None]:
        with self._tx() as db:
            self._lock(db, "subject", project, subject)
            yield

    def dry_run(self) -> AbstractContextManager[None]:
        """A transaction in which everything happens as usual and that is always rolled back:
        whatever runs inside sees its own writes, and nobody else ever sees them."""
        return self._dry_run()

    @contextmanager
    def _dry_run(self) -> Iterator[None]:
        with self._tx(rollback=True):
            yield
