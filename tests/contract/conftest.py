"""The `store` fixture: one contract suite, run against every Store backend.

A backend is three things: where a fresh, empty database for one test lives; how to open a
store on it; and how to stamp its schema version (for the "newer than this code" test).
To add a backend, add its name to `BACKENDS` and a branch to each helper below; the tests
do not change.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.llm.fake import FakeLLM
from distill.adapters.store.sqlite import SqliteStore
from distill.ports import Store
from tests.conftest import FakeClock

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where this test's fresh database lives: a file path, or a PostgreSQL URL."""
    if backend == "sqlite":
        return str(tmp_path / "distill.db")
    if backend == "postgres":
        return str(request.getfixturevalue("postgres_database"))
    raise NotImplementedError(backend)


def _open(backend: str, database: str) -> Store:
    if backend == "sqlite":
        return SqliteStore(database)
    if backend == "postgres":
        from distill.adapters.store.postgres import PostgresStore

        return PostgresStore(database)
    raise NotImplementedError(backend)


@pytest.fixture
def open_store(backend: str, database: str) -> Iterator[Callable[[], Store]]:
    """Open another store on this test's database (another connection, as another worker
    would). Every store opened through it is closed at teardown."""
    opened: list[Store] = []

    def make() -> Store:
        store = _open(backend, database)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[[], Store]) -> Store:
    return open_store()


@pytest.fixture
def memory(database: str, clock: FakeClock) -> Iterator[Memory]:
    """A Memory on this test's database, with the hashing embedder and the test's clock."""
    mem = Memory(database, embedder=HashingEmbedder(256), clock=clock)
    yield mem
    mem.close()


@pytest.fixture
def scripted_memory(database: str, clock: FakeClock) -> Iterator[Callable[..., Memory]]:
    """`make(*answers, default=...)`: a Memory on this test's database (the hashing embedder,
    the test's clock, the `text` extractor) asking a scripted model that gives `answers` in
    order, then `default` (`FakeLLM`). Every one made is closed at teardown."""
    opened: list[Memory] = []

    def make(*answers: object, default: object = "{}") -> Memory:
        llm = FakeLLM(default=default)  # type: ignore[arg-type]
        llm.enqueue(*answers)  # type: ignore[arg-type]
        mem = Memory(
            database, embedder=HashingEmbedder(256), clock=clock, llm=llm, extractor="text"
        )
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close()


@pytest.fixture
def stamp_schema_version(backend: str, database: str) -> Callable[[int], None]:
    """Record a schema version in the database behind the store's back."""

    def stamp(version: int) -> None:
        if backend == "sqlite":
            conn = sqlite3.connect(database)
            try:
                with conn:
                    conn.execute(
                        "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                        (version, "2999-01-01T00:00:00.000000+00:00"),
                    )
            finally:
                conn.close()
            return
        if backend == "postgres":
            import psycopg

            with psycopg.connect(database, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (%s, now())",
                    (version,),
                )
            return
        raise NotImplementedError(backend)

    return stamp


@pytest.fixture
def new_database(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[[str], str]:
    """Another fresh database of the backend under test, by name."""

    def make(name: str) -> str:
        if backend == "sqlite":
            return str(tmp_path / f"{name}.db")
        return str(request.getfixturevalue("make_postgres_database")())

    return make


# How the ids `open_memory` makes look: its own names, or 32 hex characters as distill's
# own ids are (SQLite packs those into 16 bytes), or both, one after the other.
ID_STYLES: dict[str, Callable[[int], str]] = {
    "named": lambda n: f"id{n:06d}",
    "hex": lambda n: f"{n:032x}",
    "mixed": lambda n: f"{n:032x}" if n % 2 else f"id{n:06d}",
}


@pytest.fixture
def open_memory() -> Iterator[Callable[..., Memory]]:
    """A Memory on a database (a path or URL, as `new_database` gives) with its own clock and
    ids (id000000, id000001, ..., or another of `ID_STYLES`), so that two memories fed the
    same steps make the same ids at the same times."""
    opened: list[Memory] = []

    def make(database: str, ids: str = "named") -> Memory:
        counter = itertools.count()
        style = ID_STYLES[ids]
        mem = Memory(
            database,
            embedder=HashingEmbedder(256),
            clock=FakeClock(),
            new_id=lambda: style(next(counter)),
        )
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close()
