-- An event's vector is kept once, in `embedding_cache` under (model, hash of its text), as a
-- fact's identity vector has been since 0003 (see sqlite_0018 for the measurements). The
-- event row's own copy, a pgvector value written when the job was decided, goes.
--
-- The engine cached every vector before writing it to the event, and only an erase deletes
-- cached vectors (with their events), so every vector below has its twin in the cache. Any
-- that has none is copied there first: the cache's key is distill.core.identity.content_hash
-- (the first 32 hex digits of the SHA-256 of the text and a 0x1F separator), and its vector
-- the float32 values in little-endian order, as numpy writes them on the machines Distill
-- runs on (float4send gives each value big-endian: its bytes are reversed).

INSERT INTO embedding_cache (model_id, text_hash, vector)
SELECT e.embedding_model,
       left(encode(sha256(convert_to(e.text || chr(31), 'UTF8')), 'hex'), 32),
       (SELECT string_agg(
                   substring(b FROM 4 FOR 1) || substring(b FROM 3 FOR 1)
                   || substring(b FROM 2 FOR 1) || substring(b FROM 1 FOR 1),
                   ''::bytea ORDER BY i)
        FROM unnest(e.embedding::real[]) WITH ORDINALITY AS u(x, i),
             LATERAL (SELECT float4send(u.x) AS b) AS s)
FROM events AS e
WHERE e.embedding IS NOT NULL AND e.embedding_model IS NOT NULL
ON CONFLICT DO NOTHING;

ALTER TABLE events DROP COLUMN embedding, DROP COLUMN embedding_model;
