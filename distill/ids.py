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
import os
import re
import time

ID_LENGTH = 32  # hex characters of an id (and of a content hash): 128 bits
ID_PREFIX_RE = re.compile(r"[0-9a-f]{1,32}")  # what may begin an id
# One call of a C iterator's `__next__`, which the GIL makes atomic: no lock is needed for
# two threads to get different numbers.
_counter = itertools.count()
RANDOM_BYTES = 8  # 64 bits, from the system's generator (what `secrets` reads too)


def new_id() -> str:
    """A new id. About five are made per claim a consolidation decides (its observation,
    facts, audit entries): this costs 2.5 µs, where a lock and `secrets.randbits` cost 6."""
    sequence = next(_counter) & 0xFFFF
    millis = time.time_ns() // 1_000_000
    return f"{millis & 0xFFFFFFFFFFFF:012x}{sequence:04x}" + os.urandom(RANDOM_BYTES).hex()
