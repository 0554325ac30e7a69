"""Rows ↔ models for procedures, mentions and topics, and the writing of their actions, on
every backend (ids and instants through the backend's `Codec`, as `rows` does).

A revision changes the row only if it is still the version the pass read (a procedure's
`updated_at`, a topic's status); otherwise the plan is refused whole, as a fact revised
meanwhile refuses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from distill.adapters.store.rows import Codec, Params, Row, dumps, loads
from distill.core.cortex_plan import CortexAction, RecordMentions, WriteProcedure, WriteTopic
from distill.core.patterns import Mention, Procedure, Topic
from distill.errors import IntegrityViolation

if TYPE_CHECKING:
    from distill.adapters.store.sql_base import DB
    from distill.adapters.store.sql_store import SqlStore


def procedure_params(p: Procedure, c: Codec) -> Params:
    return {
        "id": c.id(p.id),
        "project": p.project,
        "subject": p.subject,
        "action_a": p.action_a,
        "action_b": p.action_b,
        "status": str(p.status),
        "support": p.support,
        "successes": p.successes,
        "failures": p.failures,
        "precondition": p.precondition,
        "source_event_ids": dumps(list(p.source_event_ids)),
        "created_at": c.time(p.created_at),
        "updated_at": c.time(p.updated_at),
    }


def procedure_from_row(row: Row, c: Codec) -> Procedure:
    return Procedure(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        action_a=row["action_a"],
        action_b=row["action_b"],
        status=row["status"],
        support=row["support"],
        successes=row["successes"],
        failures=row["failures"],
        precondition=row["precondition"],
        source_event_ids=tuple(loads(row["source_event_ids"])),
        created_at=c.read_time(row["created_at"]),
        updated_at=c.read_time(row["updated_at"]),
    )


def mention_params(m: Mention, c: Codec) -> Params:
    return {
        "event_id": c.id(m.event_id),
        "entity": m.entity,
        "project": m.project,
        "subject": m.subject,
        "name": m.name,
        "origin": str(m.origin),
        "recorded_at": c.time(m.recorded_at),
    }


def mention_from_row(row: Row, c: Codec) -> Mention:
    return Mention(
        event_id=c.read_id(row["event_id"]),
        entity=row["entity"],
        project=row["project"],
        subject=row["subject"],
        name=row["name"],
        origin=row["origin"],
        recorded_at=c.read_time(row["recorded_at"]),
    )


def topic_params(t: Topic, c: Codec) -> Params:
    return {
        "id": c.id(t.id),
        "project": t.project,
        "subject": t.subject,
        "name": t.name,
        "members": dumps(list(t.members)),
        "names": dumps(list(t.names)),
        "embedding": None if t.embedding is None else dumps(list(t.embedding)),
        "named_by": t.named_by,
        "status": str(t.status),
        "created_at": c.time(t.created_at),
        "retired_at": c.time(t.retired_at),
    }


def topic_from_row(row: Row, c: Codec) -> Topic:
    embedding = loads(row["embedding"])
    return Topic(
        id=c.read_id(row["id"]),
        project=row["project"],
        subject=row["subject"],
        name=row["name"],
        members=tuple(loads(row["members"])),
        names=tuple(loads(row["names"])),
        embedding=None if embedding is None else tuple(embedding),
        named_by=row["named_by"],
        status=row["status"],
        created_at=c.read_time(row["created_at"]),
        retired_at=c.read_time(row["retired_at"]),
    )


def write_cortex(store: SqlStore, db: DB, action: CortexAction) -> None:
    """Write one action of the procedures or topics pass, inside the plan's transaction."""
    q, c = store.queries, store.codec
    if isinstance(action, RecordMentions):
        store._many(db, "insert_mention", [mention_params(m, c) for m in action.mentions])
        return
    if isinstance(action, WriteProcedure):
        params: dict[str, Any] = procedure_params(action.after, c)
        what = f"procedure {action.after.name} ({action.after.id})"
        if action.before is None:
            _insert(store, db, "insert_procedure", params, what)
            return
        params["before_updated_at"] = c.time(action.before.updated_at)
        if db.execute(q["update_procedure"], params).rowcount != 1:
            raise IntegrityViolation(f"{what} changed since it was read; run again")
        return
    assert isinstance(action, WriteTopic)
    params = topic_params(action.after, c)
    what = f"topic {action.after.name} ({action.after.id})"
    if action.before is None:
        _insert(store, db, "insert_topic", params, what)
        return
    params["before_status"] = str(action.before.status)
    if db.execute(q["update_topic"], params).rowcount != 1:
        raise IntegrityViolation(f"{what} changed since it was read; run again")


def _insert(store: SqlStore, db: DB, query: str, params: Params, what: str) -> None:
    try:
        db.execute(store.queries[query], params)
    except store.integrity_errors as exc:
        raise IntegrityViolation(f"{what} exists already: it was made meanwhile ({exc})") from exc
