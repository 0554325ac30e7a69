"""The SQLite file a store is pointed at, looked at before anything is written to it.

A path names one of four things:

- nothing yet, or an empty file: Distill creates its tables there, as it always has;
- a Distill database (it has Distill's first tables): opened, and migrated if it is behind;
- another application's database: refused, naming what was found, rather than adding
  Distill's tables beside the application's own;
- something that is not a SQLite database: refused with SQLite's own words.

The look is a `mode=ro` connection that reads the schema and is closed at once, so a refused
file keeps its bytes and its modification time (the regular connections would switch it to
WAL on opening, which writes its header), and no file is left beside it.

**Read-only.** A database is opened read-only when asked (``?mode=ro`` on its path or URL,
or `read_only=True`) or when this user cannot write it: the file itself, or the folder in
which SQLite must create the -wal and -shm files beside it. Reads are served; a write fails
at once saying why, and so does a database that would need a migration first. A WAL database
in a folder this user cannot write, whose -wal and -shm files are gone (its last writer closed
cleanly), can only be opened `immutable`: SQLite then reads the file without the shared memory
that coordinates readers with a writer, which is sound because a writer would have to create
those files in that folder first.

**Options** ride on the path as a query string, so that one string (``--db``,
``DISTILL_DATABASE_URL``, ``Memory(url=...)``) says everything:
``sqlite:///memory.db?busy_timeout=120&mode=ro``. Constructor keywords override them.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import parse_qsl

from distill.errors import ConfigurationError, StoreError

MEMORY = ":memory:"
# Seconds a writer waits for SQLite's write lock before failing. A job's transaction commits
# in well under a second and migrating a large file takes a few, so the wait only runs out
# when something holds the lock for a whole run (a dry run, a copy, an open sqlite3 shell),
# which waiting longer would not cure; a person at a terminal hears within half a minute.
BUSY_TIMEOUT_S = 30.0
# The tables Distill's first migration creates: a file that has them all is Distill's.
DISTILL_TABLES = frozenset({"schema_migrations", "events", "jobs", "facts"})
SHOWN_NAMES_MAX = 8  # names of another application's tables listed in the refusal
OPTIONS = ("busy_timeout", "mode")


@dataclass(frozen=True)
class SqliteFile:
    """Where a SQLite store's database is, how to open it, and what was found there."""

    path: str  # the file as given, without options (":memory:" for an in-memory database)
    busy_timeout: float  # seconds a writer waits for the write lock
    read_only: str | None = None  # why writes are refused, or None when they are not
    new: bool = True  # no tables yet: the migrations create them
    immutable: bool = False  # read without -shm (see the module's docstring)

    @property
    def memory(self) -> bool:
        return self.path == MEMORY

    @cached_property
    def uri(self) -> str:
        """What `sqlite3.connect(..., uri=True)` opens (made absolute once: every thread's
        connection opens the same file, whatever the working directory is by then)."""
        if self.memory:
            return MEMORY
        query = "?mode=ro&immutable=1" if self.immutable else "?mode=ro" if self.read_only else ""
        return Path(self.path).absolute().as_uri() + query


def open_file(spec: str, busy_timeout: float | None, read_only: bool | None) -> SqliteFile:
    """Look at the database `spec` names (a path, with options if any) without writing.

    Raises `ConfigurationError` for bad options and for another application's database,
    `StoreError` for a file SQLite cannot read or a read-only database with nothing in it.
    """
    path, options = split_options(spec)
    timeout = _busy_timeout(options.get("busy_timeout"), spec)
    if busy_timeout is not None:
        timeout = _busy_timeout(str(busy_timeout), spec)
    asked = options.get("mode") == "ro" if read_only is None else read_only
    if path == MEMORY:
        if asked:
            raise ConfigurationError("an in-memory SQLite database cannot be read-only")
        return SqliteFile(path, timeout)
    if os.path.isdir(path):
        raise ConfigurationError(
            f"{path} is a folder: give the SQLite database a file name in it "
            f"({os.path.join(path, 'memory.db')}, say)"
        )
    why = "opened with mode=ro" if asked else _unwritable(path)
    if not os.path.exists(path):
        if asked:
            raise StoreError(f"there is no SQLite database at {path} to open read-only")
        return SqliteFile(path, timeout)  # SQLite creates it (or says why it cannot)
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        return _empty(path, timeout, why)
    immutable = why is not None and _at_rest(path) and not _folder_writable(path)
    found = SqliteFile(path, timeout, why, new=False, immutable=immutable)
    schema = _schema(found)
    if not schema:
        return _empty(path, timeout, why)
    tables = {name for kind, name in schema if kind == "table"}
    if not DISTILL_TABLES.issubset(tables):
        raise ConfigurationError(
            f"the SQLite file {path} is not a distill database: it has {_listed(schema)} and "
            "no distill schema; distill will not add its tables to another application's "
            "database (nothing was written): give distill a new or empty file"
        )
    return found


def _empty(path: str, timeout: float, read_only: str | None) -> SqliteFile:
    """An empty file: the migrations create the tables, if they may write there."""
    if read_only is not None:
        raise StoreError(
            f"the SQLite database at {path} is empty and read-only ({read_only}): there is "
            "nothing to read, and distill cannot create its tables there"
        )
    return SqliteFile(path, timeout)


def split_options(spec: str) -> tuple[str, dict[str, str]]:
    """The path and the options after its last `?`, when that part reads as options."""
    path, mark, query = spec.rpartition("?")
    if not mark or not query or "=" not in query:
        return spec, {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        return spec, {}  # a `?` that is part of the file's name
    options = dict(pairs)
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigurationError(
            f"unknown SQLite option {unknown[0]!r} in {spec!r}: the options are "
            "busy_timeout=SECONDS and mode=ro"
        )
    if options.get("mode", "ro") != "ro":
        raise ConfigurationError(
            f"unknown SQLite mode {options['mode']!r} in {spec!r}: mode=ro opens the database "
            "read-only; leave it out to read and write"
        )
    return path or MEMORY, options


def _busy_timeout(given: str | None, spec: str) -> float:
    if given is None:
        return BUSY_TIMEOUT_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 86_400:  # SQLite takes milliseconds as a 32-bit int
        raise ConfigurationError(
            f"busy_timeout in {spec!r} must be a number of seconds from 0 to 86400, not {given!r}"
        )
    return seconds


def _unwritable(path: str) -> str | None:
    """Why this user cannot write the database at `path`, or None if it can (or it does not
    exist yet: then creating it says)."""
    if not os.path.exists(path):
        return None
    if not os.access(path, os.W_OK):
        return "this user cannot write the file"
    if not _folder_writable(path) and not all(
        os.access(path + suffix, os.W_OK) for suffix in ("-wal", "-shm")
    ):
        return "this user cannot write its folder, where SQLite keeps the -wal and -shm files"
    return None


def _folder_writable(path: str) -> bool:
    return os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def _at_rest(path: str) -> bool:
    """Whether no connection is using the file, nor crashed mid-write: no -wal, -shm or
    -journal beside it (SQLite deletes them when the last connection closes)."""
    return not any(os.path.exists(path + suffix) for suffix in ("-wal", "-shm", "-journal"))


def _schema(file: SqliteFile) -> list[tuple[str, str]]:
    """The (type, name) of every table, index, view and trigger the file holds, read through
    a read-only connection."""
    # Read-only either way; `immutable` when the file is at rest, so that the look does not
    # leave the -wal and -shm files that any reader of a WAL database creates.
    uri = file.uri if file.read_only else f"{file.uri}?mode=ro"
    if _at_rest(file.path) and not file.immutable:
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=file.busy_timeout)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the SQLite database at {file.path}: {exc}") from exc
    try:
        return [
            (str(kind), str(name))
            for kind, name in conn.execute(
                "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        ]
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the SQLite database at {file.path}: {exc}") from exc
    finally:
        conn.close()


def _listed(schema: list[tuple[str, str]]) -> str:
    """'tables orders, users and views totals' (each kind's names sorted, a few shown)."""
    parts = []
    for kind in ("table", "view", "index", "trigger"):
        names = sorted(name for k, name in schema if k == kind)
        if not names:
            continue
        shown = ", ".join(names[:SHOWN_NAMES_MAX])
        more = f" and {len(names) - SHOWN_NAMES_MAX} more" if len(names) > SHOWN_NAMES_MAX else ""
        plural = "indexes" if kind == "index" else f"{kind}s"
        parts.append(f"{plural if len(names) > 1 else kind} {shown}{more}")
    return " and ".join(parts)
