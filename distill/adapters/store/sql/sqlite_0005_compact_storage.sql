-- A smaller file for the same information: 6.3 KB per claim event before this version,
-- measured by bench/storage.py (50,000 events: 316 MB). Nothing stored is dropped.

-- 1. Identity vectors stored once. `fact_vectors` kept a copy of a 1.5 KB vector (384
-- float32) for every version of every state fact, and `embedding_cache` a copy of each
-- distinct one: at 50,000 claim events, 33,000 copies of a few dozen vectors, a sixth of the
-- file. Now `embedding_cache`, keyed by (model, hash of the text embedded), is the one store
-- of vectors, and a fact's row names its vector by that hash. The cache is therefore no
-- longer disposable: no row of it may be deleted while a fact names it.
--
-- A vector already stored is found in the cache by its bytes (every identity vector the
-- engine stored came through the cache); one that is not there (a plan that gave a vector
-- without its text) is added under the key 'fact:<the first fact that had it>'.

-- The triggers that log vector changes name fact_vectors: made again below, unchanged.
DROP TRIGGER vector_added;
DROP TRIGGER vector_fact_changed;

-- Matching vectors by their bytes, for this migration only.
CREATE INDEX migrate_cache_by_vector ON embedding_cache (model_id, vector);
CREATE INDEX migrate_fact_vectors_by_vector ON fact_vectors (model_id, vector);

CREATE TABLE fact_vectors_keyed (
    fact_id   TEXT PRIMARY KEY REFERENCES facts (id),
    project   TEXT NOT NULL,
    subject   TEXT NOT NULL,
    model_id  TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    -- The vector: embedding_cache (model_id, text_hash).
    text_hash TEXT NOT NULL
);

INSERT INTO fact_vectors_keyed (fact_id, project, subject, model_id, dim, text_hash)
SELECT v.fact_id, v.project, v.subject, v.model_id, v.dim,
       coalesce(
           (SELECT min(c.text_hash) FROM embedding_cache AS c
            WHERE c.model_id = v.model_id AND c.vector = v.vector),
           (SELECT 'fact:' || min(w.fact_id) FROM fact_vectors AS w
            WHERE w.model_id = v.model_id AND w.vector = v.vector))
FROM fact_vectors AS v;

INSERT OR IGNORE INTO embedding_cache (model_id, text_hash, vector)
SELECT k.model_id, k.text_hash, v.vector
FROM fact_vectors_keyed AS k JOIN fact_vectors AS v ON v.fact_id = k.fact_id
WHERE k.text_hash LIKE 'fact:%';

DROP INDEX migrate_cache_by_vector;
DROP TABLE fact_vectors;
ALTER TABLE fact_vectors_keyed RENAME TO fact_vectors;
CREATE INDEX fact_vectors_by_subject ON fact_vectors (project, subject, model_id);

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

-- 2. Link tables without a rowid: a row is its primary key, so the key's index is the table
-- (job_events 157 bytes a row with its index, 84 without; fact_sources likewise).
CREATE TABLE job_events_keyed (
    job_id   TEXT NOT NULL REFERENCES jobs (id),
    event_id TEXT NOT NULL REFERENCES events (id),
    PRIMARY KEY (job_id, event_id)
) WITHOUT ROWID;
INSERT INTO job_events_keyed (job_id, event_id) SELECT job_id, event_id FROM job_events;
DROP TABLE job_events;
ALTER TABLE job_events_keyed RENAME TO job_events;

CREATE TABLE fact_sources_keyed (
    fact_id  TEXT NOT NULL REFERENCES facts (id),
    -- Deferred: a plan may name its events in any order within the transaction.
    event_id TEXT NOT NULL REFERENCES events (id) DEFERRABLE INITIALLY DEFERRED,
    PRIMARY KEY (fact_id, event_id)
) WITHOUT ROWID;
INSERT INTO fact_sources_keyed (fact_id, event_id) SELECT fact_id, event_id FROM fact_sources;
DROP TABLE fact_sources;
ALTER TABLE fact_sources_keyed RENAME TO fact_sources;
CREATE INDEX fact_sources_by_event ON fact_sources (event_id);

-- 3. Indexes no query uses, or uses only in part. No query reads events by subject, nor job
-- links by event (job_events_by_event went with its table above). A fact's audit entries and
-- observations are a handful: found by fact_id, they are sorted after; entries and
-- observations without a fact are not indexed at all.
DROP INDEX events_by_subject;
DROP INDEX audit_by_fact;
CREATE INDEX audit_by_fact ON audit (fact_id) WHERE fact_id IS NOT NULL;
DROP INDEX observations_by_fact;
CREATE INDEX observations_by_fact ON observations (fact_id) WHERE fact_id IS NOT NULL;
