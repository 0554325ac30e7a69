"""Real `distill` processes for the tests: started with a clean environment, their output
kept in a log file, and every one killed (if still running) and reaped at the end of the test.

They run the code of this checkout (tests/conftest.py puts it on `PYTHONPATH`).

`STOPPING_DISTILL` is the `distill` command line with one change, so that a test can kill it
with SIGKILL inside a job's transaction: see its comment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

DISTILL = Path(sys.executable).parent / "distill"


@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        if not self.handle.closed:
            self.handle.flush()
        return self.log.read_text(errors="replace")


@dataclass
class Processes:
    """Processes started by a test; each is killed (if still running) and reaped at the end.
    `env` is the environment of the next ones: a test may add to it before starting them."""

    tmp: Path
    env: dict[str, str]
    started: list[Proc] = field(default_factory=list)

    def start(self, args: list[str], name: str, env: dict[str, str] | None = None) -> Proc:
        log = self.tmp / f"{name}-{len(self.started)}.log"
        handle = log.open("wb")
        popen = subprocess.Popen(
            args, stdout=handle, stderr=subprocess.STDOUT, env=env or self.env, cwd=self.tmp
        )
        proc = Proc(popen, log, handle)
        self.started.append(proc)
        return proc

    def distill(self, db: str, *args: str, name: str = "distill") -> Proc:
        """`distill --db <db> <args>`, as a user runs it."""
        return self.start([str(DISTILL), "--db", db, *args], name)

    def run(self, db: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`distill --db <db> <args>` to its end, its output captured (killed and reaped
        after `timeout` seconds)."""
        return subprocess.run(
            [str(DISTILL), "--db", db, *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.tmp,
            timeout=timeout,
            check=False,
        )

    def worker(self, url: str, *options: str) -> Proc:
        return self.distill(url, "worker", *options, name="worker")

    def finish(self, proc: Proc, timeout: float = 60) -> int:
        code = proc.popen.wait(timeout=timeout)
        proc.handle.close()
        return code

    def close(self) -> None:
        for proc in self.started:
            if proc.popen.poll() is None:
                proc.popen.kill()
            proc.popen.wait(timeout=30)
            proc.handle.close()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    env.update(
        DISTILL_EMBEDDER="hashing",
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "xdg"),
        NO_COLOR="1",
    )
    procs = Processes(tmp_path, env)
    yield procs
    procs.close()


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str, every: float = 0.1
) -> None:
    """Poll `condition` every `every` seconds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


# `distill <args>` whose store stops for good right after writing the job of one subject,
# before that job's transaction commits, after saying so in a marker file (the job's id and
# how many audit entries it wrote): the test kills it there with SIGKILL. Both stores decide
# and write a job inside one transaction, `serialised(project, subject)`, which `apply`
# joins (PostgreSQL: BEGIN and the subject's advisory lock; SQLite: BEGIN IMMEDIATE, the
# write lock, with `apply` a savepoint in it); the pause is after `apply` returns, so the job's
# facts, observations and audit are written and not committed, on either backend.
# Usage: python -c STOPPING_DISTILL <subject> <marker> <distill args...>
STOPPING_DISTILL = """
import json, pathlib, sys, time
from distill.adapters.store.postgres import PostgresStore
from distill.adapters.store.sqlite import SqliteStore
from distill.service.cli import main

subject, marker = sys.argv[1:3]

def stopping(apply):
    def apply_then_stop(self, plan, job_id, audit):
        apply(self, plan, job_id, audit)
        if any(entry.subject == subject for entry in audit):
            # Written whole, then renamed: a test that sees the marker reads all of it.
            partial = pathlib.Path(marker + ".partial")
            partial.write_text(json.dumps([job_id, len(audit)]))
            partial.replace(marker)
            time.sleep(600)
    return apply_then_stop

PostgresStore.apply = stopping(PostgresStore.apply)
SqliteStore.apply = stopping(SqliteStore.apply)
sys.argv = ["distill", *sys.argv[3:]]
main()
"""


def stopping_distill(processes: Processes, subject: str, marker: Path, db: str, *args: str) -> Proc:
    """Start `distill --db <db> <args>` stopping inside the transaction of `subject`'s job."""
    program = [sys.executable, "-c", STOPPING_DISTILL, subject, str(marker)]
    return processes.start([*program, "--db", db, *args], "stopping")
