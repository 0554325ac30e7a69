"""Identifiers: 32 hex characters that sort by creation time and cannot be guessed.

    48 bits  milliseconds since the epoch     the job queue and the audit trail list by id
    16 bits  a per-process counter            ids made in one millisecond keep their order
    64 bits  fresh random bits (`secrets`)    knowing one id tells nothing about the next

An id is not a secret (it is printed, logged and shown to whoever may read the fact), and
every read is scoped to its project, so a guessed id of another project is "not found".
The random half is there so that an id cannot be guessed from another one at all: 64 bits
is the floor the issue asked for, and the most that fits beside the time and the counter.
A person may type a unique prefix instead of the whole id (`ID_PREFIX_RE`), as with git.
"""

from __future__ import annotations

import itertools
import re
import secrets
import threading
import time

ID_LENGTH = 32  # hex characters of an id (and of a content hash): 128 bits
ID_PREFIX_RE = re.compile(r"[0-9a-f]{1,32}")  # what may begin an id
_counter = itertools.count()
_lock = threading.Lock()


def new_id() -> str:
    with _lock:
        sequence = next(_counter) & 0xFFFF
    millis = time.time_ns() // 1_000_000
    return f"{millis & 0xFFFFFFFFFFFF:012x}{sequence:04x}{secrets.randbits(64):016x}"
