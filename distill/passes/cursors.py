"""Cursors, for the passes that walk an append-only stream of a scope (derive's votes,
topics' events): a position in the stream, written `at|id`, moved by a `MoveCursor` action in
the transaction that applies what the pass derived from the items it passes, so that it
never passes work that was not written. A cursor fits a stream because its items never
change once written; the passes that read memories, whose text may change, use the
extraction watermark instead (`core.watermark`, `passes.backlog`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from distill.core.passes import Scope
from distill.core.plan import MoveCursor

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def position_key(position: str) -> tuple[datetime, str]:
    """A position (``at|id``) as what orders positions: the instant, then the item's id."""
    at, _, item = position.partition("|")
    return datetime.fromisoformat(at), item


def cursor_move(
    scope: Scope, cursor_pass: str, before: str | None, after: str, at: datetime, reason: str
) -> MoveCursor:
    """The move of a pass's cursor from where it was read (`before`) past a batch (`after`),
    signed by the pass."""
    return MoveCursor(
        scope.project, scope.subject, cursor_pass, before, after, at, reason, cursor_pass
    )
