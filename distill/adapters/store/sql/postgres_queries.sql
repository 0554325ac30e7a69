-- Every SQL statement the PostgreSQL store runs, by name. The same names as
-- sqlite_queries.sql wherever both stores do the same thing; the PostgreSQL-only names
-- (locks, session settings, vector search and indexes) are listed in
-- tests/contract/test_postgres_store.py with the reason for each.
--
-- Parameters are psycopg's %(name)s. Lists travel as one array parameter (`= ANY(...)`).
-- A parameter that may be NULL is cast, so that PostgreSQL knows its type. `{dim}` is a
-- vector dimension the store fills in (an int: a type modifier cannot be a parameter).

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL
);

-- name: schema_version
SELECT coalesce(max(version), 0) AS version FROM schema_migrations;

-- name: record_migration
INSERT INTO schema_migrations (version, applied_at) VALUES (%(version)s, %(applied_at)s);

-- name: vector_extension_available
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available;

-- name: configure_session
SET TIME ZONE 'UTC';
SET hnsw.ef_search = 100;
SET hnsw.iterative_scan = strict_order;

-- name: advisory_lock
-- A lock named by a 64-bit key (a subject's writes, a subject's appends, migrations, index
-- creation), held until the transaction ends; re-entrant within it.
SELECT pg_advisory_xact_lock(%(key)s);

-- ---------------------------------------------------------------------------------------------
-- events

-- name: insert_event
INSERT INTO events (
    id, project, subject, text, occurred_at, recorded_at, source, trust, claims, idempotency_key,
    action
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(text)s, %(occurred_at)s, %(recorded_at)s, %(source)s,
    %(trust)s, %(claims)s, %(idempotency_key)s, %(action)s
)
ON CONFLICT (project, idempotency_key) DO NOTHING;

-- name: event_by_key
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE project = %(project)s AND idempotency_key = %(idempotency_key)s;

-- name: events_by_ids
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE project = %(project)s AND id = ANY(%(ids)s::text[])
ORDER BY occurred_at, id;

-- name: events_page
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE (%(project)s::text IS NULL OR project = %(project)s)
  AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND (%(after_id)s::text IS NULL
       OR (occurred_at, id) > (%(after_time)s::timestamptz, %(after_id)s::text))
ORDER BY occurred_at, id
LIMIT %(limit)s;

-- name: count_events
SELECT count(*) AS n FROM events WHERE (%(project)s::text IS NULL OR project = %(project)s);

-- ---------------------------------------------------------------------------------------------
-- jobs

-- name: pending_job_for_subject
-- Locked, so that a worker cannot claim the job between this read and the event joining it
-- (a claiming worker skips it; if it claimed first, this finds nothing and a new job starts).
SELECT id FROM jobs
WHERE project = %(project)s AND subject = %(subject)s AND status = 'pending'
ORDER BY created_at, id
LIMIT 1
FOR UPDATE;

-- name: insert_job
INSERT INTO jobs (id, project, subject, status, attempts, created_at, updated_at)
VALUES (%(id)s, %(project)s, %(subject)s, 'pending', 0, %(now)s, %(now)s);

-- name: touch_job
UPDATE jobs SET updated_at = %(now)s WHERE id = %(id)s;

-- name: attach_event_to_job
INSERT INTO job_events (job_id, event_id) VALUES (%(job_id)s, %(event_id)s)
ON CONFLICT DO NOTHING;

-- name: due_jobs
-- Several workers claim at once: each skips the rows another is claiming. A subject's jobs
-- are decided in the order they were created: a job whose subject has an earlier job running
-- elsewhere waits for it (the engine checks again under the subject's lock).
SELECT id FROM jobs
WHERE ((status = 'pending' AND (not_before IS NULL OR not_before <= %(now)s))
       OR (status = 'failed' AND attempts < %(max_attempts)s
           AND not_before IS NOT NULL AND not_before <= %(now)s))
  -- The worker's trigger: a pending job is due once it holds `min_events` events, or once it
  -- waited since `waited_before` (1 and now: every pending job, as `distill consolidate`).
  AND (status = 'failed' OR %(min_events)s <= 1 OR created_at <= %(waited_before)s
       OR (SELECT count(*) FROM job_events WHERE job_events.job_id = jobs.id) >= %(min_events)s)
  AND NOT EXISTS (
      SELECT 1 FROM jobs AS earlier
      WHERE earlier.project = jobs.project AND earlier.subject = jobs.subject
        AND earlier.status = 'running'
        AND (earlier.created_at < jobs.created_at
             OR (earlier.created_at = jobs.created_at AND earlier.id < jobs.id)))
ORDER BY created_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: earlier_open_job
SELECT 1 AS found
FROM jobs AS this JOIN jobs AS earlier
  ON earlier.project = this.project AND earlier.subject = this.subject
WHERE this.id = %(id)s AND earlier.status IN ('pending', 'running')
  AND (earlier.created_at < this.created_at
       OR (earlier.created_at = this.created_at AND earlier.id < this.id))
LIMIT 1;

-- name: mark_jobs_running
UPDATE jobs
SET status = 'running', attempts = attempts + 1, heartbeat_at = %(now)s, updated_at = %(now)s,
    claim_token = %(token)s, claim_host = %(host)s, claim_pid = %(pid)s,
    claim_started = %(started)s, claimed_at = %(now)s
WHERE id = ANY(%(ids)s::text[]);

-- name: finish_job
-- Only by the store that holds the claim, and for the claim it was decided under (the
-- attempt): a job reclaimed from it is someone else's now, even if claimed again by it.
UPDATE jobs
SET status = 'done', error = NULL, not_before = NULL, heartbeat_at = NULL,
    updated_at = %(now)s, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE id = %(id)s AND status = 'running' AND claim_token = %(token)s
  AND (%(attempts)s::integer IS NULL OR attempts = %(attempts)s);

-- name: fail_job
UPDATE jobs
SET status = 'failed', error = %(error)s, not_before = %(retry_at)s, heartbeat_at = NULL,
    updated_at = %(now)s, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE id = %(id)s AND status = 'running' AND claim_token = %(token)s
  AND (%(attempts)s::integer IS NULL OR attempts = %(attempts)s);

-- name: release_jobs
UPDATE jobs
SET status = 'pending', attempts = greatest(attempts - 1, 0), heartbeat_at = NULL,
    updated_at = %(now)s, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status = 'running' AND claim_token = %(token)s AND id = ANY(%(ids)s::text[]);

-- name: reclaim_stalled
-- A job whose worker died is retried, unless it has used up its attempts: then it fails, so a
-- job that crashes its worker cannot crash the next one forever. This is the fallback: no
-- heartbeat for a lease's length, whoever and wherever the claimer was.
UPDATE jobs
SET status = CASE WHEN attempts >= %(max_attempts)s THEN 'failed' ELSE 'pending' END,
    error = CASE WHEN attempts >= %(max_attempts)s
                 THEN 'the worker stopped while running this job, ' || attempts || ' times'
                 ELSE error END,
    not_before = NULL, heartbeat_at = NULL, updated_at = %(now)s, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status = 'running'
  AND (heartbeat_at IS NULL OR heartbeat_at < %(stalled_before)s::timestamptz);

-- name: reclaim_claims
-- The running jobs of claimers known to be gone (their process or their session ended).
UPDATE jobs
SET status = CASE WHEN attempts >= %(max_attempts)s THEN 'failed' ELSE 'pending' END,
    error = CASE WHEN attempts >= %(max_attempts)s
                 THEN 'the worker stopped while running this job, ' || attempts || ' times'
                 ELSE error END,
    not_before = NULL, heartbeat_at = NULL, updated_at = %(now)s, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status = 'running' AND claim_token = ANY(%(tokens)s::text[]);

-- name: running_claims
-- Who holds running jobs, how many each, and since when.
SELECT claim_token, claim_host, claim_pid, claim_started, count(*) AS jobs,
       min(claimed_at) AS since
FROM jobs
WHERE status = 'running'
GROUP BY claim_token, claim_host, claim_pid, claim_started
ORDER BY since;

-- name: heartbeat
UPDATE jobs SET heartbeat_at = %(now)s WHERE status = 'running' AND claim_token = %(token)s;

-- name: requeue_jobs
UPDATE jobs
SET status = 'pending', attempts = 0, error = NULL, not_before = NULL, heartbeat_at = NULL,
    updated_at = %(now)s, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status IN ('done', 'failed') AND (%(project)s::text IS NULL OR project = %(project)s);

-- name: jobs_by_ids
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE id = ANY(%(ids)s::text[])
ORDER BY created_at, id;

-- name: jobs_list
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE (%(project)s::text IS NULL OR project = %(project)s)
ORDER BY created_at, id;

-- name: running_jobs
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE status = 'running' AND (%(project)s::text IS NULL OR project = %(project)s)
ORDER BY claimed_at, id;

-- name: failed_jobs
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE status = 'failed' AND (%(project)s::text IS NULL OR project = %(project)s)
ORDER BY created_at, id;

-- name: job_event_ids
SELECT je.job_id, je.event_id
FROM job_events AS je JOIN events AS e ON e.id = je.event_id
WHERE je.job_id = ANY(%(ids)s::text[])
ORDER BY je.job_id, e.occurred_at, e.id;

-- name: add_job_usage
UPDATE jobs
SET llm_calls = llm_calls + %(calls)s,
    prompt_tokens = prompt_tokens + %(prompt_tokens)s,
    completion_tokens = completion_tokens + %(completion_tokens)s
WHERE id = %(id)s;

-- name: llm_usage
SELECT coalesce(sum(llm_calls), 0)::bigint AS calls,
       coalesce(sum(prompt_tokens), 0)::bigint AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens
FROM jobs
WHERE (%(project)s::text IS NULL OR project = %(project)s);

-- name: count_consolidations
-- The summarise pass's counters, read from its audit: a summary written is one `create_fact`
-- entry of the pass, a memory it consumed one `consolidate_fact` entry.
SELECT count(*) FILTER (WHERE action = 'create_fact') AS consolidations,
       count(*) FILTER (WHERE action = 'consolidate_fact') AS facts_consolidated
FROM audit
WHERE pass_name = 'summarise' AND (%(project)s::text IS NULL OR project = %(project)s);

-- name: count_jobs_by_status
SELECT status, count(*) AS n FROM jobs
WHERE (%(project)s::text IS NULL OR project = %(project)s)
GROUP BY status;

-- ---------------------------------------------------------------------------------------------
-- facts

-- name: insert_fact
INSERT INTO facts (
    id, project, subject, kind, predicate, value, stated, text, qualifiers, attribution,
    identity_key, status, valid_from, valid_to, recorded_at, retired_at, supersedes_id,
    superseded_by, source_event_ids, reinforcement_count, last_reinforced_at, trust,
    confidence, pinned, unpaired_change, norm_hash
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(kind)s, %(predicate)s, %(value)s, %(stated)s, %(text)s,
    %(qualifiers)s, %(attribution)s, %(identity_key)s, %(status)s, %(valid_from)s,
    %(valid_to)s, %(recorded_at)s, %(retired_at)s, %(supersedes_id)s, %(superseded_by)s,
    %(source_event_ids)s, %(reinforcement_count)s, %(last_reinforced_at)s, %(trust)s,
    %(confidence)s, %(pinned)s, %(unpaired_change)s, %(norm_hash)s
);

-- name: update_fact
UPDATE facts SET
    kind = %(kind)s, predicate = %(predicate)s, value = %(value)s, stated = %(stated)s,
    text = %(text)s, qualifiers = %(qualifiers)s, attribution = %(attribution)s,
    identity_key = %(identity_key)s, status = %(status)s, valid_from = %(valid_from)s,
    valid_to = %(valid_to)s, recorded_at = %(recorded_at)s, retired_at = %(retired_at)s,
    supersedes_id = %(supersedes_id)s, superseded_by = %(superseded_by)s,
    source_event_ids = %(source_event_ids)s, reinforcement_count = %(reinforcement_count)s,
    last_reinforced_at = %(last_reinforced_at)s, trust = %(trust)s,
    confidence = %(confidence)s, pinned = %(pinned)s,
    unpaired_change = %(unpaired_change)s
WHERE id = %(id)s
  -- optimistic check: the row is still the version the plan was made from
  AND kind IS NOT DISTINCT FROM %(was_kind)s::text
  AND predicate IS NOT DISTINCT FROM %(was_predicate)s::text
  AND value IS NOT DISTINCT FROM %(was_value)s::jsonb
  AND stated IS NOT DISTINCT FROM %(was_stated)s::jsonb
  AND text IS NOT DISTINCT FROM %(was_text)s::text
  AND qualifiers IS NOT DISTINCT FROM %(was_qualifiers)s::jsonb
  AND attribution IS NOT DISTINCT FROM %(was_attribution)s::text
  AND identity_key IS NOT DISTINCT FROM %(was_identity_key)s::text
  AND status IS NOT DISTINCT FROM %(was_status)s::text
  AND valid_from IS NOT DISTINCT FROM %(was_valid_from)s::timestamptz
  AND valid_to IS NOT DISTINCT FROM %(was_valid_to)s::timestamptz
  AND recorded_at IS NOT DISTINCT FROM %(was_recorded_at)s::timestamptz
  AND retired_at IS NOT DISTINCT FROM %(was_retired_at)s::timestamptz
  AND supersedes_id IS NOT DISTINCT FROM %(was_supersedes_id)s::text
  AND superseded_by IS NOT DISTINCT FROM %(was_superseded_by)s::text
  AND source_event_ids IS NOT DISTINCT FROM %(was_source_event_ids)s::jsonb
  AND reinforcement_count IS NOT DISTINCT FROM %(was_reinforcement_count)s::integer
  AND last_reinforced_at IS NOT DISTINCT FROM %(was_last_reinforced_at)s::timestamptz
  AND trust IS NOT DISTINCT FROM %(was_trust)s::text
  AND confidence IS NOT DISTINCT FROM %(was_confidence)s::double precision
  AND pinned IS NOT DISTINCT FROM %(was_pinned)s::boolean
  AND unpaired_change IS NOT DISTINCT FROM %(was_unpaired_change)s::boolean;

-- name: insert_fact_source
INSERT INTO fact_sources (fact_id, event_id) VALUES (%(fact_id)s, %(event_id)s)
ON CONFLICT DO NOTHING;

-- name: insert_fact_vector
INSERT INTO fact_vectors (fact_id, project, subject, model_id, dim, embedding, text_hash)
VALUES (
    %(fact_id)s, %(project)s, %(subject)s, %(model_id)s, %(dim)s, %(vector)s::vector,
    %(text_hash)s
);

-- name: copy_fact_vector
INSERT INTO fact_vectors (fact_id, project, subject, model_id, dim, embedding, text_hash)
SELECT %(fact_id)s, project, subject, model_id, dim, embedding, text_hash
FROM fact_vectors WHERE fact_id = %(from_id)s;

-- name: nearest_state_facts
-- The k nearest active state facts per query vector, nearest first, ties by id. The ORDER BY
-- expression is the one the per-dimension HNSW index is built on, so the planner may use it.
SELECT q.n AS query_index, hit.fact_id, hit.distance
FROM unnest(%(queries)s::text[]) WITH ORDINALITY AS q (vector, n)
CROSS JOIN LATERAL (
    SELECT v.fact_id, v.embedding::vector({dim}) <=> q.vector::vector({dim}) AS distance
    FROM fact_vectors AS v JOIN facts AS f ON f.id = v.fact_id
    WHERE v.project = %(project)s AND v.subject = %(subject)s AND v.model_id = %(model_id)s
      AND v.dim = {dim} AND f.status = 'active' AND f.kind = 'state'
    ORDER BY v.embedding::vector({dim}) <=> q.vector::vector({dim}), v.fact_id
    LIMIT %(k)s
) AS hit
ORDER BY q.n, hit.distance, hit.fact_id;

-- name: nearest_recall_facts
-- The vector arm of search: the k facts nearest one question vector, active ones of the
-- scope (one subject or the whole project, some kinds or all), or, for a search of the past,
-- the facts `among` whatever their status.
SELECT v.fact_id, v.embedding::vector({dim}) <=> %(query)s::vector({dim}) AS distance
FROM fact_vectors AS v JOIN facts AS f ON f.id = v.fact_id
WHERE v.project = %(project)s AND (%(subject)s::text IS NULL OR v.subject = %(subject)s)
  AND v.model_id = %(model_id)s AND v.dim = {dim}
  AND (%(kinds)s::text[] IS NULL OR f.kind = ANY(%(kinds)s::text[]))
  AND CASE WHEN %(among)s::text[] IS NULL THEN f.status = 'active'
           ELSE f.id = ANY(%(among)s::text[]) END
ORDER BY v.embedding::vector({dim}) <=> %(query)s::vector({dim}), v.fact_id
LIMIT %(k)s;

-- name: vector_log_mark
-- Where a reader of `vector_changes` stands now: the oldest transaction still running (every
-- older one has ended, and its rows are visible if it committed).
SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS mark;

-- name: active_recall_vectors
-- The recall vectors of a scope, for a process's in-memory index of it (vector_cache.py):
-- active facts of one subject or of the whole project, of some kinds or all, of one model and
-- dimension. vector_send is pgvector's binary form: a 4-byte header, then big-endian float4s.
SELECT v.fact_id, vector_send(v.embedding) AS vector
FROM fact_vectors AS v JOIN facts AS f ON f.id = v.fact_id
WHERE v.project = %(project)s AND (%(subject)s::text IS NULL OR v.subject = %(subject)s)
  AND v.model_id = %(model_id)s AND v.dim = %(dim)s AND f.status = 'active'
  AND (%(kinds)s::text[] IS NULL OR f.kind = ANY(%(kinds)s::text[]))
ORDER BY v.fact_id;

-- name: changed_recall_vectors
-- The facts of a recall scope logged by transactions not older than `after`, whether each is
-- searched now (a fact whose vector is gone, or now of another model, is not), and the mark
-- to read from next time, all in one snapshot. One row with a null fact_id when none.
SELECT s.mark::text AS mark, s.pruned::text AS pruned, c.fact_id, c.vector, c.live
FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS mark,
             (SELECT xid FROM vector_changes_pruned) AS pruned) AS s
LEFT JOIN LATERAL (
    SELECT l.fact_id, vector_send(v.embedding) AS vector,
           COALESCE(f.status = 'active' AND v.model_id = %(model_id)s AND v.dim = %(dim)s
                    AND (%(kinds)s::text[] IS NULL OR f.kind = ANY(%(kinds)s::text[])),
                    false) AS live
    FROM (SELECT DISTINCT fact_id FROM vector_changes
          WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
            AND xid >= %(after)s::xid8) AS l
    LEFT JOIN fact_vectors AS v ON v.fact_id = l.fact_id
    LEFT JOIN facts AS f ON f.id = l.fact_id
) AS c ON true;

-- name: prune_vector_changes
-- All but the newest :keep changes (fewer, when the transaction of the one before them wrote
-- some of them too), and none of a transaction not older than the oldest still running: a
-- reader's next mark is never older than that, so it never finds itself behind what was
-- pruned after it read (postgres_0016's trigger records how far).
DELETE FROM vector_changes
WHERE xid <= (SELECT xid FROM vector_changes ORDER BY xid DESC OFFSET %(keep)s LIMIT 1)
  AND xid < pg_snapshot_xmin(pg_current_snapshot());

-- name: create_vector_index
-- HNSW over one dimension's identity vectors, cosine distance (they are L2-normalised).
CREATE INDEX IF NOT EXISTS fact_vectors_hnsw_{dim}
    ON fact_vectors USING hnsw ((embedding::vector({dim})) vector_cosine_ops)
    WHERE dim = {dim};

-- name: fact_by_id
SELECT * FROM facts WHERE project = %(project)s AND id = %(id)s;

-- name: fact_ids_by_prefix
-- Ids that begin with a prefix a person typed: every id between the prefix padded with
-- zeros and padded with f's (a range over the primary key, not a scan).
SELECT id FROM facts
WHERE project = %(project)s AND id BETWEEN %(low)s AND %(high)s
ORDER BY id LIMIT %(limit)s;

-- name: facts_by_ids
SELECT * FROM facts
WHERE project = %(project)s AND id = ANY(%(ids)s::text[])
ORDER BY valid_from, id;

-- name: facts_by_identity
SELECT * FROM facts
WHERE project = %(project)s AND subject = %(subject)s AND status != 'retracted'
  AND identity_key = ANY(%(keys)s::text[])
ORDER BY valid_from, id;

-- name: active_facts_by_predicate
SELECT * FROM facts
WHERE project = %(project)s AND subject = %(subject)s AND status = 'active' AND kind = 'state'
  AND predicate = ANY(%(predicates)s::text[])
ORDER BY valid_from, id;

-- name: memories_by_norm
SELECT * FROM facts
WHERE project = %(project)s AND subject = %(subject)s AND kind = 'memory'
  AND status IN ('active', 'candidate')
  AND norm_hash = ANY(%(norm_hashes)s::text[])
ORDER BY valid_from, id;

-- name: facts_with_sources
SELECT * FROM facts
WHERE project = %(project)s AND subject = %(subject)s
  AND id IN (SELECT fact_id FROM fact_sources WHERE event_id = ANY(%(event_ids)s::text[]))
ORDER BY valid_from, id;

-- name: recall_words
-- The lexical arm of search: BM25 over the facts that hold any of the question's words
-- (`terms`, as `distill.core.recall.query_terms` gives them), best first. The facts are found
-- in `fact_terms` (postgres_0010), one row per fact and word holding all BM25 needs, read by
-- an index-only scan of the question's words: no fact's row is read. ts_rank has no idf, so
-- the score is computed here: idf from each word's document count among the matches (all the
-- scope's facts holding it) and N, the facts table's row count as the planner last estimated
-- it (counting the scope on every search read 100,000 rows; FTS5 too takes N from its whole
-- table), or the facts `among` for a search of the past; term frequency from the word's
-- positions, length from the number of distinct words (k1 1.2, b 0.75, as FTS5's bm25()).
-- Active facts of the scope, or, for a search of the past, the facts `among`.
WITH hits AS MATERIALIZED (
    SELECT t.fact_id AS id, t.term, t.tf::float8 AS tf, t.len::float8 AS len
    FROM fact_terms AS t
    WHERE t.project = %(project)s AND t.term = ANY(%(terms)s::text[])
      AND (%(subject)s::text IS NULL OR t.subject = %(subject)s)
      AND (%(kinds)s::text[] IS NULL OR t.kind = ANY(%(kinds)s::text[]))
      AND CASE WHEN %(among)s::text[] IS NULL THEN t.status = 'active'
               ELSE t.fact_id = ANY(%(among)s::text[]) END
),
df AS (SELECT term, count(*)::float8 AS df FROM hits GROUP BY term),
matched AS (SELECT id, min(len) AS len FROM hits GROUP BY id),
scope AS (
    SELECT
        CASE WHEN %(among)s::text[] IS NULL THEN greatest(
            (SELECT reltuples FROM pg_class WHERE oid = 'facts'::regclass),
            (SELECT count(*) FROM matched)
        ) ELSE cardinality(%(among)s::text[]) END::float8 AS n,
        greatest((SELECT avg(len) FROM matched), 1)::float8 AS avgdl
)
SELECT h.id AS fact_id,
       sum(
           ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5))
           * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.len / s.avgdl))
       ) AS score
FROM hits AS h JOIN df AS d USING (term) CROSS JOIN scope AS s
GROUP BY h.id
ORDER BY score DESC, h.id
LIMIT %(limit)s;

-- name: facts_to_reembed
-- Active facts whose vector is missing or was made by another model.
SELECT f.* FROM facts AS f LEFT JOIN fact_vectors AS v ON v.fact_id = f.id
WHERE f.status = 'active'
  AND (%(project)s::text IS NULL OR f.project = %(project)s)
  AND (v.fact_id IS NULL OR v.model_id != %(model_id)s)
  AND (%(after_id)s::text IS NULL OR f.id > %(after_id)s)
ORDER BY f.id
LIMIT %(limit)s;

-- name: delete_fact_vector
-- A vector is derived data: replaced when the facts are embedded again by another model.
DELETE FROM fact_vectors WHERE fact_id = %(fact_id)s;

-- name: tombstone_scopes
-- Scopes holding a tombstone: where prune has something to decide (distill/core/decay.py).
SELECT project, subject FROM facts
WHERE (%(projects)s::text[] IS NULL OR project = ANY(%(projects)s::text[]))
  AND status IN ('superseded', 'retracted')
GROUP BY project, subject
ORDER BY project, subject;

-- name: prune_fact_sources
DELETE FROM fact_sources WHERE fact_id = %(fact_id)s;

-- name: prune_fact
-- The tombstone as the pass read it, or nothing: a fact revived, pinned, reinforced or given
-- another receipt since is not deleted (the plan is refused).
DELETE FROM facts
WHERE id = %(fact_id)s AND project = %(project)s
  AND status IN ('superseded', 'retracted') AND NOT pinned
  AND status = %(status)s::text
  AND superseded_by IS NOT DISTINCT FROM %(superseded_by)s::text
  AND last_reinforced_at = %(last_reinforced_at)s::timestamptz;

-- name: active_facts
SELECT * FROM facts
WHERE project = %(project)s AND subject = %(subject)s AND status = 'active' AND kind = 'state'
ORDER BY last_reinforced_at DESC, id
LIMIT %(limit)s;

-- name: memory_scopes
-- Scopes with two or more active memories: where dedupe has something to compare.
SELECT project, subject FROM facts
WHERE (%(projects)s::text[] IS NULL OR project = ANY(%(projects)s::text[]))
  AND status = 'active' AND kind = 'memory'
GROUP BY project, subject
HAVING count(*) > 1
ORDER BY project, subject;

-- name: insert_rule
-- Rules are append-only: there is no statement that updates one.
INSERT INTO rules (
    id, project, subject, text, fingerprint, origin, source_fact_ids, pass_name, reason,
    created_at
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(text)s, %(fingerprint)s, %(origin)s,
    %(source_fact_ids)s, %(pass_name)s, %(reason)s, %(created_at)s
);

-- name: rules_of
SELECT * FROM rules
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
ORDER BY subject, created_at, id;

-- name: rule_scopes
-- Scopes with an active memory re-observed often enough to be offered as a rule.
SELECT DISTINCT project, subject FROM facts
WHERE (%(projects)s::text[] IS NULL OR project = ANY(%(projects)s::text[]))
  AND status = 'active' AND kind = 'memory' AND reinforcement_count >= %(threshold)s
ORDER BY project, subject;

-- name: facts_active
SELECT * FROM facts
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND status = 'active'
ORDER BY subject, valid_from, id;

-- name: facts_every_status
SELECT * FROM facts
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
ORDER BY subject, valid_from, id;

-- name: facts_as_of
SELECT * FROM facts
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND status IN ('active', 'superseded')
  AND valid_from <= %(as_of)s::timestamptz
  AND (valid_to IS NULL OR valid_to > %(as_of)s::timestamptz)
ORDER BY subject, valid_from, id;

-- name: count_facts_by_status
SELECT status, count(*) AS n FROM facts
WHERE (%(project)s::text IS NULL OR project = %(project)s)
GROUP BY status;

-- ---------------------------------------------------------------------------------------------
-- conflicts

-- name: insert_conflict
INSERT INTO conflicts (
    id, project, subject, identity_key, kind, status, member_ids, reason, created_at,
    resolved_at, kept_fact_id, resolved_by, accepted_event_ids
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(identity_key)s, %(kind)s, %(status)s, %(member_ids)s,
    %(reason)s, %(created_at)s, %(resolved_at)s, %(kept_fact_id)s, %(resolved_by)s,
    %(accepted_event_ids)s
);

-- name: update_conflict
UPDATE conflicts SET
    identity_key = %(identity_key)s, kind = %(kind)s, status = %(status)s,
    member_ids = %(member_ids)s, reason = %(reason)s, created_at = %(created_at)s,
    resolved_at = %(resolved_at)s, kept_fact_id = %(kept_fact_id)s,
    resolved_by = %(resolved_by)s, accepted_event_ids = %(accepted_event_ids)s
WHERE id = %(id)s;

-- name: conflict_by_id
SELECT * FROM conflicts WHERE project = %(project)s AND id = %(id)s;

-- name: conflict_ids_by_prefix
-- Ids that begin with a prefix a person typed: every id between the prefix padded with
-- zeros and padded with f's (a range over the primary key, not a scan).
SELECT id FROM conflicts
WHERE project = %(project)s AND id BETWEEN %(low)s AND %(high)s
ORDER BY id LIMIT %(limit)s;

-- name: conflicts_for
-- The open and the resolved sets of these identities: a later claim may show that a claim's
-- resolution never should have been, and must see that a person's is theirs.
SELECT * FROM conflicts
WHERE project = %(project)s AND subject = %(subject)s
  AND status IN ('open', 'resolved')
  AND identity_key = ANY(%(keys)s::text[])
ORDER BY created_at, id;

-- name: conflicts_list
SELECT * FROM conflicts
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY created_at, id;

-- name: count_open_conflicts
SELECT kind, count(*) AS n FROM conflicts
WHERE status = 'open' AND (%(project)s::text IS NULL OR project = %(project)s)
GROUP BY kind;

-- ---------------------------------------------------------------------------------------------
-- observations, aliases, audit

-- name: insert_observation
-- With its audit entry's id, job and time when the row stands for that entry (postgres_0019).
INSERT INTO observations (
    id, project, subject, event_id, fact_id, extractor, claim, claim_hash, source, trust,
    occurred_at, outcome, reason, audit_id, job_id, at
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(event_id)s, %(fact_id)s, %(extractor)s, %(claim)s,
    %(claim_hash)s, %(source)s, %(trust)s, %(occurred_at)s, %(outcome)s, %(reason)s,
    %(audit_id)s, %(job_id)s, %(at)s
);

-- name: observations_for_fact
SELECT * FROM observations
WHERE project = %(project)s AND fact_id = %(fact_id)s
ORDER BY occurred_at, id;

-- name: observations_for_events
SELECT * FROM observations
WHERE project = %(project)s AND event_id = ANY(%(event_ids)s::text[])
ORDER BY occurred_at, id;

-- name: seen_claims
SELECT event_id, claim_hash FROM observations WHERE event_id = ANY(%(event_ids)s::text[]);

-- name: insert_alias
INSERT INTO aliases (project, alias, canonical, distance, learned_at)
VALUES (%(project)s, %(alias)s, %(canonical)s, %(distance)s, %(learned_at)s)
ON CONFLICT (project, alias) DO NOTHING;

-- name: alias_by_name
SELECT * FROM aliases WHERE project = %(project)s AND alias = %(alias)s;

-- name: aliases_for
SELECT * FROM aliases WHERE project = %(project)s AND alias = ANY(%(predicates)s::text[]);

-- name: insert_audit
INSERT INTO audit (
    id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(job_id)s, %(pass_name)s, %(action)s, %(reason)s,
    %(fact_id)s, %(before)s, %(after)s, %(at)s
);

-- name: audit_for_fact
-- A fact's entries: the audit table's, and those its observations' rows stand for
-- (postgres_0019: the row's `audit_id`, `job_id` and `at`, with its own id, event, outcome
-- and reason; `rows.audit_from_row` makes the entry of them).
SELECT id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at,
       NULL::text AS observation_id, NULL::text AS event_id, NULL::text AS outcome
FROM audit WHERE project = %(project)s AND fact_id = %(fact_id)s
UNION ALL
SELECT audit_id, project, subject, job_id, NULL, NULL, reason, fact_id, NULL, NULL, at,
       id, event_id, outcome
FROM observations
WHERE project = %(project)s AND fact_id = %(fact_id)s AND audit_id IS NOT NULL
ORDER BY at, id;

-- name: audit_latest
-- The latest entries of a project or of one subject, from the audit table and from the
-- observations' rows (as audit_for_fact).
SELECT * FROM (
    SELECT id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at,
           NULL::text AS observation_id, NULL::text AS event_id, NULL::text AS outcome
    FROM audit
    WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
    UNION ALL
    SELECT audit_id, project, subject, job_id, NULL, NULL, reason, fact_id, NULL, NULL, at,
           id, event_id, outcome
    FROM observations
    WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
      AND audit_id IS NOT NULL
    ORDER BY at DESC, id DESC
    LIMIT %(limit)s
) AS latest
ORDER BY at, id;

-- name: fact_changes_after
-- The revisions of a project's (or one subject's) facts recorded after an instant: undone
-- from the newest back, they give each fact as it was believed then.
SELECT *, NULL::text AS observation_id, NULL::text AS event_id, NULL::text AS outcome FROM audit
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND at > %(after)s AND fact_id IS NOT NULL AND action LIKE '%%\_fact'
ORDER BY at, id;

-- ---------------------------------------------------------------------------------------------
-- embedding cache

-- name: cached_embeddings
SELECT text_hash, vector FROM embedding_cache
WHERE model_id = %(model_id)s AND text_hash = ANY(%(hashes)s::text[]);

-- name: cache_embedding
INSERT INTO embedding_cache (model_id, text_hash, vector)
VALUES (%(model_id)s, %(text_hash)s, %(vector)s)
ON CONFLICT DO NOTHING;

-- ---------------------------------------------------------------------------------------------
-- extraction cache

-- name: cached_extractions
SELECT event_id, candidates FROM extractions
WHERE extractor = %(extractor)s AND event_id = ANY(%(ids)s::text[]);

-- name: cache_extraction
INSERT INTO extractions (extractor, event_id, candidates, created_at)
VALUES (%(extractor)s, %(event_id)s, %(candidates)s, %(now)s)
ON CONFLICT (extractor, event_id)
DO UPDATE SET candidates = excluded.candidates, created_at = excluded.created_at;

-- name: forget_extractions
DELETE FROM extractions
WHERE %(project)s::text IS NULL
   OR event_id IN (SELECT id FROM events WHERE project = %(project)s);

-- name: try_claims_lock
-- Free when no session holds the claimer's lock: its connection, and so its claim, is gone.
-- Taken by this session when free, and let go at once (release_claims_lock).
SELECT pg_try_advisory_lock(%(key)s) AS free;

-- name: release_claims_lock
SELECT pg_advisory_unlock(%(key)s);

-- name: hold_claims_lock
-- Held by a store's own connection for as long as it is connected.
SELECT pg_advisory_lock(%(key)s);

-- name: notify_events
-- Wakes listening workers when the transaction that stored new events commits.
SELECT pg_notify('distill_events', '');

-- name: listen_events
LISTEN distill_events;

-- ---------------------------------------------------------------------------------------------
-- copy: a whole store into an empty one (copy.py). Each table is read in pages in primary-key
-- order (`after_*` are the last page's key, NULL for the first page); tables whose plain
-- insert above writes every column are written with it, the others here. Vectors are read as
-- double precision[]: float4 → float8 is exact, and so is float8's text form, so the copy
-- gets back the very float32 values that were stored.

-- name: copy_snapshot
-- Every page of every table from one snapshot, however long the copy takes (the first
-- statement of the transaction).
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: copy_columns
-- Every column of every table, so that a column the copy does not know stops it. The
-- identity vector column, `embedding` here, is `vector` to the copy.
SELECT table_name, column_name FROM (
    SELECT table_name::text AS table_name,
           CASE WHEN table_name = 'fact_vectors' AND column_name = 'embedding' THEN 'vector'
                ELSE column_name::text END AS column_name,
           ordinal_position::integer AS n
    FROM information_schema.columns
    WHERE table_schema = current_schema()
) AS columns
ORDER BY table_name, n;

-- name: copy_row_counts
SELECT 'events'::text AS table_name, count(*) AS n FROM events
UNION ALL SELECT 'jobs', count(*) FROM jobs
UNION ALL SELECT 'job_events', count(*) FROM job_events
UNION ALL SELECT 'facts', count(*) FROM facts
UNION ALL SELECT 'fact_sources', count(*) FROM fact_sources
UNION ALL SELECT 'fact_vectors', count(*) FROM fact_vectors
UNION ALL SELECT 'conflicts', count(*) FROM conflicts
UNION ALL SELECT 'observations', count(*) FROM observations
UNION ALL SELECT 'aliases', count(*) FROM aliases
UNION ALL SELECT 'audit', count(*) FROM audit
UNION ALL SELECT 'embedding_cache', count(*) FROM embedding_cache
UNION ALL SELECT 'extractions', count(*) FROM extractions
UNION ALL SELECT 'rules', count(*) FROM rules
UNION ALL SELECT 'pass_cursors', count(*) FROM pass_cursors
UNION ALL SELECT 'procedures', count(*) FROM procedures
UNION ALL SELECT 'mentions', count(*) FROM mentions
UNION ALL SELECT 'topics', count(*) FROM topics;

-- name: copy_read_events
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_write_events
INSERT INTO events (
    id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
    idempotency_key, action
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(text)s, %(occurred_at)s, %(recorded_at)s, %(source)s,
    %(trust)s, %(claims)s, %(idempotency_key)s, %(action)s
);

-- name: copy_read_jobs
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       heartbeat_at, llm_calls, prompt_tokens, completion_tokens, claim_token, claim_host,
       claim_pid, claim_started, claimed_at
FROM jobs
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_write_jobs
INSERT INTO jobs (
    id, project, subject, status, attempts, error, created_at, updated_at, not_before,
    heartbeat_at, llm_calls, prompt_tokens, completion_tokens, claim_token, claim_host,
    claim_pid, claim_started, claimed_at
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(status)s, %(attempts)s, %(error)s, %(created_at)s,
    %(updated_at)s, %(not_before)s, %(heartbeat_at)s, %(llm_calls)s, %(prompt_tokens)s,
    %(completion_tokens)s, %(claim_token)s, %(claim_host)s, %(claim_pid)s, %(claim_started)s,
    %(claimed_at)s
);

-- name: copy_read_job_events
SELECT job_id, event_id FROM job_events
WHERE %(after_job_id)s::text IS NULL
   OR (job_id, event_id) > (%(after_job_id)s::text, %(after_event_id)s::text)
ORDER BY job_id, event_id
LIMIT %(limit)s;

-- name: copy_read_facts
SELECT id, project, subject, kind, predicate, value, text, qualifiers, attribution, stated,
       identity_key, status, valid_from, valid_to, recorded_at, retired_at, supersedes_id,
       superseded_by, source_event_ids, reinforcement_count, last_reinforced_at, trust,
       confidence, pinned, unpaired_change, norm_hash
FROM facts
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_read_fact_sources
SELECT fact_id, event_id FROM fact_sources
WHERE %(after_fact_id)s::text IS NULL
   OR (fact_id, event_id) > (%(after_fact_id)s::text, %(after_event_id)s::text)
ORDER BY fact_id, event_id
LIMIT %(limit)s;

-- name: copy_read_fact_vectors
SELECT fact_id, project, subject, model_id, dim, text_hash,
       embedding::real[]::double precision[] AS vector
FROM fact_vectors
WHERE %(after_fact_id)s::text IS NULL OR fact_id > %(after_fact_id)s
ORDER BY fact_id
LIMIT %(limit)s;

-- name: copy_read_conflicts
SELECT id, project, subject, identity_key, kind, status, member_ids, reason, created_at,
       resolved_at, kept_fact_id, resolved_by, accepted_event_ids
FROM conflicts
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_read_observations
SELECT id, project, subject, event_id, fact_id, extractor, claim, claim_hash, source, trust,
       occurred_at, outcome, reason, audit_id, job_id, at
FROM observations
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_read_aliases
SELECT project, alias, canonical, distance, learned_at FROM aliases
WHERE %(after_project)s::text IS NULL
   OR (project, alias) > (%(after_project)s::text, %(after_alias)s::text)
ORDER BY project, alias
LIMIT %(limit)s;

-- name: copy_read_audit
SELECT id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at
FROM audit
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_read_embedding_cache
SELECT model_id, text_hash, vector FROM embedding_cache
WHERE %(after_model_id)s::text IS NULL
   OR (model_id, text_hash) > (%(after_model_id)s::text, %(after_text_hash)s::text)
ORDER BY model_id, text_hash
LIMIT %(limit)s;

-- name: copy_read_rules
SELECT id, project, subject, text, fingerprint, origin, source_fact_ids, pass_name, reason,
       created_at
FROM rules
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_read_extractions
SELECT extractor, event_id, candidates, created_at FROM extractions
WHERE %(after_extractor)s::text IS NULL
   OR (extractor, event_id) > (%(after_extractor)s::text, %(after_event_id)s::text)
ORDER BY extractor, event_id
LIMIT %(limit)s;

-- name: copy_write_extractions
INSERT INTO extractions (extractor, event_id, candidates, created_at)
VALUES (%(extractor)s, %(event_id)s, %(candidates)s, %(created_at)s);

-- Erase: the one hard delete (Memory.erase). Every statement takes the scope, a project and a
-- subject or NULL for every subject of the project; rows that only point at the scope's rows
-- go first, for the foreign keys.
-- name: erase_counts
SELECT
    (SELECT count(*) FROM events WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)) AS events,
    (SELECT count(*) FROM facts WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)) AS facts,
    (SELECT count(*) FROM observations WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)) AS observations,
    (SELECT count(*) FROM conflicts WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)) AS conflicts,
    (SELECT count(*) FROM jobs WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)) AS jobs,
    (SELECT count(*) FROM audit WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
        AND action NOT IN ('erase_subject', 'erase_project')) AS audit,
    (SELECT count(*) FROM rules WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)) AS rules;

-- name: erase_extractions
DELETE FROM extractions WHERE event_id IN (SELECT id FROM events WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s));

-- name: erase_job_events
DELETE FROM job_events WHERE job_id IN (SELECT id FROM jobs WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s));

-- name: erase_jobs
DELETE FROM jobs WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_fact_sources
DELETE FROM fact_sources WHERE fact_id IN (SELECT id FROM facts WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s));

-- name: note_erased_vectors
-- Before the scope's vectors go: every process's in-memory index drops them on its next
-- lookup, as it drops a retired fact's.
INSERT INTO vector_changes (project, subject, fact_id)
SELECT project, subject, fact_id FROM fact_vectors
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_fact_vectors
DELETE FROM fact_vectors WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_observations
DELETE FROM observations WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_conflicts
DELETE FROM conflicts WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_audit
-- The receipts of earlier erases stay: they are the record that an erase happened.
DELETE FROM audit WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND action NOT IN ('erase_subject', 'erase_project');

-- name: erase_facts
DELETE FROM facts WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_events
DELETE FROM events WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_aliases
-- Aliases are project-wide: erased with the whole project only.
DELETE FROM aliases WHERE project = %(project)s AND %(subject)s::text IS NULL;

-- name: erase_rules
DELETE FROM rules WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_cached_embeddings
-- The vectors of the erased texts, under every model (a vector tells of its text), but
-- those a fact of another scope still names (two subjects may say "bike_count: 3").
DELETE FROM embedding_cache
WHERE text_hash = ANY(%(hashes)s::text[])
  AND NOT EXISTS (
      SELECT 1 FROM fact_vectors AS v
      WHERE v.model_id = embedding_cache.model_id AND v.text_hash = embedding_cache.text_hash
  );

-- ---------------------------------------------------------------------------------------------
-- api keys: the HTTP API's keys, by the SHA-256 of their token (sql_keys.py)

-- name: insert_api_key
INSERT INTO api_keys (id, project, name, token_hash, created_at, revoked_at)
VALUES (%(id)s, %(project)s, %(name)s, %(token_hash)s, %(created_at)s, NULL);

-- name: api_key_by_hash
SELECT id, project, name, created_at, revoked_at FROM api_keys
WHERE token_hash = %(token_hash)s;

-- name: api_key_by_id
SELECT id, project, name, created_at, revoked_at FROM api_keys WHERE id = %(id)s;

-- name: api_keys_list
-- A project's keys; with no project, every key (the admin keys, project NULL, too).
SELECT id, project, name, created_at, revoked_at FROM api_keys
WHERE %(project)s::text IS NULL OR project = %(project)s
ORDER BY created_at, id;

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = %(now)s WHERE id = %(id)s AND revoked_at IS NULL;

-- name: count_api_keys
SELECT count(*) AS made, count(*) FILTER (WHERE revoked_at IS NULL) AS active FROM api_keys;

-- name: subject_known
-- Whether the project holds anything of a subject: every stored event is held by a job of
-- its subject until an erase (jobs_by_subject answers it).
SELECT EXISTS (
    SELECT 1 FROM jobs WHERE project = %(project)s AND subject = %(subject)s
) AS known;

-- ---------------------------------------------------------------------------------------------
-- derive: votes (observations with outcome 'vote'), the scopes that have them, and the
-- derive pass's invalidations (for drift). See distill/passes/derive.py.

-- name: vote_observations
-- A scope's votes after the derive cursor (an observation id: ids sort by creation), oldest
-- first, at most %(limit)s (observations_votes).
SELECT * FROM observations
WHERE project = %(project)s AND subject = %(subject)s AND outcome = 'vote'
  AND (%(after)s::text IS NULL OR id > %(after)s::text)
ORDER BY id
LIMIT %(limit)s;

-- name: vote_scopes
-- Scopes holding votes: where derive has something to count, or a cycle to record.
SELECT DISTINCT project, subject FROM observations
WHERE (%(projects)s::text[] IS NULL OR project = ANY(%(projects)s::text[]))
  AND outcome = 'vote'
ORDER BY project, subject;

-- name: derive_invalidations
-- The world times (valid_to) at which the derive pass closed facts of a project (or of one
-- subject; of every project with NULL), after %(since)s: what drift counts (distill/core/drift.py).
SELECT f.project AS project, f.subject AS subject, f.valid_to AS at
FROM audit AS a JOIN facts AS f ON f.id = a.fact_id
WHERE (%(project)s::text IS NULL OR a.project = %(project)s)
  AND (%(subject)s::text IS NULL OR a.subject = %(subject)s)
  AND a.pass_name = 'derive' AND a.action = 'retire_fact'
  AND f.valid_to > %(since)s
ORDER BY f.project, f.subject, f.valid_to;

-- name: subjects_of
-- A project's subjects: every stored event is held by a job of its subject until an erase.
SELECT DISTINCT subject FROM jobs WHERE project = %(project)s ORDER BY subject;

-- name: count_derive
-- The derive pass's counters, read from its audit: cycles run (one `record_cycle` each, empty
-- ones too), facts it wrote (elected, or replacing one it closed), facts it closed.
SELECT count(*) FILTER (WHERE action = 'record_cycle') AS derive_cycles,
       count(*) FILTER (WHERE action = 'create_fact') AS facts_derived,
       count(*) FILTER (WHERE action = 'retire_fact') AS facts_invalidated
FROM audit
WHERE pass_name = 'derive' AND (%(project)s::text IS NULL OR project = %(project)s);

-- name: count_patterns
-- What the procedures and topics passes keep, by status: `distill status` and /metrics.
SELECT (SELECT count(*) FROM procedures WHERE status = 'candidate'
          AND (%(project)s::text IS NULL OR project = %(project)s)) AS procedures_candidate,
       (SELECT count(*) FROM procedures WHERE status = 'active'
          AND (%(project)s::text IS NULL OR project = %(project)s)) AS procedures_active,
       (SELECT count(*) FROM procedures WHERE status = 'deprecated'
          AND (%(project)s::text IS NULL OR project = %(project)s)) AS procedures_deprecated,
       (SELECT count(*) FROM topics WHERE status = 'active'
          AND (%(project)s::text IS NULL OR project = %(project)s)) AS topics_active,
       (SELECT count(*) FROM topics WHERE status = 'retired'
          AND (%(project)s::text IS NULL OR project = %(project)s)) AS topics_retired;

-- name: pass_cursor
-- Where a pass that walks an append-only stream (derive's votes, topics' events) stopped.
SELECT position FROM pass_cursors
WHERE project = %(project)s AND subject = %(subject)s AND pass_name = %(pass_name)s;

-- name: move_pass_cursor
-- Moves only from where the pass read it (`was`; NULL: never moved): one row, or none.
INSERT INTO pass_cursors (project, subject, pass_name, position, moved_at)
VALUES (%(project)s, %(subject)s, %(pass_name)s, %(position)s, %(moved_at)s)
ON CONFLICT (project, subject, pass_name) DO UPDATE
SET position = excluded.position, moved_at = excluded.moved_at
WHERE pass_cursors.position = %(was)s;

-- name: erase_pass_cursors
DELETE FROM pass_cursors WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: copy_read_pass_cursors
-- Copied with the audit they point into: derive's cursor marks the votes it has counted, and
-- a copy that forgot it would count them again (distill/adapters/store/copy.py).
SELECT project, subject, pass_name, position, moved_at FROM pass_cursors
WHERE %(after_project)s::text IS NULL
   OR (project, subject, pass_name)
      > (%(after_project)s::text, %(after_subject)s::text, %(after_pass_name)s::text)
ORDER BY project, subject, pass_name
LIMIT %(limit)s;

-- name: copy_write_pass_cursors
INSERT INTO pass_cursors (project, subject, pass_name, position, moved_at)
VALUES (%(project)s, %(subject)s, %(pass_name)s, %(position)s, %(moved_at)s);

-- procedures and topics (core/procedures.py, core/topics.py; sql_cortex.py)

-- name: action_events
-- A subject's events that record an action: what the procedures pass counts.
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE project = %(project)s AND subject = %(subject)s AND action IS NOT NULL
ORDER BY occurred_at, id;

-- name: action_scopes
SELECT DISTINCT project, subject FROM events
WHERE action IS NOT NULL AND (%(projects)s::text[] IS NULL OR project = ANY(%(projects)s::text[]))
ORDER BY project, subject;

-- name: procedures_of
SELECT * FROM procedures
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY subject, action_a, action_b;

-- name: insert_procedure
INSERT INTO procedures (
    id, project, subject, action_a, action_b, status, support, successes, failures,
    precondition, source_event_ids, created_at, updated_at
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(action_a)s, %(action_b)s, %(status)s, %(support)s, %(successes)s,
    %(failures)s, %(precondition)s, %(source_event_ids)s, %(created_at)s, %(updated_at)s
);

-- name: update_procedure
-- Only the version that was read is changed: a procedure revised meanwhile refuses the plan.
UPDATE procedures SET
    status = %(status)s, support = %(support)s, successes = %(successes)s, failures = %(failures)s,
    precondition = %(precondition)s, source_event_ids = %(source_event_ids)s,
    updated_at = %(updated_at)s
WHERE id = %(id)s AND updated_at = %(before_updated_at)s;

-- name: event_scopes
SELECT DISTINCT project, subject FROM events
WHERE (%(projects)s::text[] IS NULL OR project = ANY(%(projects)s::text[]))
ORDER BY project, subject;

-- name: topic_events_after
-- A subject's events recorded after the cursor (recorded_at, id), each with whether a job
-- that holds it is still to run (its extraction not done yet).
SELECT e.id, e.project, e.subject, e.text, e.occurred_at, e.recorded_at, e.source, e.trust,
       e.claims, e.idempotency_key, e.action,
       EXISTS (
           SELECT 1 FROM job_events je JOIN jobs j ON j.id = je.job_id
           WHERE je.event_id = e.id AND j.status IN ('pending', 'running')
       ) AS waiting
FROM events e
WHERE e.project = %(project)s AND e.subject = %(subject)s
  AND (%(after_id)s::text IS NULL OR (e.recorded_at, e.id) > (%(after_time)s::timestamptz, %(after_id)s::text))
ORDER BY e.recorded_at, e.id
LIMIT %(limit)s;

-- name: mentions_of
SELECT event_id, entity, project, subject, name, origin, recorded_at FROM mentions
WHERE project = %(project)s AND subject = %(subject)s
ORDER BY event_id, entity;

-- name: insert_mention
INSERT INTO mentions (event_id, entity, project, subject, name, origin, recorded_at)
VALUES (%(event_id)s, %(entity)s, %(project)s, %(subject)s, %(name)s, %(origin)s, %(recorded_at)s)
ON CONFLICT (event_id, entity) DO NOTHING;

-- name: topics_of
SELECT * FROM topics
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s)
  AND (%(include_retired)s::boolean OR status = 'active')
ORDER BY subject, status, created_at, id;

-- name: insert_topic
INSERT INTO topics (
    id, project, subject, name, members, names, embedding, named_by, status, created_at,
    retired_at
) VALUES (
    %(id)s, %(project)s, %(subject)s, %(name)s, %(members)s, %(names)s, %(embedding)s, %(named_by)s, %(status)s,
    %(created_at)s, %(retired_at)s
);

-- name: update_topic
-- Only the version that was read is changed: a topic revised meanwhile refuses the plan.
UPDATE topics SET
    name = %(name)s, names = %(names)s, embedding = %(embedding)s, named_by = %(named_by)s,
    status = %(status)s, retired_at = %(retired_at)s
WHERE id = %(id)s AND status = %(before_status)s;

-- name: erase_procedures
DELETE FROM procedures WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_mentions
DELETE FROM mentions WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: erase_topics
DELETE FROM topics WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- name: copy_read_procedures
SELECT id, project, subject, action_a, action_b, status, support, successes, failures,
       precondition, source_event_ids, created_at, updated_at
FROM procedures
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: copy_read_mentions
SELECT event_id, entity, project, subject, name, origin, recorded_at FROM mentions
WHERE %(after_event_id)s::text IS NULL OR (event_id, entity) > (%(after_event_id)s::text, %(after_entity)s::text)
ORDER BY event_id, entity
LIMIT %(limit)s;

-- name: copy_read_topics
SELECT id, project, subject, name, members, names, embedding, named_by, status, created_at,
       retired_at
FROM topics
WHERE %(after_id)s::text IS NULL OR id > %(after_id)s
ORDER BY id
LIMIT %(limit)s;

-- the extraction watermark: what a pass has read of each fact (distill/core/watermark.py)

-- name: unmarked_memories
-- A scope's live memories `pass_name` has no mark of their text for (new, or text changed),
-- least recently reinforced first. The signature is `core.watermark.signature` in SQL.
SELECT f.* FROM facts AS f
LEFT JOIN fact_marks AS m ON m.fact_id = f.id AND m.pass_name = %(pass_name)s
WHERE f.project = %(project)s AND f.subject = %(subject)s AND f.status = 'active'
  AND f.kind = 'memory'
  AND (m.signature IS NULL
       OR m.signature != encode(sha256(convert_to(f.text, 'UTF8')), 'hex'))
ORDER BY f.last_reinforced_at, f.id;

-- name: fact_marks
SELECT fact_id, signature FROM fact_marks
WHERE pass_name = %(pass_name)s AND project = %(project)s AND fact_id = ANY(%(ids)s::text[]);

-- name: mark_fact
-- A fact of the scope marked, moved only from the signature the pass read (`was`; NULL:
-- unmarked): one row, or none (a fact not of the scope, or marked meanwhile).
INSERT INTO fact_marks (fact_id, pass_name, project, subject, signature, marked_at)
SELECT id, %(pass_name)s, project, subject, %(signature)s, %(marked_at)s FROM facts
WHERE id = %(fact_id)s AND project = %(project)s AND subject = %(subject)s
ON CONFLICT (fact_id, pass_name) DO UPDATE
SET signature = excluded.signature, marked_at = excluded.marked_at
WHERE fact_marks.signature = %(was)s::text;

-- name: prune_fact_marks
DELETE FROM fact_marks WHERE fact_id = %(fact_id)s;

-- name: erase_fact_marks
DELETE FROM fact_marks
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR subject = %(subject)s);

-- the worker's schedule: scheduled passes per scope, their leases and health (sql_schedule.py)

-- name: schedule_projects
-- Every project that ever stored an event (each event is held by a job until an erase).
SELECT DISTINCT project FROM jobs ORDER BY project;

-- name: schedule_add
-- A scope's pass seen for the first time: due at once (`due_at` = now), unless it has a row.
INSERT INTO pass_schedule (project, scope, pass_name, created_at, due_at)
VALUES (%(project)s, %(scope)s, %(pass_name)s, %(now)s, %(now)s)
ON CONFLICT (project, scope, pass_name) DO NOTHING;

-- name: schedule_rows
SELECT * FROM pass_schedule
WHERE (%(project)s::text IS NULL OR project = %(project)s)
ORDER BY project, scope, pass_name;

-- name: schedule_lease
-- Taken only for the generation the worker read, and only when nobody holds it (or the
-- holder's lease ran out): one row, or none. The row lock makes a second taker wait, then
-- see the first one's lease and take nothing.
UPDATE pass_schedule SET lease_owner = %(owner)s, lease_expires_at = %(expires_at)s
WHERE project = %(project)s AND scope = %(scope)s AND pass_name = %(pass_name)s
  AND generation = %(generation)s
  AND (lease_owner IS NULL OR lease_expires_at <= %(now)s);

-- name: schedule_finish
-- Only by the lease's holder, for the generation it ran: one row, or none (the lease was lost).
UPDATE pass_schedule
SET generation = generation + 1, runs = runs + 1, last_run_at = %(ran_at)s,
    last_clean_at = COALESCE(%(clean_at)s::timestamptz, last_clean_at), due_at = %(due_at)s,
    retry_at = %(retry_at)s, last_report = %(report)s::jsonb, health = %(health)s,
    last_error = %(error)s, failures = %(failures)s,
    lease_owner = NULL, lease_expires_at = NULL
WHERE project = %(project)s AND scope = %(scope)s AND pass_name = %(pass_name)s
  AND generation = %(generation)s AND lease_owner = %(owner)s;

-- name: schedule_release
-- A lease given back without a run (the worker was stopped first): the pass stays as it was.
UPDATE pass_schedule SET lease_owner = NULL, lease_expires_at = NULL
WHERE project = %(project)s AND scope = %(scope)s AND pass_name = %(pass_name)s
  AND generation = %(generation)s AND lease_owner = %(owner)s;

-- name: schedule_force
-- Due at once, whatever the last run said (`distill run-due --force`, the API's force).
UPDATE pass_schedule SET due_at = %(now)s, retry_at = NULL, last_clean_at = NULL
WHERE project = %(project)s AND (%(pass_name)s::text IS NULL OR pass_name = %(pass_name)s);

-- name: backlog_events
-- A project's backlog: the events its open jobs hold (pending or running). Few open jobs (one
-- pending per subject), found by jobs_by_status; their events by job_events' key.
SELECT count(*) AS n FROM jobs JOIN job_events ON job_events.job_id = jobs.id
WHERE jobs.status IN ('pending', 'running') AND jobs.project = %(project)s;

-- name: erase_pass_schedule
-- A whole project's schedule goes with it; a subject's erase takes the rows of passes run
-- for that subject only (the project's own passes still have the other subjects to run on).
DELETE FROM pass_schedule
WHERE project = %(project)s AND (%(subject)s::text IS NULL OR scope = %(subject)s);

-- Events waiting for consolidation -------------------------------------------------------------

-- name: waiting_events
-- A subject's events that no run has consolidated yet (its open jobs': pending or running),
-- newest first: what the context block shows beside the facts while the worker's trigger
-- waits for more. The subject's few open jobs by jobs_by_subject, their events by key.
SELECT events.id, events.project, events.subject, events.text, events.occurred_at,
       events.recorded_at, events.source, events.trust, events.claims,
       events.idempotency_key, events.action
FROM jobs
JOIN job_events ON job_events.job_id = jobs.id
JOIN events ON events.id = job_events.event_id
WHERE jobs.project = %(project)s AND jobs.subject = %(subject)s
  AND jobs.status IN ('pending', 'running')
ORDER BY events.occurred_at DESC, events.id DESC
LIMIT %(limit)s;
