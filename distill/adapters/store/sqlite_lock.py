"""Waiting for SQLite's write lock, and saying who holds it.

SQLite has one writer at a time: `BEGIN IMMEDIATE` takes the write lock, and a writer that
finds it taken waits in SQLite's busy handler, up to the busy timeout, then fails with
"database is locked". Left at that, a person waits half a minute for a bare error. So the wait
is cut in two: a short first part in silence (a job's commit takes milliseconds); then one
warning that names the holder and how much longer the writer will wait; and if the lock is
still held at the end, a `StoreError` that says who holds it, how long this writer waited, and
how to wait longer.

Who holds it: on Linux, /proc/locks lists the POSIX locks SQLite takes, with the holder's pid.
In WAL mode the write lock is byte 120 of the -shm file (`WAL_WRITE_LOCK_BYTE`); in rollback
mode, SQLite's reserved byte of the database file. The holder's command line then says what
it is (a `distill consolidate --dry-run`, a `distill copy`, the sqlite3 shell). Where the
system cannot tell (another OS, another pid namespace), the jobs table can: a running
consolidation's claims carry their owner, "pid N on host" (the store supplies them).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from distill.errors import StoreError

log = logging.getLogger(__name__)

# Seconds a writer waits in silence before it says what it waits for: far past a normal
# commit (milliseconds), and soon enough that a person is not left wondering.
BUSY_WARN_AFTER_S = 1.0
WAL_WRITE_LOCK_BYTE = 120  # the -shm file's write lock: after two index headers and a checkpoint
RESERVED_BYTE = 0x40000001  # rollback mode: the byte a writer locks in the database file
PROC_LOCKS = Path("/proc/locks")
COMMAND_SHOWN_MAX = 120  # characters of the holder's command line quoted

Suspects = Callable[[], list[str]]  # running consolidations, as "pid N on host (...)"


def begin_write(raw: sqlite3.Connection, path: str, timeout: float, suspects: Suspects) -> None:
    """`BEGIN IMMEDIATE` on `raw`, waiting at most `timeout` seconds for the write lock.

    The connection's busy timeout is `timeout` outside this call, and is left so."""
    start = time.monotonic()
    quiet = min(BUSY_WARN_AFTER_S, timeout)
    if _try_begin(raw, quiet, timeout):
        return
    holder = describe_holder(path, suspects)
    rest = timeout - (time.monotonic() - start)
    if rest > 0:
        log.warning(
            "the SQLite database at %s is locked by another writer: %s; waiting up to %.1f s "
            "more for it (busy_timeout=%g)",
            path,
            holder,
            rest,
            timeout,
        )
        if _try_begin(raw, rest, timeout):
            return
        holder = describe_holder(path, suspects)  # the one at the end may be another
    waited = time.monotonic() - start
    raise StoreError(
        f"the SQLite database at {path} is locked by another writer: {holder}; gave up after "
        f"waiting {waited:.1f} s. Let it finish, or wait longer: add ?busy_timeout=SECONDS to "
        f"the database path or URL (now {timeout:g}; the default, 30, outlasts any normal "
        "commit)"
    )


def _try_begin(raw: sqlite3.Connection, wait: float, timeout: float) -> bool:
    """Whether `BEGIN IMMEDIATE` succeeded within `wait` seconds (False: still locked)."""
    raw.execute(f"PRAGMA busy_timeout = {_ms(wait)}")
    try:
        raw.execute("BEGIN IMMEDIATE")
        return True
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise
        return False
    finally:
        raw.execute(f"PRAGMA busy_timeout = {_ms(timeout)}")


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed because another connection holds a lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def describe_holder(path: str, suspects: Suspects) -> str:
    """Who holds the write lock of the database at `path`, as well as can be told."""
    pids = write_lock_holders(path)
    if pids:
        return "; ".join(_describe_process(pid) for pid in pids)
    try:
        running = suspects()
    except Exception:  # a diagnosis must never hide the error it explains
        log.debug("could not read the running consolidations", exc_info=True)
        running = []
    if running:
        return "probably a running consolidation, " + ", ".join(running)
    return (
        "distill cannot tell which (no consolidation holds running jobs; a dry run, a copy "
        "or another program may)"
    )


def write_lock_holders(path: str) -> list[int]:
    """The pids of the processes holding the database's write lock, as /proc/locks tells
    (empty where there is no /proc/locks, or the holder is in another pid namespace)."""
    targets: dict[tuple[int, int, int], int] = {}
    for file, byte in ((path + "-shm", WAL_WRITE_LOCK_BYTE), (path, RESERVED_BYTE)):
        try:
            st = os.stat(file)
        except OSError:
            continue
        targets[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = byte
    try:
        lines = PROC_LOCKS.read_text().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        # "3: POSIX  ADVISORY  WRITE 6518 fe:00:2146561 120 120"; "-> " marks a waiter.
        fields = line.split()
        if len(fields) != 8 or fields[1] != "POSIX" or fields[3] != "WRITE":
            continue
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            first = int(fields[6])
            last = None if fields[7] == "EOF" else int(fields[7])
        except ValueError:
            continue
        locked = targets.get(key)
        if locked is None or pid <= 0 or pid in pids:
            continue
        if first <= locked and (last is None or locked <= last):
            pids.append(pid)
    return pids


def _describe_process(pid: int) -> str:
    if pid == os.getpid():
        return f"this process (pid {pid}), through another connection"
    try:
        process = psutil.Process(pid)
        command = _command(process.cmdline())
        age = time.time() - process.create_time()
    except psutil.Error:
        return f"pid {pid}"
    what = f"pid {pid} ({command}, running for {age:.0f} s)" if command else f"pid {pid}"
    if "--dry-run" in command:
        what += ": a dry run holds the write lock until it ends"
    return what


def _command(argv: list[str]) -> str:
    """A command line fit to quote: programs by their names, cut to a readable length."""
    shown = [Path(arg).name if i < 2 and "/" in arg else arg for i, arg in enumerate(argv)]
    text = " ".join(" ".join(shown).split())  # one line, whatever `-c` code it ran
    return text if len(text) <= COMMAND_SHOWN_MAX else text[: COMMAND_SHOWN_MAX - 1] + "…"
