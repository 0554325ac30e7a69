"""What `copy` copies: every table of a store, its columns and how each value travels
between the backends, and the tables and columns it deliberately leaves behind (with why).

`copy.py` checks, before a copy, that every table and column of both databases is listed
here: a column added by a later migration and not listed stops the copy with an error that
names it, instead of being dropped. A test checks that each table's read query returns, and
its write query writes, exactly the columns listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum


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
            "unpaired_change": K.BOOL,
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
            "resolved_by": K.TEXT,
            "accepted_event_ids": K.JSON,
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
            "audit_id": K.ID,
            "job_id": K.ID,
            "at": K.TIME,
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
