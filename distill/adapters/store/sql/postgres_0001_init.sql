-- Distill schema for PostgreSQL, version 1 (SQLite's versions 1 and 2 in one step).
--
-- Instants are timestamptz, JSON is jsonb, ids are text. Identity vectors are pgvector
-- `vector` columns without a fixed dimension (the embedder decides it); their HNSW indexes
-- are partial expression indexes, one per dimension, made by the store when a dimension
-- first appears (see postgres.py). Nothing here is ever deleted by consolidation.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE events (
    id              text PRIMARY KEY,
    project         text NOT NULL,
    subject         text NOT NULL,
    text            text NOT NULL,
    occurred_at     timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL,
    source          text NOT NULL,
    trust           text NOT NULL,
    claims          jsonb NOT NULL DEFAULT '[]',
    idempotency_key text NOT NULL,
    -- Derived data, the only columns ever written after insert.
    embedding       vector,
    embedding_model text,
    UNIQUE (project, idempotency_key)
);
CREATE INDEX events_by_time ON events (project, occurred_at, id);
CREATE INDEX events_by_subject ON events (project, subject, occurred_at, id);
-- iter_events over every project pages by (occurred_at, id) alone.
CREATE INDEX events_by_time_everywhere ON events (occurred_at, id);

CREATE TABLE jobs (
    id                text PRIMARY KEY,
    project           text NOT NULL,
    subject           text NOT NULL,
    status            text NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempts          integer NOT NULL DEFAULT 0,
    error             text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    not_before        timestamptz,
    heartbeat_at      timestamptz,
    llm_calls         integer NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0
);
CREATE INDEX jobs_by_status ON jobs (status, created_at, id);
CREATE INDEX jobs_by_subject ON jobs (project, subject, status, created_at, id);

CREATE TABLE job_events (
    job_id   text NOT NULL REFERENCES jobs (id),
    event_id text NOT NULL REFERENCES events (id),
    PRIMARY KEY (job_id, event_id)
);
CREATE INDEX job_events_by_event ON job_events (event_id);

CREATE TABLE facts (
    id                  text PRIMARY KEY,
    project             text NOT NULL,
    subject             text NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('state', 'event', 'memory')),
    predicate           text,
    value               jsonb,
    text                text NOT NULL,
    qualifiers          jsonb NOT NULL DEFAULT '{}',
    attribution         text,
    stated              jsonb,
    identity_key        text,
    status              text NOT NULL
                        CHECK (status IN ('candidate', 'active', 'superseded', 'retracted')),
    valid_from          timestamptz NOT NULL,
    valid_to            timestamptz,
    recorded_at         timestamptz NOT NULL,
    retired_at          timestamptz,
    supersedes_id       text,
    superseded_by       text,
    source_event_ids    jsonb NOT NULL DEFAULT '[]',
    reinforcement_count integer NOT NULL DEFAULT 0,
    last_reinforced_at  timestamptz NOT NULL,
    trust               text NOT NULL,
    confidence          double precision NOT NULL DEFAULT 1.0,
    pinned              boolean NOT NULL DEFAULT false,
    -- Hash of the normalised text of a memory, for the deterministic duplicate lookup.
    norm_hash           text
);
-- Invariant 3: one active fact per identity. The per-subject advisory lock keeps writers
-- apart; this index is the backstop that makes a second active state fact impossible.
CREATE UNIQUE INDEX facts_one_active_per_identity
    ON facts (project, subject, identity_key)
    WHERE status = 'active' AND kind = 'state';
CREATE INDEX facts_by_subject ON facts (project, subject, status, valid_from, id);
CREATE INDEX facts_by_identity ON facts (project, subject, identity_key);
CREATE INDEX facts_by_norm ON facts (project, subject, norm_hash) WHERE norm_hash IS NOT NULL;

-- A lookup index over facts.source_event_ids (which keeps the order).
CREATE TABLE fact_sources (
    fact_id  text NOT NULL REFERENCES facts (id),
    -- Deferred: a plan may name its events in any order within the transaction.
    event_id text NOT NULL REFERENCES events (id) DEFERRABLE INITIALLY DEFERRED,
    PRIMARY KEY (fact_id, event_id)
);
CREATE INDEX fact_sources_by_event ON fact_sources (event_id);

-- The identity embedding of a state fact, L2-normalised; `dim` picks its HNSW index.
CREATE TABLE fact_vectors (
    fact_id   text PRIMARY KEY REFERENCES facts (id),
    project   text NOT NULL,
    subject   text NOT NULL,
    model_id  text NOT NULL,
    dim       integer NOT NULL,
    embedding vector NOT NULL,
    CHECK (vector_dims(embedding) = dim)
);
CREATE INDEX fact_vectors_by_subject ON fact_vectors (project, subject, model_id, dim);

CREATE TABLE conflicts (
    id           text PRIMARY KEY,
    project      text NOT NULL,
    subject      text NOT NULL,
    identity_key text,
    kind         text NOT NULL CHECK (kind IN ('conflict', 'quarantine')),
    status       text NOT NULL CHECK (status IN ('open', 'resolved', 'reclassified')),
    member_ids   jsonb NOT NULL DEFAULT '[]',
    reason       text NOT NULL,
    created_at   timestamptz NOT NULL,
    resolved_at  timestamptz,
    kept_fact_id text
);
CREATE INDEX conflicts_by_subject ON conflicts (project, subject, status, created_at, id);

CREATE TABLE observations (
    id          text PRIMARY KEY,
    project     text NOT NULL,
    subject     text NOT NULL,
    event_id    text NOT NULL REFERENCES events (id) DEFERRABLE INITIALLY DEFERRED,
    fact_id     text,
    extractor   text NOT NULL,
    claim       jsonb NOT NULL,
    claim_hash  text NOT NULL,
    source      text NOT NULL,
    trust       text NOT NULL,
    occurred_at timestamptz NOT NULL,
    outcome     text NOT NULL,
    reason      text NOT NULL,
    UNIQUE (event_id, claim_hash)
);
CREATE INDEX observations_by_fact ON observations (fact_id, occurred_at, id);

CREATE TABLE aliases (
    project    text NOT NULL,
    alias      text NOT NULL,
    canonical  text NOT NULL,
    distance   double precision NOT NULL,
    learned_at timestamptz NOT NULL,
    PRIMARY KEY (project, alias)
);

CREATE TABLE audit (
    id        text PRIMARY KEY,
    project   text NOT NULL,
    subject   text NOT NULL,
    job_id    text,
    pass_name text NOT NULL,
    action    text NOT NULL,
    reason    text NOT NULL,
    fact_id   text,
    before    jsonb,
    after     jsonb,
    at        timestamptz NOT NULL
);
CREATE INDEX audit_by_fact ON audit (fact_id, at, id);
CREATE INDEX audit_by_subject ON audit (project, subject, at, id);

-- Raw float32 bytes: a cache is read back whole and must round-trip exactly.
CREATE TABLE embedding_cache (
    model_id  text NOT NULL,
    text_hash text NOT NULL,
    vector    bytea NOT NULL,
    PRIMARY KEY (model_id, text_hash)
);

-- Derived data, like the embedding cache: `extractor` names the prompt version and the model;
-- `candidates` is the JSON list the model proposed per event, before validation.
CREATE TABLE extractions (
    extractor  text NOT NULL,
    event_id   text NOT NULL REFERENCES events (id),
    candidates jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (extractor, event_id)
);
