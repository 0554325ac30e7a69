"""Copying a whole store into an empty one: SQLite → PostgreSQL, PostgreSQL → SQLite, SQLite →
SQLite (or PostgreSQL → PostgreSQL), written once over both backends' named SQL.

Everything is copied, ids and times as they are: events (with their claims, idempotency keys
and embeddings), jobs and the events they hold, every version of every fact (status,
validity, `superseded_by` links, sources), identity vectors, conflict sets, observations,
aliases, rules (learned and written: a person's rules are data no pass can derive again),
procedures (with the uses agents reported, which no event holds), mentions and topics,
the audit trail, the embedding cache, the model's kept answers, and the passes' cursors
(`pass_cursors`: they name audit entries and observations, copied with their ids; derive's
marks the votes it has counted, which a copy must not count again). Not copied
(`NOT_COPIED`): `schema_migrations` (each database records its own), SQLite's
`vector_changes` and both backends' full-text indexes (SQLite's FTS5 tables, fed after each
page of facts as a plan feeds them; PostgreSQL's `fact_terms`, written by its triggers),
`api_keys` (the HTTP API's credentials belong to the deployment they were made for), and
`fact_marks` (the copy's passes read its memories again: what they decided is in the facts
and the rules).

**All or nothing.** The source is read in one snapshot (a WAL read transaction in SQLite,
REPEATABLE READ in PostgreSQL), so workers may keep running on it, and the target is written
in one transaction: a copy that fails or is interrupted leaves the target as empty as it
found it, and running it again is the way to resume. A resumable copy would need the target
to say which rows it already has and a source that does not change between runs; one
transaction costs the target's disk for the copy's duration and nothing else, which suits
the sizes an embedded store reaches.

**Only into an empty database, at the same schema.** Both stores are migrated when they are
opened; the copy then checks that each is at its backend's latest version, that every table
and column of both databases is one it knows (`TABLES`, `NOT_COPIED`), and that the target
holds no rows. A column added by a later migration that this module does not list stops the
copy with an error that names it, instead of being dropped. A test checks that each table's
read query returns, and its write query writes, exactly the columns listed here.

**Values.** Each page is read into one neutral form whatever the backend: ids and hashes as
their text and instants as aware datetimes (each read through the source's `rows.Codec`, and
written through the target's: SQLite packs them, PostgreSQL does not), JSON as canonical text
(PostgreSQL's jsonb gives it back with its own spacing and key order, and SQLite compares
JSON as text), booleans as bools, vectors as float32 arrays. A page's cursor (`after_*`) is
its last row's key as the source stores it, so paging follows the source's own order.
Identity vectors are float32 BLOBs in SQLite and pgvector values in PostgreSQL: the
PostgreSQL read queries return them as double precision arrays (exact for float4) and the
target encodes them with its own `_vector_param`, so they arrive bit for bit.

**Running jobs** in the source are copied as `pending`, unclaimed, with the attempt their
claim counted given back (as `release_jobs` does): the copy is a new database where nobody
holds them, and since a job's writes commit with its `done`, none of a running job's writes
are in the snapshot, so the copy's workers run it from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.adapters.store import rows
from distill.adapters.store.sql_base import DB
from distill.adapters.store.sql_store import SqlStore
from distill.core.plan import vector_digest
from distill.errors import IntegrityViolation, InvalidOperation, StoreError

PAGE_ROWS = 1_000  # rows per read and per bulk insert: about 2 MB of events with 384-d vectors

Progress = Callable[[str, int, int], None]  # (table, rows copied, rows in the table)


class Kind(Enum):
    """How a column's value travels between backends."""

    TEXT = "text"
    ID = "id"  # an id or hash: stored as the backend's codec says (see `rows`)
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"  # SQLite stores 0/1, PostgreSQL a boolean
    TIME = "time"  # SQLite stores integer microseconds, PostgreSQL timestamptz
    JSON = "json"  # SQLite stores text, PostgreSQL jsonb (read back as text)
    VECTOR = "vector"  # SQLite stores a float32 BLOB, PostgreSQL a pgvector value
    BYTES = "bytes"  # a BLOB or bytea either way


K = Kind  # the table list below reads better with short kinds


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]  # the primary key: pages are read in its order
    read: str  # the named query that reads one page
    write: str  # the named statement that inserts one row
    columns: Mapping[str, Kind]


# In an order that satisfies the foreign keys: events and jobs before what names them.
TABLES: tuple[Table, ...] = (
    Table(
        "events",
        ("id",),
        "copy_read_events",
        "copy_write_events",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "text": K.TEXT,
            "occurred_at": K.TIME,
            "recorded_at": K.TIME,
            "source": K.TEXT,
            "trust": K.TEXT,
            "claims": K.JSON,
            "idempotency_key": K.ID,
            "action": K.JSON,
        },
    ),
    Table(
        "jobs",
        ("id",),
        "copy_read_jobs",
        "copy_write_jobs",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "status": K.TEXT,
            "attempts": K.INT,
            "error": K.TEXT,
            "created_at": K.TIME,
            "updated_at": K.TIME,
            "not_before": K.TIME,
            "heartbeat_at": K.TIME,
            "llm_calls": K.INT,
            "prompt_tokens": K.INT,
            "completion_tokens": K.INT,
            "claim_token": K.TEXT,
            "claim_host": K.TEXT,
            "claim_pid": K.INT,
            "claim_started": K.FLOAT,
            "claimed_at": K.TIME,
        },
    ),
    Table(
        "job_events",
        ("job_id", "event_id"),
        "copy_read_job_events",
        "attach_event_to_job",
        {"job_id": K.ID, "event_id": K.ID},
    ),
    Table(
        "facts",
        ("id",),
        "copy_read_facts",
        "insert_fact",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "kind": K.TEXT,
            "predicate": K.TEXT,
            "value": K.JSON,
            "text": K.TEXT,
            "qualifiers": K.JSON,
            "attribution": K.TEXT,
            "stated": K.JSON,
            "identity_key": K.TEXT,
            "status": K.TEXT,
            "valid_from": K.TIME,
            "valid_to": K.TIME,
            "recorded_at": K.TIME,
            "retired_at": K.TIME,
            "supersedes_id": K.ID,
            "superseded_by": K.ID,
            "source_event_ids": K.JSON,
            "reinforcement_count": K.INT,
            "last_reinforced_at": K.TIME,
            "trust": K.TEXT,
            "confidence": K.FLOAT,
            "pinned": K.BOOL,
            "norm_hash": K.ID,
        },
    ),
    Table(
        "fact_sources",
        ("fact_id", "event_id"),
        "copy_read_fact_sources",
        "insert_fact_source",
        {"fact_id": K.ID, "event_id": K.ID},
    ),
    # Before fact_vectors: SQLite keeps a fact's identity vector in the cache.
    Table(
        "embedding_cache",
        ("model_id", "text_hash"),
        "copy_read_embedding_cache",
        "cache_embedding",
        {"model_id": K.TEXT, "text_hash": K.ID, "vector": K.BYTES},
    ),
    Table(
        "fact_vectors",
        ("fact_id",),
        "copy_read_fact_vectors",
        "insert_fact_vector",
        {
            "fact_id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "model_id": K.TEXT,
            "dim": K.INT,
            # The text the vector embeds (the embedding cache's key; SQLite keeps the vector
            # there). Rows written before it was recorded get a hash of the vector itself.
            "text_hash": K.ID,
            "vector": K.VECTOR,
        },
    ),
    Table(
        "conflicts",
        ("id",),
        "copy_read_conflicts",
        "insert_conflict",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "identity_key": K.TEXT,
            "kind": K.TEXT,
            "status": K.TEXT,
            "member_ids": K.JSON,
            "reason": K.TEXT,
            "created_at": K.TIME,
            "resolved_at": K.TIME,
            "kept_fact_id": K.ID,
        },
    ),
    Table(
        "observations",
        ("id",),
        "copy_read_observations",
        "insert_observation",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "event_id": K.ID,
            "fact_id": K.ID,
            "extractor": K.TEXT,
            "claim": K.JSON,
            "claim_hash": K.ID,
            "source": K.TEXT,
            "trust": K.TEXT,
            "occurred_at": K.TIME,
            "outcome": K.TEXT,
            "reason": K.TEXT,
        },
    ),
    Table(
        "aliases",
        ("project", "alias"),
        "copy_read_aliases",
        "insert_alias",
        {
            "project": K.TEXT,
            "alias": K.TEXT,
            "canonical": K.TEXT,
            "distance": K.FLOAT,
            "learned_at": K.TIME,
        },
    ),
    Table(
        "audit",
        ("id",),
        "copy_read_audit",
        "insert_audit",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "job_id": K.ID,
            "pass_name": K.TEXT,
            "action": K.TEXT,
            "reason": K.TEXT,
            "fact_id": K.ID,
            "before": K.JSON,
            "after": K.JSON,
            "at": K.TIME,
        },
    ),
    Table(
        "rules",
        ("id",),
        "copy_read_rules",
        "insert_rule",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "text": K.TEXT,
            "fingerprint": K.ID,
            "origin": K.TEXT,
            "source_fact_ids": K.JSON,
            "pass_name": K.TEXT,
            "reason": K.TEXT,
            "created_at": K.TIME,
        },
    ),
    Table(
        "procedures",
        ("id",),
        "copy_read_procedures",
        "insert_procedure",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "action_a": K.TEXT,
            "action_b": K.TEXT,
            "status": K.TEXT,
            "support": K.INT,
            "successes": K.INT,
            "failures": K.INT,
            "precondition": K.TEXT,
            "source_event_ids": K.JSON,
            "created_at": K.TIME,
            "updated_at": K.TIME,
        },
    ),
    Table(
        "mentions",
        ("event_id", "entity"),
        "copy_read_mentions",
        "insert_mention",
        {
            "event_id": K.ID,
            "entity": K.TEXT,
            "project": K.TEXT,
            "subject": K.TEXT,
            "name": K.TEXT,
            "origin": K.TEXT,
            "recorded_at": K.TIME,
        },
    ),
    Table(
        "topics",
        ("id",),
        "copy_read_topics",
        "insert_topic",
        {
            "id": K.ID,
            "project": K.TEXT,
            "subject": K.TEXT,
            "name": K.TEXT,
            "members": K.JSON,
            "names": K.JSON,
            "embedding": K.JSON,
            "named_by": K.TEXT,
            "status": K.TEXT,
            "created_at": K.TIME,
            "retired_at": K.TIME,
        },
    ),
    Table(
        "extractions",
        ("extractor", "event_id"),
        "copy_read_extractions",
        "copy_write_extractions",
        {"extractor": K.TEXT, "event_id": K.ID, "candidates": K.JSON, "created_at": K.TIME},
    ),
    Table(
        "pass_cursors",
        ("project", "subject", "pass_name"),
        "copy_read_pass_cursors",
        "copy_write_pass_cursors",
        {
            "project": K.TEXT,
            "subject": K.TEXT,
            "pass_name": K.TEXT,
            "position": K.TEXT,
            "moved_at": K.TIME,
        },
    ),
)

# Tables a database may have that are deliberately left behind, and why.
NOT_COPIED = {
    "schema_migrations": "each database records the migrations applied to itself",
    "vector_changes": "the log in-memory vector indexes catch up from, written by triggers as "
    "the vectors are inserted into the target",
    "vector_changes_pruned": "how far that log was pruned, which the target's own log was not",
    "api_keys": "the HTTP API's credentials belong to the deployment they were made for: "
    "make new ones on the copy (distill keys create)",
    "fact_terms": "PostgreSQL's posting list of the facts' words (search), written by triggers "
    "as the facts are inserted into the target",
    "fact_marks": "what the source's model passes had read (the watermark): the copy's passes "
    "read its memories once more, and what they decided is already in the facts and the rules",
    "pass_schedule": "the source's worker schedule and leases: the copy's worker runs every "
    "scheduled pass once, soon after it starts (catch-up), then on its own cadence",
    **{
        name: "SQLite's full-text index of the facts' words (FTS5 and its shadow tables), "
        "written as the facts are inserted into the target"
        for name in (
            "fact_words",
            "fact_words_config",
            "fact_words_data",
            "fact_words_docsize",
            "fact_words_idx",
            "fact_words_rows",
        )
    },
}
# Columns the database computes from the others: never read, never written.
GENERATED = {"facts": {"words": "PostgreSQL's tsvector of the fact's words (search)"}}

# What a running job becomes in the copy: pending, held by nobody.
_UNCLAIMED = {
    "status": "pending",
    "heartbeat_at": None,
    "claim_token": None,
    "claim_host": None,
    "claim_pid": None,
    "claim_started": None,
    "claimed_at": None,
}


@dataclass(frozen=True)
class CopyReport:
    rows: dict[str, int] = field(default_factory=dict)  # per table, in copy order
    running_jobs_made_pending: int = 0

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": dict(self.rows),
            "total_rows": self.total,
            "running_jobs_made_pending": self.running_jobs_made_pending,
        }


def copy_store(source: SqlStore, target: SqlStore, progress: Progress | None = None) -> CopyReport:
    """Copy every row of `source` into the empty `target`, in one target transaction.

    Raises `InvalidOperation` if the target holds any row, `StoreError` if either database
    is not at its latest schema version or has a table or column this copy does not know;
    in every case nothing is written.
    """
    tick = progress or (lambda table, done, total: None)
    for store in (source, target):
        _check_version(store)
    copied: dict[str, int] = {}
    released = 0
    dims: set[int] = set()
    with source._tx(write=False) as read, target._tx() as write:
        source._run(read, "copy_snapshot")
        for store, db, role in ((source, read, "source"), (target, write, "target")):
            _check_columns(store, db, role)
        _check_empty(target, write)
        totals = _row_counts(source, read)
        for table in TABLES:
            done = 0
            tick(table.name, done, totals[table.name])
            for page in read_pages(source, read, table):
                if table.name == "jobs":
                    released += sum(_unclaim(row) for row in page)
                if table.name == "fact_vectors":
                    dims.update(int(row["dim"]) for row in page)
                params = [_params(target, table, row) for row in page]
                if table.name == "fact_vectors":  # where the vector goes is the backend's
                    written = target._store_vectors(write, params)
                else:
                    written = target._many(write, table.write, params)
                if table.name == "facts":  # their words, as a plan indexes its new facts
                    target._facts_inserted(write, [row["id"] for row in page])
                if written != len(params):
                    raise IntegrityViolation(
                        f"{table.name}: the target took {written} of {len(params)} rows; "
                        "nothing was written"
                    )
                done += len(page)
                tick(table.name, done, totals[table.name])
            copied[table.name] = done
        if copied["events"]:
            target._events_stored(write)  # wake workers already waiting on the target
    if dims:
        target._vectors_written(dims)  # PostgreSQL: build the HNSW index of each dimension
    return CopyReport(copied, released)


def read_pages(store: SqlStore, db: DB, table: Table) -> Iterator[list[dict[str, Any]]]:
    """The table's rows in primary-key order, a page at a time, in the neutral form (see
    the module docstring). `db` is a transaction of `store`'s."""
    after: dict[str, Any] = {f"after_{column}": None for column in table.key}
    while True:
        page = store._run(db, table.read, {**after, "limit": PAGE_ROWS}).fetchall()
        if not page:
            return
        returned = set(page[0].keys())
        if returned != set(table.columns):
            raise StoreError(
                f"query {table.read} returns {sorted(returned)}, but the copy knows "
                f"{sorted(table.columns)}: they must be the same columns"
            )
        codec = store.codec
        yield [{c: _neutral(codec, kind, r[c]) for c, kind in table.columns.items()} for r in page]
        if len(page) < PAGE_ROWS:
            return
        after = {f"after_{column}": page[-1][column] for column in table.key}


def _params(target: SqlStore, table: Table, row: dict[str, Any]) -> dict[str, Any]:
    """A neutral row as the target's parameters: ids, instants and vectors in its encoding."""
    params = dict(row)
    if table.name == "fact_vectors" and params["text_hash"] is None:
        params["text_hash"] = vector_digest(params["vector"])
    codec = target.codec
    for column, kind in table.columns.items():
        if kind is Kind.ID:
            params[column] = codec.id(params[column])
        elif kind is Kind.TIME:
            params[column] = codec.time(params[column])
        elif kind is Kind.VECTOR and params[column] is not None:
            params[column] = target._vector_param(params[column])
    return params


def _unclaim(job: dict[str, Any]) -> bool:
    """Make a running job pending and unclaimed in place; whether it was running."""
    if job["status"] != "running":
        return False
    job.update(_UNCLAIMED, attempts=max(int(job["attempts"]) - 1, 0))
    return True


def _neutral(codec: rows.Codec, kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is Kind.ID:
        return codec.read_id(value)
    if kind is Kind.TIME:
        return codec.read_time(value)
    if kind is Kind.JSON:
        return rows.dumps(rows.loads(value))
    if kind is Kind.VECTOR:
        return _vector(value)
    if kind is Kind.BOOL:
        return bool(value)
    if kind is Kind.BYTES:
        return bytes(value)
    if kind is Kind.INT:
        return int(value)
    if kind is Kind.FLOAT:
        return float(value)
    return value


def _vector(value: bytes | list[float]) -> npt.NDArray[np.float32]:
    """A vector as the copy queries return it: a float32 BLOB (SQLite), or a list of the
    float4 values widened to floats (PostgreSQL), which float32 holds exactly."""
    if isinstance(value, bytes | bytearray | memoryview):
        return rows.from_blob(bytes(value))
    return np.asarray(value, dtype=np.float32)


# -- checks ----------------------------------------------------------------------------------------
def _check_version(store: SqlStore) -> None:
    latest = store.migrations[-1].version
    version = store.schema_version()
    if version != latest:
        raise StoreError(
            f"the database at {store.where} is at schema version {version}, not {latest}, the "
            "version this distill writes: copy with a distill that knows its version (pip "
            "install --upgrade distill), or run distill migrate on it; nothing was written"
        )


def _check_columns(store: SqlStore, db: DB, role: str) -> None:
    found: dict[str, set[str]] = {}
    for r in store._run(db, "copy_columns"):
        found.setdefault(r["table_name"], set()).add(r["column_name"])
    problems = []
    for table in TABLES:
        have = found.pop(table.name, None)
        if have is None:
            problems.append(f"no table {table.name}")
            continue
        derived = set(GENERATED.get(table.name, {}))
        unknown = sorted(f"{table.name}.{c}" for c in have - set(table.columns) - derived)
        missing = sorted(f"{table.name}.{c}" for c in set(table.columns) - have)
        if unknown:
            problems.append(f"columns the copy does not know and would drop: {', '.join(unknown)}")
        if missing:
            problems.append(f"missing columns: {', '.join(missing)}")
    unknown_tables = sorted(set(found) - set(NOT_COPIED))
    if unknown_tables:
        problems.append(f"tables the copy does not know: {', '.join(unknown_tables)}")
    if problems:
        raise StoreError(
            f"cannot copy: the {role} database at {store.where} does not have the schema this "
            f"distill copies ({'; '.join(problems)}); nothing was written. Was it changed by "
            "hand or by another version of distill?"
        )


def _check_empty(target: SqlStore, db: DB) -> None:
    counts = _row_counts(target, db)
    held = [f"{t.name}: {counts[t.name]}" for t in TABLES if counts[t.name]]
    if held:
        raise InvalidOperation(
            f"the target database at {target.where} is not empty (rows in {', '.join(held)}); "
            "copy into an empty PostgreSQL database or a new SQLite file; nothing was written"
        )


def _row_counts(store: SqlStore, db: DB) -> dict[str, int]:
    counts = {r["table_name"]: int(r["n"]) for r in store._run(db, "copy_row_counts")}
    if set(counts) != {t.name for t in TABLES}:
        raise StoreError(f"query copy_row_counts counts {sorted(counts)}, not the copied tables")
    return counts
