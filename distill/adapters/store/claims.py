"""Who holds a running job, and whether they are still there.

A claim records its owner: a token naming the store that claimed it (one per open store) and
the process behind that store (host, pid, and the process's start time, because the system
may give a dead process's pid to a new one). A run that finds running jobs of another owner
asks whether that owner is gone:

- on the same host, the process is looked up: if no process has that pid with that start
  time, the claimer died (a `kill -9`, an OOM kill) and its jobs are taken back at once;
- a backend that can tell (PostgreSQL: a session-level advisory lock named by the token,
  held by the claimer's connection) also knows at once when the claimer's connection died,
  on any host;
- otherwise the heartbeat is the fallback: a claim whose heartbeat is older than the lease
  is taken back, wherever its owner was.

Finishing, failing, releasing and heartbeating a job all name the token, so a claimer whose
job was taken back cannot finish it afterwards: its transaction finds no such claim and is
rolled back.
"""

from __future__ import annotations

import os
import secrets
import socket
from functools import lru_cache

import psutil

from distill.ports import Owner

# How far two readings of one process's start time may differ (seconds). The reading is the
# boot time plus the process's start ticks, and the boot time is derived from the wall clock,
# so a clock step (NTP) moves it for every process; a new process with the same pid within
# two seconds of the dead one's start is far less likely than a small step.
START_TIME_TOLERANCE_S = 2.0


def this_process(token: str | None = None) -> Owner:
    """The owner of the claims a store of this process makes (a new token unless given)."""
    pid = os.getpid()
    return Owner(token or secrets.token_hex(16), socket.gethostname(), pid, _started(pid))


@lru_cache(maxsize=64)
def _started(pid: int) -> float:
    return float(psutil.Process(pid).create_time())


def process_alive(pid: int, started: float) -> bool:
    """Whether the process with this pid is the one that started at `started`."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:  # dead, not yet reaped by its parent
            return False
        now_started = process.create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # no right to look: assume it lives, and let the lease decide
        return True
    return bool(abs(now_started - started) <= START_TIME_TOLERANCE_S)
