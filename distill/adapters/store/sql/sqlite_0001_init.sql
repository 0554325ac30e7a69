-- Distill schema for SQLite, version 1.
--
-- Datetimes are ISO-8601 text in UTC with a fixed width (YYYY-MM-DDTHH:MM:SS.ffffff+00:00),
-- so comparing the text compares the instants. JSON columns hold dicts and lists.
-- Nothing in this schema is ever deleted by consolidation: rows are revised or retired.

CREATE TABLE events (
    id              TEXT PRIMARY KEY,
    project         TEXT NOT NULL,
    subject         TEXT NOT NULL,
    text            TEXT NOT NULL,
    occurred_at     TEXT NOT NULL,
    recorded_at     TEXT NOT NULL,
    source          TEXT NOT NULL,
    trust           TEXT NOT NULL,
    claims          TEXT NOT NULL DEFAULT '[]',
    idempotency_key TEXT NOT NULL,
    -- Derived data, the only columns ever written after insert.
    embedding       BLOB,
    embedding_model TEXT,
    UNIQUE (project, idempotency_key)
);
CREATE INDEX events_by_time ON events (project, occurred_at, id);
CREATE INDEX events_by_subject ON events (project, subject, occurred_at, id);

CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,
    project      TEXT NOT NULL,
    subject      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    error        TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    not_before   TEXT,
    heartbeat_at TEXT
);
CREATE INDEX jobs_by_status ON jobs (status, created_at, id);
CREATE INDEX jobs_by_subject ON jobs (project, subject, status, created_at, id);

CREATE TABLE job_events (
    job_id   TEXT NOT NULL REFERENCES jobs (id),
    event_id TEXT NOT NULL REFERENCES events (id),
    PRIMARY KEY (job_id, event_id)
);
CREATE INDEX job_events_by_event ON job_events (event_id);

CREATE TABLE facts (
    id                  TEXT PRIMARY KEY,
    project             TEXT NOT NULL,
    subject             TEXT NOT NULL,
    kind                TEXT NOT NULL CHECK (kind IN ('state', 'event', 'memory')),
    predicate           TEXT,
    value               TEXT,
    text                TEXT NOT NULL,
    qualifiers          TEXT NOT NULL DEFAULT '{}',
    attribution         TEXT,
    stated              TEXT,
    identity_key        TEXT,
    status              TEXT NOT NULL
                        CHECK (status IN ('candidate', 'active', 'superseded', 'retracted')),
    valid_from          TEXT NOT NULL,
    valid_to            TEXT,
    recorded_at         TEXT NOT NULL,
    retired_at          TEXT,
    supersedes_id       TEXT,
    superseded_by       TEXT,
    source_event_ids    TEXT NOT NULL DEFAULT '[]',
    reinforcement_count INTEGER NOT NULL DEFAULT 0,
    last_reinforced_at  TEXT NOT NULL,
    trust               TEXT NOT NULL,
    confidence          REAL NOT NULL DEFAULT 1.0,
    pinned              INTEGER NOT NULL DEFAULT 0,
    -- Hash of the normalised text of a memory, for the deterministic duplicate lookup.
    norm_hash           TEXT
);
-- Invariant 3: one active fact per identity. The per-subject serialisation keeps writers
-- apart; this index is the backstop that makes a second active state fact impossible.
CREATE UNIQUE INDEX facts_one_active_per_identity
    ON facts (project, subject, identity_key)
    WHERE status = 'active' AND kind = 'state';
CREATE INDEX facts_by_subject ON facts (project, subject, status, valid_from, id);
CREATE INDEX facts_by_identity ON facts (project, subject, identity_key);
CREATE INDEX facts_by_norm ON facts (project, subject, norm_hash) WHERE norm_hash IS NOT NULL;

-- A lookup index over facts.source_event_ids (which keeps the order).
CREATE TABLE fact_sources (
    fact_id  TEXT NOT NULL REFERENCES facts (id),
    -- Deferred: a plan may name its events in any order within the transaction.
    event_id TEXT NOT NULL REFERENCES events (id) DEFERRABLE INITIALLY DEFERRED,
    PRIMARY KEY (fact_id, event_id)
);
CREATE INDEX fact_sources_by_event ON fact_sources (event_id);

-- The identity embedding of a state fact, float32, L2-normalised.
CREATE TABLE fact_vectors (
    fact_id  TEXT PRIMARY KEY REFERENCES facts (id),
    project  TEXT NOT NULL,
    subject  TEXT NOT NULL,
    model_id TEXT NOT NULL,
    dim      INTEGER NOT NULL,
    vector   BLOB NOT NULL
);
CREATE INDEX fact_vectors_by_subject ON fact_vectors (project, subject, model_id);

CREATE TABLE conflicts (
    id           TEXT PRIMARY KEY,
    project      TEXT NOT NULL,
    subject      TEXT NOT NULL,
    identity_key TEXT,
    kind         TEXT NOT NULL CHECK (kind IN ('conflict', 'quarantine')),
    status       TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'reclassified')),
    member_ids   TEXT NOT NULL DEFAULT '[]',
    reason       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    resolved_at  TEXT,
    kept_fact_id TEXT
);
CREATE INDEX conflicts_by_subject ON conflicts (project, subject, status, created_at, id);

CREATE TABLE observations (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    subject     TEXT NOT NULL,
    event_id    TEXT NOT NULL REFERENCES events (id) DEFERRABLE INITIALLY DEFERRED,
    fact_id     TEXT,
    extractor   TEXT NOT NULL,
    claim       TEXT NOT NULL,
    claim_hash  TEXT NOT NULL,
    source      TEXT NOT NULL,
    trust       TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    reason      TEXT NOT NULL,
    UNIQUE (event_id, claim_hash)
);
CREATE INDEX observations_by_fact ON observations (fact_id, occurred_at, id);

CREATE TABLE aliases (
    project    TEXT NOT NULL,
    alias      TEXT NOT NULL,
    canonical  TEXT NOT NULL,
    distance   REAL NOT NULL,
    learned_at TEXT NOT NULL,
    PRIMARY KEY (project, alias)
);

CREATE TABLE audit (
    id        TEXT PRIMARY KEY,
    project   TEXT NOT NULL,
    subject   TEXT NOT NULL,
    job_id    TEXT,
    pass_name TEXT NOT NULL,
    action    TEXT NOT NULL,
    reason    TEXT NOT NULL,
    fact_id   TEXT,
    before    TEXT,
    after     TEXT,
    at        TEXT NOT NULL
);
CREATE INDEX audit_by_fact ON audit (fact_id, at, id);
CREATE INDEX audit_by_subject ON audit (project, subject, at, id);

CREATE TABLE embedding_cache (
    model_id  TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector    BLOB NOT NULL,
    PRIMARY KEY (model_id, text_hash)
);
