"""The SQLite file a person points Distill at: another writer holding the lock, another
application's database, a database this user may only read.

Waits are kept short with `busy_timeout` (a few tenths of a second) so that these tests
take about as long as the ones around them. The holder of the write lock is a plain sqlite3
connection (in this process or in a child process), which is what another program is.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.store import sqlite_lock
from distill.adapters.store.queries import load_migrations, load_queries
from distill.adapters.store.sqlite import SqliteStore
from distill.adapters.store.sqlite_connection import add_functions
from distill.errors import ConfigurationError, StoreError
from distill.export import export_lines
from tests.factories import T0, make_event

SHORT_WAIT_S = 0.3  # the busy timeout of a writer that is meant to give up
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
ROOT_IGNORES_CHMOD = "runs as root, and root may write a file whatever its mode"


def fingerprint(path: Path) -> tuple[bytes, int, list[str]]:
    """A file's bytes, its modification time and the names beside it."""
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


@pytest.fixture
def distill_db(tmp_path: Path) -> Iterator[Path]:
    """An up-to-date Distill database with one event and one fact, closed again."""
    path = tmp_path / "memory.db"
    with Memory(path, embedder=HashingEmbedder()) as mem:
        mem.add_event(subject="alice", text="Alice lives in Paris", occurred_at=T0)
        mem.consolidate()
    yield path


@pytest.fixture
def lock_holder(distill_db: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection holding the database's write lock for the whole test."""
    conn = sqlite3.connect(distill_db, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    yield conn
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    conn.close()


# -- a writer kept waiting -------------------------------------------------------------------------
def test_a_writer_that_gives_up_says_who_holds_the_lock_how_long_it_waited_and_how_to_wait_longer(
    distill_db: Path, lock_holder: sqlite3.Connection
) -> None:
    with SqliteStore(distill_db, busy_timeout=SHORT_WAIT_S) as store:
        started = time.monotonic()
        with pytest.raises(StoreError) as refused:
            store.append_events([make_event()], T0)
        waited = time.monotonic() - started
    message = str(refused.value)
    assert f"the SQLite database at {distill_db} is locked by another writer" in message
    assert f"this process (pid {os.getpid()})" in message  # /proc/locks names the holder
    assert "gave up after waiting 0.3 s" in message
    assert "?busy_timeout=SECONDS" in message and "now 0.3" in message
    assert SHORT_WAIT_S <= waited < SHORT_WAIT_S + 1.0


def test_a_holder_in_another_process_is_named_by_its_pid_and_command(
    distill_db: Path, tmp_path: Path
) -> None:
    command = [sys.executable, "-c", HOLD_THE_LOCK, str(distill_db)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
            store = SqliteStore(distill_db, busy_timeout=SHORT_WAIT_S)
            with store, pytest.raises(StoreError, match="locked by another writer") as refused:
                store.append_events([make_event()], T0)
        finally:
            holder.kill()
    if not Path("/proc/locks").exists():
        pytest.skip("no /proc/locks on this system: the holder cannot be named")
    assert f"pid {holder.pid} (" in str(refused.value)
    assert "-c import sqlite3" in str(refused.value)  # its command line, on one line


HOLD_THE_LOCK = """import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(60)
"""


def test_without_the_systems_word_the_running_consolidations_are_named(
    distill_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_lock, "write_lock_holders", lambda path: [])
    with (
        SqliteStore(distill_db) as consolidating,
        SqliteStore(distill_db, busy_timeout=SHORT_WAIT_S) as waiting,
    ):
        consolidating.append_events([make_event()], T0)
        assert len(consolidating.claim_jobs(T0, 10, 5)) == 1
        holder = sqlite3.connect(distill_db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError) as refused:
                waiting.append_events([make_event()], T0)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    message = str(refused.value)
    owner = f"pid {os.getpid()} on {socket.gethostname()} (1 running job(s) since"
    assert f"probably a running consolidation, {owner}" in message


def test_nobody_to_name_is_said_too(
    distill_db: Path, lock_holder: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_lock, "write_lock_holders", lambda path: [])
    store = SqliteStore(distill_db, busy_timeout=SHORT_WAIT_S)
    with store, pytest.raises(StoreError, match="distill cannot tell which"):
        store.append_events([make_event()], T0)


def test_a_long_wait_is_logged_once_and_may_still_succeed(
    distill_db: Path,
    lock_holder: sqlite3.Connection,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(sqlite_lock, "BUSY_WARN_AFTER_S", 0.05)
    release = threading.Timer(0.4, lambda: lock_holder.execute("ROLLBACK"))
    with SqliteStore(distill_db, busy_timeout=10) as store:
        caplog.set_level(logging.WARNING, logger="distill")
        release.start()
        try:
            store.append_events([make_event()], T0)
        finally:
            release.join()
        assert store.counts(None).events == 2
    warnings = [r for r in caplog.records if r.name == sqlite_lock.__name__]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    text = warnings[0].getMessage()
    assert "locked by another writer: this process" in text
    assert re.search(r"waiting up to 9\.\d s more for it \(busy_timeout=10\)$", text)


def test_a_short_wait_is_silent(
    distill_db: Path, lock_holder: sqlite3.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Timer(0.05, lambda: lock_holder.execute("ROLLBACK"))
    with SqliteStore(distill_db) as store:
        caplog.set_level(logging.WARNING, logger="distill")
        release.start()
        store.append_events([make_event()], T0)
        release.join()
    assert not [r for r in caplog.records if r.name == sqlite_lock.__name__]


def test_a_reader_neither_takes_nor_waits_for_the_write_lock(
    distill_db: Path, lock_holder: sqlite3.Connection
) -> None:
    """Opening an up-to-date database used to take the write lock (to migrate), so every
    read command waited for a dry run to end."""
    started = time.monotonic()
    with SqliteStore(distill_db, busy_timeout=SHORT_WAIT_S) as store:
        assert [f.text for f in store.facts("default", "alice", False, None)] == [
            "Alice lives in Paris"
        ]
    assert time.monotonic() - started < SHORT_WAIT_S


def test_the_busy_timeout_comes_from_the_path_or_the_keyword(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SqliteStore(path) as store:
        assert store._db.raw().execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    with SqliteStore(f"{path}?busy_timeout=2.5") as store:
        assert store.path == str(path)
        assert store._db.raw().execute("PRAGMA busy_timeout").fetchone()[0] == 2_500
    with SqliteStore(f"{path}?busy_timeout=2.5", busy_timeout=0.5) as store:
        assert store._db.raw().execute("PRAGMA busy_timeout").fetchone()[0] == 500
    with Memory(f"sqlite:///{path}?busy_timeout=7", embedder=HashingEmbedder()) as mem:
        assert mem.store._db.raw().execute("PRAGMA busy_timeout").fetchone()[0] == 7_000  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("suffix", "complaint"),
    [
        ("?busy_timeout=soon", "busy_timeout in .* must be a number of seconds"),
        ("?busy_timeout=-1", "busy_timeout in .* must be a number of seconds"),
        ("?mode=rw", "unknown SQLite mode 'rw'"),
        ("?timeout=5", "unknown SQLite option 'timeout'.*busy_timeout=SECONDS and mode=ro"),
    ],
)
def test_bad_options_are_refused_before_anything_is_opened(
    tmp_path: Path, suffix: str, complaint: str
) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        SqliteStore(f"{tmp_path / 'm.db'}{suffix}")
    assert list(tmp_path.iterdir()) == []


def test_a_question_mark_that_is_part_of_a_file_name_stays_in_it(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "what?.db") as store:
        assert store.path == str(tmp_path / "what?.db")
    assert (tmp_path / "what?.db").exists()


# -- another application's database ----------------------------------------------------------------
@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_another_applications_database_is_refused_and_left_as_it_was(
    tmp_path: Path, journal: str
) -> None:
    path = tmp_path / "app.db"
    app = sqlite3.connect(path)
    app.execute(f"PRAGMA journal_mode = {journal}")
    app.executescript(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER);"
        "CREATE INDEX orders_by_user ON orders (user_id);"
        "INSERT INTO users (name) VALUES ('ann');"
    )
    app.close()
    before = fingerprint(path)
    time.sleep(0.01)  # so that a write would show in the modification time
    with pytest.raises(ConfigurationError) as refused:
        SqliteStore(path)
    assert str(refused.value) == (
        f"the SQLite file {path} is not a distill database: it has tables orders, users and "
        "index orders_by_user and no distill schema; distill will not add its tables to "
        "another application's database (nothing was written): give distill a new or empty "
        "file"
    )
    with pytest.raises(ConfigurationError, match="not a distill database"):
        Memory(path, embedder=HashingEmbedder())
    assert fingerprint(path) == before


def test_a_schema_migrations_table_of_another_framework_is_not_distills(tmp_path: Path) -> None:
    path = tmp_path / "rails.db"
    app = sqlite3.connect(path)
    app.executescript(
        "CREATE TABLE schema_migrations (version TEXT PRIMARY KEY);"
        "INSERT INTO schema_migrations VALUES ('20240101120000');"
        "CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT);"
    )
    app.close()
    before = fingerprint(path)
    with pytest.raises(ConfigurationError, match="tables events, schema_migrations and no"):
        SqliteStore(path)
    assert fingerprint(path) == before


def test_a_file_that_is_not_a_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("groceries: milk, eggs\n" * 200)
    before = fingerprint(path)
    with pytest.raises(StoreError, match=f"cannot read the SQLite database at {path}: .*database"):
        SqliteStore(path)
    assert fingerprint(path) == before


@pytest.mark.parametrize("how", ["new path", "empty file", "database without tables"])
def test_a_new_path_or_an_empty_database_is_created_and_migrated(tmp_path: Path, how: str) -> None:
    path = tmp_path / "m.db"
    if how == "empty file":
        path.touch()
    elif how == "database without tables":
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 3")  # writes the header: a valid, empty database
        conn.close()
        assert path.stat().st_size > 0
    with SqliteStore(path) as store:
        assert store.schema_version() == load_migrations("sqlite")[-1].version
        store.append_events([make_event()], T0)
    with SqliteStore(path) as again:  # and it is Distill's from now on
        assert again.counts(None).events == 1


# -- a database this user may only read ------------------------------------------------------------
def read_everything(mem: Memory) -> dict[str, object]:
    """What `facts`, `history`, `status`, `audit`, `conflicts` and `export` read."""
    [fact] = mem.facts("alice")
    return {
        "facts": [f.text for f in mem.facts("alice")],
        "history": mem.history(fact.id).fact.id,
        "status": mem.status().counts.events,
        "audit": len(mem.audit()),
        "conflicts": mem.conflicts(),
        "export": [line["type"] for line in export_lines(mem.store, "default")],
    }


def test_a_database_opened_read_only_is_read_and_refuses_writes(distill_db: Path) -> None:
    with Memory(distill_db, embedder=HashingEmbedder()) as writable:
        expected = read_everything(writable)
    before = distill_db.read_bytes()
    with Memory(f"sqlite:///{distill_db}?mode=ro", embedder=HashingEmbedder()) as mem:
        assert mem.store.file.read_only == "opened with mode=ro"  # type: ignore[attr-defined]
        assert read_everything(mem) == expected
        with pytest.raises(StoreError) as refused:
            mem.add_event(subject="bob", text="Bob is here")
        with pytest.raises(StoreError, match="read-only"):
            mem.consolidate()
    assert str(refused.value) == (
        f"the SQLite database at {distill_db} is read-only (opened with mode=ro), and this "
        "writes to it; nothing was written"
    )
    assert distill_db.read_bytes() == before


def test_a_read_only_database_that_needs_a_migration_says_so(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    add_functions(old)  # as the store does
    old.execute(load_queries("sqlite")["create_migrations_table"])
    previous = load_migrations("sqlite")[:-1]
    for migration in previous:
        old.executescript(migration.sql)
        old.execute("INSERT INTO schema_migrations VALUES (?, 'then')", (migration.version,))
    old.commit()
    old.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as refused:
        SqliteStore(path, read_only=True)
    assert str(refused.value) == (
        f"the SQLite database at {path} has schema version {previous[-1].version} and this "
        f"distill needs version {previous[-1].version + 1}, but it is read-only (opened with "
        "mode=ro): open it once with write access, for example with `distill migrate`, to "
        "bring it up to date"
    )
    assert path.read_bytes() == before
    with SqliteStore(path) as writable:  # with write access it is brought up to date
        assert writable.schema_version() == previous[-1].version + 1


def test_read_only_needs_something_to_read(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"there is no SQLite database at .* to open read-only"):
        SqliteStore(f"{tmp_path / 'missing.db'}?mode=ro")
    (tmp_path / "empty.db").touch()
    with pytest.raises(StoreError, match="is empty and read-only"):
        SqliteStore(tmp_path / "empty.db", read_only=True)
    with pytest.raises(ConfigurationError, match="in-memory SQLite database cannot be read-only"):
        SqliteStore(":memory:?mode=ro")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


@pytest.mark.skipif(ROOT, reason=ROOT_IGNORES_CHMOD)
def test_a_file_this_user_cannot_write_is_read_and_refuses_writes(distill_db: Path) -> None:
    distill_db.chmod(0o444)
    try:
        with Memory(distill_db, embedder=HashingEmbedder()) as mem:
            assert mem.store.file.read_only == "this user cannot write the file"  # type: ignore[attr-defined]
            assert read_everything(mem)["facts"] == ["Alice lives in Paris"]
            with pytest.raises(StoreError, match=r"read-only \(this user cannot write the file\)"):
                mem.add_event(subject="bob", text="Bob is here")
    finally:
        distill_db.chmod(0o644)


@pytest.mark.skipif(ROOT, reason=ROOT_IGNORES_CHMOD)
def test_a_database_in_a_folder_this_user_cannot_write_is_read(distill_db: Path) -> None:
    folder = distill_db.parent
    assert not Path(f"{distill_db}-wal").exists()  # its last writer closed cleanly
    folder.chmod(0o555)
    try:
        with Memory(distill_db, embedder=HashingEmbedder()) as mem:
            assert "cannot write its folder" in str(mem.store.file.read_only)  # type: ignore[attr-defined]
            assert read_everything(mem)["facts"] == ["Alice lives in Paris"]
            with pytest.raises(StoreError, match="read-only"):
                mem.add_event(subject="bob", text="Bob is here")
    finally:
        folder.chmod(0o755)
