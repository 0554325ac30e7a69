-- An event's vector is kept once, in `embedding_cache` under (model, hash of its text), as a
-- fact's identity vector has been since 0005. Until now the job that decided an event also
-- wrote the same float32 vector into the event's row: a second copy (1,536 bytes an event
-- with the default model), and a rewrite of every event row that made up 14% of the
-- deciding thread's CPU in a 10,000-event consolidation (BENCHMARKS.md, "Event vectors in
-- the cache alone").
--
-- The engine has cached every vector it computed, before the job wrote it to the event, and
-- only an erase deletes cached vectors (with the events they belong to): every vector below
-- has its twin in the cache already. It is copied there anyway where it has none, so that
-- dropping the columns cannot lose one. `content_hash` is the cache's key of a text
-- (distill.core.identity.content_hash), registered on every connection.

INSERT OR IGNORE INTO embedding_cache (model_id, text_hash, vector)
SELECT embedding_model, stored_id(content_hash(text)), embedding
FROM events
WHERE embedding IS NOT NULL AND embedding_model IS NOT NULL;

ALTER TABLE events DROP COLUMN embedding;
ALTER TABLE events DROP COLUMN embedding_model;
