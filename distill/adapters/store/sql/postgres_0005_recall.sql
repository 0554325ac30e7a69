-- Recall: the words of every fact, for the lexical arm of search (distill/core/recall.py).
--
-- A generated tsvector of each fact's predicate, value and text with the `simple`
-- configuration (lower case, no stemming, no stop words: the same words SQLite's FTS5 index
-- holds, so that both stores rank alike), and a GIN index to find the facts that hold a
-- word. PostgreSQL's own ranking (ts_rank) has no inverse document frequency, which the
-- fusion needs (docs/research/search-fusion.md), so the store computes BM25 from it: see
-- `recall_words` in postgres_queries.sql. Every status is indexed, as on SQLite.

ALTER TABLE facts ADD COLUMN words tsvector GENERATED ALWAYS AS (
    to_tsvector(
        'simple',
        coalesce(predicate, '') || ' ' || coalesce(value::text, '') || ' ' || text
    )
) STORED;
CREATE INDEX facts_words ON facts USING gin (words);
