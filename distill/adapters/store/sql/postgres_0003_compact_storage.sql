-- Indexes no query uses, or uses only in part (SQLite's version 4 drops the same ones).
-- No query reads events by subject, nor job links by event. A fact's audit entries and
-- observations are a handful: found by fact_id, they are sorted after; entries and
-- observations without a fact are not indexed at all.
--
-- Identity vectors stay in fact_vectors here, one per fact: the HNSW index searches that
-- column, and a vector stored once per text would have to be joined back to each subject's
-- facts after the index scan. Each row also names the text its vector embeds (the embedding
-- cache's key), as SQLite's rows do, so that a copy between the two loses nothing.

DROP INDEX events_by_subject;
DROP INDEX job_events_by_event;
DROP INDEX audit_by_fact;
CREATE INDEX audit_by_fact ON audit (fact_id) WHERE fact_id IS NOT NULL;
DROP INDEX observations_by_fact;
CREATE INDEX observations_by_fact ON observations (fact_id) WHERE fact_id IS NOT NULL;

ALTER TABLE fact_vectors ADD COLUMN text_hash text;
