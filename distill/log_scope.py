"""The scope of a log line: which project, subject, job or pass the work it tells of is for.

`scoped(project=..., job=...)` sets the fields for the code inside it (a context variable,
so each worker thread has its own); `ScopeFilter`, installed on the CLI's handler, puts
them on every record as `record.scope` (`project=a subject=u job=3f…`), and on the record's
own attributes (`record.project`, ...) for a JSON formatter an application installs.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

_FIELDS: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("distill_log_scope")
FIELDS = ("project", "subject", "job", "pass_name")


@contextmanager
def scoped(**fields: str | None) -> Iterator[None]:
    """Log lines inside carry these fields (beside the enclosing scope's)."""
    current = {**_FIELDS.get({}), **{k: v for k, v in fields.items() if v is not None}}
    token = _FIELDS.set(current)
    try:
        yield
    finally:
        _FIELDS.reset(token)


class ScopeFilter(logging.Filter):
    """Adds the scope to every record it sees (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _FIELDS.get({})
        for name in FIELDS:
            if name in fields and not hasattr(record, name):
                setattr(record, name, fields[name])
        shown = [f"{n}={getattr(record, n)}" for n in FIELDS if getattr(record, n, None)]
        record.scope = f" [{' '.join(shown)}]" if shown else ""
        return True
