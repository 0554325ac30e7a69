"""Identifiers: 32 hex characters that sort by creation time within a process.

48 bits of milliseconds since the epoch, then a per-process counter and random bits, so
audit entries written in the same millisecond still list in the order they were made.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time

_counter = itertools.count()
_lock = threading.Lock()
_process = secrets.randbits(32)


def new_id() -> str:
    with _lock:
        sequence = next(_counter) & 0xFFFFFFFF
    millis = time.time_ns() // 1_000_000
    return f"{millis & 0xFFFFFFFFFFFF:012x}{sequence:08x}{_process:08x}{secrets.randbits(16):04x}"
