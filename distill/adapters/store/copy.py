"""Copying a whole store into an empty one: SQLite → PostgreSQL, PostgreSQL → SQLite, SQLite →
SQLite (or PostgreSQL → PostgreSQL), written once over both backends' named SQL.

Everything is copied, ids and times as they are: events (with their claims and idempotency
keys), jobs and the events they hold, every version of every fact (status,
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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.adapters.store import rows
from distill.adapters.store.copy_tables import GENERATED, NOT_COPIED, TABLES, Kind, Table
from distill.adapters.store.sql_base import DB
from distill.adapters.store.sql_store import SqlStore
from distill.core.plan import vector_digest
from distill.errors import IntegrityViolation, InvalidOperation, StoreError

PAGE_ROWS = 1_000  # rows per read and per bulk insert: 1.5 MB of the cache's 384-value vectors

Progress = Callable[[str, int, int], None]  # (table, rows copied, rows in the table)


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
