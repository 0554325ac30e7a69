-- Ids, hashes and instants in fewer bytes: 3.6 KB per claim event before this version, measured
-- by bench/storage.py (50,000 events: 180.5 MB), of which ids and instants in their text form
-- were half. Nothing stored is dropped, and every value reads back as before (rows.PACKED):
--
-- - An id or hash of 32 lowercase hex characters (what distill makes) is stored as its 16
--   bytes; any other (a caller's own id or idempotency key, a 'vector:' or 'fact:' key) stays
--   text. The columns are declared BLOB, whose affinity stores every value as it is given.
--   16 bytes compare as their hex text does, so ORDER BY id keeps its order.
-- - An instant is integer microseconds since the Unix epoch (from the fixed-width UTC text,
--   YYYY-MM-DDTHH:MM:SS.ffffff+00:00, every earlier version wrote).
-- - audit_by_subject keeps (project, subject): audit_latest sorts the entries it finds, and
--   the (at, id) tail of each entry was a third of the index.
--
-- stored_id() is rows.pack_id, which the store registers on every connection it opens: this
-- migration runs in distill (`distill migrate`, or opening the store), not in the sqlite3
-- shell. Every table is made again under a new name, filled, and takes its old name once the
-- old tables are gone (children first, so that no foreign key is ever left dangling); the
-- REFERENCES of the new tables follow the renames.

DROP TRIGGER vector_added;
DROP TRIGGER vector_fact_changed;

CREATE TABLE events_packed (
    id              BLOB PRIMARY KEY,
    project         TEXT NOT NULL,
    subject         TEXT NOT NULL,
    text            TEXT NOT NULL,
    occurred_at     INTEGER NOT NULL,
    recorded_at     INTEGER NOT NULL,
    source          TEXT NOT NULL,
    trust           TEXT NOT NULL,
    claims          TEXT NOT NULL DEFAULT '[]',
    idempotency_key BLOB NOT NULL,
    -- Derived data, the only columns ever written after insert.
    embedding       BLOB,
    embedding_model TEXT,
    UNIQUE (project, idempotency_key)
);
INSERT INTO events_packed
SELECT stored_id(id), project, subject, text,
       strftime('%s', substr(occurred_at, 1, 19)) * 1000000 + substr(occurred_at, 21, 6),
       strftime('%s', substr(recorded_at, 1, 19)) * 1000000 + substr(recorded_at, 21, 6),
       source, trust, claims, stored_id(idempotency_key), embedding, embedding_model
FROM events ORDER BY rowid;

CREATE TABLE jobs_packed (
    id                BLOB PRIMARY KEY,
    project           TEXT NOT NULL,
    subject           TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempts          INTEGER NOT NULL DEFAULT 0,
    error             TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    not_before        INTEGER,
    heartbeat_at      INTEGER,
    llm_calls         INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    claim_token       TEXT,
    claim_host        TEXT,
    claim_pid         INTEGER,
    claim_started     REAL,
    claimed_at        INTEGER
);
INSERT INTO jobs_packed
SELECT stored_id(id), project, subject, status, attempts, error,
       strftime('%s', substr(created_at, 1, 19)) * 1000000 + substr(created_at, 21, 6),
       strftime('%s', substr(updated_at, 1, 19)) * 1000000 + substr(updated_at, 21, 6),
       strftime('%s', substr(not_before, 1, 19)) * 1000000 + substr(not_before, 21, 6),
       strftime('%s', substr(heartbeat_at, 1, 19)) * 1000000 + substr(heartbeat_at, 21, 6),
       llm_calls, prompt_tokens, completion_tokens, claim_token, claim_host, claim_pid,
       claim_started,
       strftime('%s', substr(claimed_at, 1, 19)) * 1000000 + substr(claimed_at, 21, 6)
FROM jobs ORDER BY rowid;

CREATE TABLE job_events_packed (
    job_id   BLOB NOT NULL REFERENCES jobs_packed (id),
    event_id BLOB NOT NULL REFERENCES events_packed (id),
    PRIMARY KEY (job_id, event_id)
) WITHOUT ROWID;
INSERT INTO job_events_packed SELECT stored_id(job_id), stored_id(event_id) FROM job_events;

CREATE TABLE facts_packed (
    id                  BLOB PRIMARY KEY,
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
    valid_from          INTEGER NOT NULL,
    valid_to            INTEGER,
    recorded_at         INTEGER NOT NULL,
    retired_at          INTEGER,
    supersedes_id       BLOB,
    superseded_by       BLOB,
    source_event_ids    TEXT NOT NULL DEFAULT '[]',
    reinforcement_count INTEGER NOT NULL DEFAULT 0,
    last_reinforced_at  INTEGER NOT NULL,
    trust               TEXT NOT NULL,
    confidence          REAL NOT NULL DEFAULT 1.0,
    pinned              INTEGER NOT NULL DEFAULT 0,
    -- Hash of the normalised text of a memory, for the deterministic duplicate lookup.
    norm_hash           BLOB
);
INSERT INTO facts_packed
SELECT stored_id(id), project, subject, kind, predicate, value, text, qualifiers, attribution,
       stated, identity_key, status,
       strftime('%s', substr(valid_from, 1, 19)) * 1000000 + substr(valid_from, 21, 6),
       strftime('%s', substr(valid_to, 1, 19)) * 1000000 + substr(valid_to, 21, 6),
       strftime('%s', substr(recorded_at, 1, 19)) * 1000000 + substr(recorded_at, 21, 6),
       strftime('%s', substr(retired_at, 1, 19)) * 1000000 + substr(retired_at, 21, 6),
       stored_id(supersedes_id), stored_id(superseded_by), source_event_ids,
       reinforcement_count,
       strftime('%s', substr(last_reinforced_at, 1, 19)) * 1000000
           + substr(last_reinforced_at, 21, 6),
       trust, confidence, pinned, stored_id(norm_hash)
FROM facts ORDER BY rowid;

CREATE TABLE fact_sources_packed (
    fact_id  BLOB NOT NULL REFERENCES facts_packed (id),
    -- Deferred: a plan may name its events in any order within the transaction.
    event_id BLOB NOT NULL REFERENCES events_packed (id) DEFERRABLE INITIALLY DEFERRED,
    PRIMARY KEY (fact_id, event_id)
) WITHOUT ROWID;
INSERT INTO fact_sources_packed SELECT stored_id(fact_id), stored_id(event_id) FROM fact_sources;

CREATE TABLE fact_vectors_packed (
    fact_id   BLOB PRIMARY KEY REFERENCES facts_packed (id),
    project   TEXT NOT NULL,
    subject   TEXT NOT NULL,
    model_id  TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    -- The vector: embedding_cache (model_id, text_hash).
    text_hash BLOB NOT NULL
);
INSERT INTO fact_vectors_packed
SELECT stored_id(fact_id), project, subject, model_id, dim, stored_id(text_hash)
FROM fact_vectors ORDER BY rowid;

CREATE TABLE conflicts_packed (
    id           BLOB PRIMARY KEY,
    project      TEXT NOT NULL,
    subject      TEXT NOT NULL,
    identity_key TEXT,
    kind         TEXT NOT NULL CHECK (kind IN ('conflict', 'quarantine', 'identity')),
    status       TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'reclassified')),
    member_ids   TEXT NOT NULL DEFAULT '[]',
    reason       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    resolved_at  INTEGER,
    kept_fact_id BLOB
);
INSERT INTO conflicts_packed
SELECT stored_id(id), project, subject, identity_key, kind, status, member_ids, reason,
       strftime('%s', substr(created_at, 1, 19)) * 1000000 + substr(created_at, 21, 6),
       strftime('%s', substr(resolved_at, 1, 19)) * 1000000 + substr(resolved_at, 21, 6),
       stored_id(kept_fact_id)
FROM conflicts ORDER BY rowid;

CREATE TABLE observations_packed (
    id          BLOB PRIMARY KEY,
    project     TEXT NOT NULL,
    subject     TEXT NOT NULL,
    event_id    BLOB NOT NULL REFERENCES events_packed (id) DEFERRABLE INITIALLY DEFERRED,
    fact_id     BLOB,
    extractor   TEXT NOT NULL,
    claim       TEXT NOT NULL,
    claim_hash  BLOB NOT NULL,
    source      TEXT NOT NULL,
    trust       TEXT NOT NULL,
    occurred_at INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    reason      TEXT NOT NULL,
    UNIQUE (event_id, claim_hash)
);
INSERT INTO observations_packed
SELECT stored_id(id), project, subject, stored_id(event_id), stored_id(fact_id), extractor,
       claim, stored_id(claim_hash), source, trust,
       strftime('%s', substr(occurred_at, 1, 19)) * 1000000 + substr(occurred_at, 21, 6),
       outcome, reason
FROM observations ORDER BY rowid;

CREATE TABLE aliases_packed (
    project    TEXT NOT NULL,
    alias      TEXT NOT NULL,
    canonical  TEXT NOT NULL,
    distance   REAL NOT NULL,
    learned_at INTEGER NOT NULL,
    PRIMARY KEY (project, alias)
);
INSERT INTO aliases_packed
SELECT project, alias, canonical, distance,
       strftime('%s', substr(learned_at, 1, 19)) * 1000000 + substr(learned_at, 21, 6)
FROM aliases ORDER BY rowid;

CREATE TABLE audit_packed (
    id        BLOB PRIMARY KEY,
    project   TEXT NOT NULL,
    subject   TEXT NOT NULL,
    job_id    BLOB,
    pass_name TEXT NOT NULL,
    action    TEXT NOT NULL,
    reason    TEXT NOT NULL,
    fact_id   BLOB,
    before    TEXT,
    after     TEXT,
    at        INTEGER NOT NULL
);
INSERT INTO audit_packed
SELECT stored_id(id), project, subject, stored_id(job_id), pass_name, action, reason,
       stored_id(fact_id), before, after,
       strftime('%s', substr(at, 1, 19)) * 1000000 + substr(at, 21, 6)
FROM audit ORDER BY rowid;

CREATE TABLE embedding_cache_packed (
    model_id  TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector    BLOB NOT NULL,
    PRIMARY KEY (model_id, text_hash)
);
INSERT INTO embedding_cache_packed
SELECT model_id, stored_id(text_hash), vector FROM embedding_cache ORDER BY rowid;

CREATE TABLE extractions_packed (
    extractor  TEXT NOT NULL,
    event_id   BLOB NOT NULL REFERENCES events_packed (id),
    candidates TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (extractor, event_id)
);
INSERT INTO extractions_packed
SELECT extractor, stored_id(event_id), candidates,
       strftime('%s', substr(created_at, 1, 19)) * 1000000 + substr(created_at, 21, 6)
FROM extractions ORDER BY rowid;

CREATE TABLE vector_changes_packed (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT NOT NULL,
    subject TEXT NOT NULL,
    fact_id BLOB NOT NULL
);
INSERT INTO vector_changes_packed SELECT seq, project, subject, stored_id(fact_id) FROM vector_changes;

-- Children before their parents.
DROP TABLE job_events;
DROP TABLE fact_sources;
DROP TABLE fact_vectors;
DROP TABLE observations;
DROP TABLE extractions;
DROP TABLE audit;
DROP TABLE conflicts;
DROP TABLE aliases;
DROP TABLE embedding_cache;
DROP TABLE vector_changes;
DROP TABLE facts;
DROP TABLE jobs;
DROP TABLE events;

ALTER TABLE events_packed RENAME TO events;
ALTER TABLE jobs_packed RENAME TO jobs;
ALTER TABLE job_events_packed RENAME TO job_events;
ALTER TABLE facts_packed RENAME TO facts;
ALTER TABLE fact_sources_packed RENAME TO fact_sources;
ALTER TABLE fact_vectors_packed RENAME TO fact_vectors;
ALTER TABLE conflicts_packed RENAME TO conflicts;
ALTER TABLE observations_packed RENAME TO observations;
ALTER TABLE aliases_packed RENAME TO aliases;
ALTER TABLE audit_packed RENAME TO audit;
ALTER TABLE embedding_cache_packed RENAME TO embedding_cache;
ALTER TABLE extractions_packed RENAME TO extractions;
ALTER TABLE vector_changes_packed RENAME TO vector_changes;

CREATE INDEX events_by_time ON events (project, occurred_at, id);
CREATE INDEX jobs_by_status ON jobs (status, created_at, id);
CREATE INDEX jobs_by_subject ON jobs (project, subject, status, created_at, id);
-- Invariant 3: one active fact per identity. The per-subject serialisation keeps writers
-- apart; this index is the backstop that makes a second active state fact impossible.
CREATE UNIQUE INDEX facts_one_active_per_identity
    ON facts (project, subject, identity_key)
    WHERE status = 'active' AND kind = 'state';
CREATE INDEX facts_by_subject ON facts (project, subject, status, valid_from, id);
CREATE INDEX facts_by_identity ON facts (project, subject, identity_key);
CREATE INDEX facts_by_norm ON facts (project, subject, norm_hash) WHERE norm_hash IS NOT NULL;
CREATE INDEX fact_sources_by_event ON fact_sources (event_id);
CREATE INDEX fact_vectors_by_subject ON fact_vectors (project, subject, model_id);
CREATE INDEX conflicts_by_subject ON conflicts (project, subject, status, created_at, id);
CREATE INDEX observations_by_fact ON observations (fact_id) WHERE fact_id IS NOT NULL;
CREATE INDEX audit_by_fact ON audit (fact_id) WHERE fact_id IS NOT NULL;
CREATE INDEX audit_by_subject ON audit (project, subject);
CREATE INDEX vector_changes_by_subject ON vector_changes (project, subject, seq);

CREATE TRIGGER vector_added AFTER INSERT ON fact_vectors
BEGIN
    INSERT INTO vector_changes (project, subject, fact_id)
    VALUES (NEW.project, NEW.subject, NEW.fact_id);
END;

CREATE TRIGGER vector_fact_changed AFTER UPDATE OF status, kind ON facts
WHEN (OLD.status IS NOT NEW.status OR OLD.kind IS NOT NEW.kind)
    AND EXISTS (SELECT 1 FROM fact_vectors WHERE fact_id = NEW.id)
BEGIN
    INSERT INTO vector_changes (project, subject, fact_id)
    VALUES (NEW.project, NEW.subject, NEW.id);
END;
