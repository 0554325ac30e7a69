-- The SQLite store's queries, by name. `distill.adapters.store.queries` parses this file once
-- at import; code refers to a query by its name only. Every backend defines the same names.
--
-- Lists travel as one JSON array parameter, expanded with json_each, so that every query is
-- a fixed text; a list of ids or hashes through stored_id(value), which packs each item as the
-- columns hold it (rows.pack_id, registered on every connection). Ids and hashes are 16-byte
-- BLOBs (or text, when not 32 hex characters) and instants integer microseconds since the
-- epoch: `<=` on instants compares them, and ORDER BY id orders ids as their hex text.

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
);

-- name: schema_version
SELECT coalesce(max(version), 0) AS version FROM schema_migrations;

-- name: record_migration
INSERT INTO schema_migrations (version, applied_at) VALUES (:version, :applied_at);

-- ---------------------------------------------------------------------------------------------
-- events

-- name: insert_event
INSERT INTO events (
    id, project, subject, text, occurred_at, recorded_at, source, trust, claims, idempotency_key,
    action
) VALUES (
    :id, :project, :subject, :text, :occurred_at, :recorded_at, :source, :trust, :claims,
    :idempotency_key, :action
)
ON CONFLICT (project, idempotency_key) DO NOTHING;

-- name: event_by_key
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE project = :project AND idempotency_key = :idempotency_key;

-- name: events_by_ids
-- `+project`: looked up by primary key, then checked; without the +, SQLite (which has no
-- statistics) prefers the project index and reads every event of the project.
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE +project = :project AND id IN (SELECT stored_id(value) FROM json_each(:ids))
ORDER BY occurred_at, id;

-- name: events_page
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE (:project IS NULL OR project = :project)
  AND (:subject IS NULL OR subject = :subject)
  AND (:after_id IS NULL OR (occurred_at, id) > (:after_time, :after_id))
ORDER BY occurred_at, id
LIMIT :limit;

-- name: count_events
SELECT count(*) AS n FROM events WHERE (:project IS NULL OR project = :project);

-- ---------------------------------------------------------------------------------------------
-- jobs

-- name: pending_job_for_subject
SELECT id FROM jobs
WHERE project = :project AND subject = :subject AND status = 'pending'
ORDER BY created_at, id
LIMIT 1;

-- name: insert_job
INSERT INTO jobs (id, project, subject, status, attempts, created_at, updated_at)
VALUES (:id, :project, :subject, 'pending', 0, :now, :now);

-- name: touch_job
UPDATE jobs SET updated_at = :now WHERE id = :id;

-- name: attach_event_to_job
INSERT OR IGNORE INTO job_events (job_id, event_id) VALUES (:job_id, :event_id);

-- name: due_jobs
-- A subject's jobs are decided in the order they were created: a job whose subject has an
-- earlier job running elsewhere waits for it.
SELECT id FROM jobs
WHERE ((status = 'pending' AND (not_before IS NULL OR not_before <= :now))
       OR (status = 'failed' AND attempts < :max_attempts
           AND not_before IS NOT NULL AND not_before <= :now))
  -- The worker's trigger: a pending job is due once it holds `min_events` events, or once it
  -- waited since `waited_before` (1 and now: every pending job, as `distill consolidate`).
  AND (status = 'failed' OR :min_events <= 1 OR created_at <= :waited_before
       OR (SELECT count(*) FROM job_events WHERE job_events.job_id = jobs.id) >= :min_events)
  AND NOT EXISTS (
      SELECT 1 FROM jobs AS earlier
      WHERE earlier.project = jobs.project AND earlier.subject = jobs.subject
        AND earlier.status = 'running'
        AND (earlier.created_at < jobs.created_at
             OR (earlier.created_at = jobs.created_at AND earlier.id < jobs.id)))
ORDER BY created_at, id
LIMIT :limit;

-- name: earlier_open_job
SELECT 1 AS found
FROM jobs AS this JOIN jobs AS earlier
  ON earlier.project = this.project AND earlier.subject = this.subject
WHERE this.id = :id AND earlier.status IN ('pending', 'running')
  AND (earlier.created_at < this.created_at
       OR (earlier.created_at = this.created_at AND earlier.id < this.id))
LIMIT 1;

-- name: mark_jobs_running
UPDATE jobs
SET status = 'running', attempts = attempts + 1, heartbeat_at = :now, updated_at = :now,
    claim_token = :token, claim_host = :host, claim_pid = :pid, claim_started = :started,
    claimed_at = :now
WHERE id IN (SELECT stored_id(value) FROM json_each(:ids));

-- name: finish_job
-- Only by the store that holds the claim, and for the claim it was decided under (the
-- attempt): a job reclaimed from it is someone else's now, even if claimed again by it.
UPDATE jobs
SET status = 'done', error = NULL, not_before = NULL, heartbeat_at = NULL, updated_at = :now,
    claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE id = :id AND status = 'running' AND claim_token = :token
  AND (:attempts IS NULL OR attempts = :attempts);

-- name: fail_job
UPDATE jobs
SET status = 'failed', error = :error, not_before = :retry_at, heartbeat_at = NULL,
    updated_at = :now, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE id = :id AND status = 'running' AND claim_token = :token
  AND (:attempts IS NULL OR attempts = :attempts);

-- name: release_jobs
UPDATE jobs
SET status = 'pending', attempts = max(attempts - 1, 0), heartbeat_at = NULL, updated_at = :now,
    claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status = 'running' AND claim_token = :token
  AND id IN (SELECT stored_id(value) FROM json_each(:ids));

-- name: reclaim_stalled
-- A job whose worker died is retried, unless it has used up its attempts: then it fails, so a
-- job that crashes its worker cannot crash the next one forever. This is the fallback: no
-- heartbeat for a lease's length, whoever and wherever the claimer was.
UPDATE jobs
SET status = CASE WHEN attempts >= :max_attempts THEN 'failed' ELSE 'pending' END,
    error = CASE WHEN attempts >= :max_attempts
                 THEN 'the worker stopped while running this job, ' || attempts || ' times'
                 ELSE error END,
    not_before = NULL, heartbeat_at = NULL, updated_at = :now, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < :stalled_before);

-- name: reclaim_claims
-- The running jobs of claimers known to be gone (their process or their session ended).
UPDATE jobs
SET status = CASE WHEN attempts >= :max_attempts THEN 'failed' ELSE 'pending' END,
    error = CASE WHEN attempts >= :max_attempts
                 THEN 'the worker stopped while running this job, ' || attempts || ' times'
                 ELSE error END,
    not_before = NULL, heartbeat_at = NULL, updated_at = :now, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status = 'running' AND claim_token IN (SELECT value FROM json_each(:tokens));

-- name: running_claims
-- Who holds running jobs, how many each, and since when.
SELECT claim_token, claim_host, claim_pid, claim_started, count(*) AS jobs,
       min(claimed_at) AS since
FROM jobs
WHERE status = 'running'
GROUP BY claim_token, claim_host, claim_pid, claim_started
ORDER BY since;

-- name: heartbeat
UPDATE jobs SET heartbeat_at = :now WHERE status = 'running' AND claim_token = :token;

-- name: requeue_jobs
UPDATE jobs
SET status = 'pending', attempts = 0, error = NULL, not_before = NULL, heartbeat_at = NULL,
    updated_at = :now, claim_token = NULL, claim_host = NULL, claim_pid = NULL, claim_started = NULL,
    claimed_at = NULL
WHERE status IN ('done', 'failed') AND (:project IS NULL OR project = :project);

-- name: jobs_by_ids
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE id IN (SELECT stored_id(value) FROM json_each(:ids))
ORDER BY created_at, id;

-- name: jobs_list
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE (:project IS NULL OR project = :project)
ORDER BY created_at, id;

-- name: running_jobs
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE status = 'running' AND (:project IS NULL OR project = :project)
ORDER BY claimed_at, id;

-- name: failed_jobs
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       llm_calls, prompt_tokens, completion_tokens, claim_host, claim_pid, claimed_at
FROM jobs
WHERE status = 'failed' AND (:project IS NULL OR project = :project)
ORDER BY created_at, id;

-- name: job_event_ids
SELECT je.job_id, je.event_id
FROM job_events AS je JOIN events AS e ON e.id = je.event_id
WHERE je.job_id IN (SELECT stored_id(value) FROM json_each(:ids))
ORDER BY je.job_id, e.occurred_at, e.id;

-- name: add_job_usage
UPDATE jobs
SET llm_calls = llm_calls + :calls,
    prompt_tokens = prompt_tokens + :prompt_tokens,
    completion_tokens = completion_tokens + :completion_tokens
WHERE id = :id;

-- name: llm_usage
SELECT coalesce(sum(llm_calls), 0) AS calls,
       coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens
FROM jobs
WHERE (:project IS NULL OR project = :project);

-- name: count_consolidations
-- The summarise pass's counters, read from its audit: a summary written is one `create_fact`
-- entry of the pass, a memory it consumed one `consolidate_fact` entry.
SELECT coalesce(sum(action = 'create_fact'), 0) AS consolidations,
       coalesce(sum(action = 'consolidate_fact'), 0) AS facts_consolidated
FROM audit
WHERE pass_name = 'summarise' AND (:project IS NULL OR project = :project);

-- name: count_jobs_by_status
SELECT status, count(*) AS n FROM jobs
WHERE (:project IS NULL OR project = :project)
GROUP BY status;

-- ---------------------------------------------------------------------------------------------
-- facts

-- name: insert_fact
INSERT INTO facts (
    id, project, subject, kind, predicate, value, stated, text, qualifiers, attribution,
    identity_key, status, valid_from, valid_to, recorded_at, retired_at, supersedes_id, superseded_by,
    source_event_ids, reinforcement_count, last_reinforced_at, trust, confidence, pinned,
    unpaired_change, norm_hash
) VALUES (
    :id, :project, :subject, :kind, :predicate, :value, :stated, :text, :qualifiers,
    :attribution,
    :identity_key, :status, :valid_from, :valid_to, :recorded_at, :retired_at, :supersedes_id,
    :superseded_by, :source_event_ids, :reinforcement_count, :last_reinforced_at, :trust,
    :confidence, :pinned, :unpaired_change, :norm_hash
);

-- name: update_fact
UPDATE facts SET
    kind = :kind, predicate = :predicate, value = :value, stated = :stated, text = :text,
    qualifiers = :qualifiers, attribution = :attribution, identity_key = :identity_key,
    status = :status, valid_from = :valid_from, valid_to = :valid_to,
    recorded_at = :recorded_at, retired_at = :retired_at, supersedes_id = :supersedes_id,
    superseded_by = :superseded_by, source_event_ids = :source_event_ids,
    reinforcement_count = :reinforcement_count, last_reinforced_at = :last_reinforced_at,
    trust = :trust, confidence = :confidence, pinned = :pinned,
    unpaired_change = :unpaired_change
WHERE id = :id
  -- optimistic check: the row is still the version the plan was made from
  AND kind IS :was_kind
  AND predicate IS :was_predicate
  AND value IS :was_value
  AND stated IS :was_stated
  AND text IS :was_text
  AND qualifiers IS :was_qualifiers
  AND attribution IS :was_attribution
  AND identity_key IS :was_identity_key
  AND status IS :was_status
  AND valid_from IS :was_valid_from
  AND valid_to IS :was_valid_to
  AND recorded_at IS :was_recorded_at
  AND retired_at IS :was_retired_at
  AND supersedes_id IS :was_supersedes_id
  AND superseded_by IS :was_superseded_by
  AND source_event_ids IS :was_source_event_ids
  AND reinforcement_count IS :was_reinforcement_count
  AND last_reinforced_at IS :was_last_reinforced_at
  AND trust IS :was_trust
  AND confidence IS :was_confidence
  AND pinned IS :was_pinned
  AND unpaired_change IS :was_unpaired_change;

-- name: insert_fact_source
INSERT OR IGNORE INTO fact_sources (fact_id, event_id) VALUES (:fact_id, :event_id);

-- name: insert_fact_vector
-- The vector itself is in embedding_cache under (model_id, text_hash): cache_embedding first.
INSERT INTO fact_vectors (fact_id, project, subject, model_id, dim, text_hash)
VALUES (:fact_id, :project, :subject, :model_id, :dim, :text_hash);

-- name: copy_fact_vector
INSERT INTO fact_vectors (fact_id, project, subject, model_id, dim, text_hash)
SELECT :fact_id, project, subject, model_id, dim, text_hash
FROM fact_vectors WHERE fact_id = :from_id;

-- name: fact_by_id
SELECT * FROM facts WHERE project = :project AND id = :id;

-- name: fact_ids_by_prefix
-- Ids that begin with a prefix a person typed: every id between the prefix padded with
-- zeros and padded with f's (a range over the primary key, not a scan).
SELECT id FROM facts
WHERE project = :project AND id BETWEEN :low AND :high
ORDER BY id LIMIT :limit;

-- name: facts_by_ids
-- `+project`: by primary key, as events_by_ids.
SELECT * FROM facts
WHERE +project = :project AND id IN (SELECT stored_id(value) FROM json_each(:ids))
ORDER BY valid_from, id;

-- name: facts_by_identity
SELECT * FROM facts
WHERE project = :project AND subject = :subject AND status != 'retracted'
  AND identity_key IN (SELECT value FROM json_each(:keys))
ORDER BY valid_from, id;

-- name: active_facts_by_predicate
SELECT * FROM facts
WHERE project = :project AND subject = :subject AND status = 'active' AND kind = 'state'
  AND predicate IN (SELECT value FROM json_each(:predicates))
ORDER BY valid_from, id;

-- name: memories_by_norm
SELECT * FROM facts
WHERE project = :project AND subject = :subject AND kind = 'memory'
  AND status IN ('active', 'candidate')
  AND norm_hash IN (SELECT stored_id(value) FROM json_each(:norm_hashes))
ORDER BY valid_from, id;

-- name: facts_with_sources
-- `+project`, `+subject`: by primary key from the events' sources, as events_by_ids.
SELECT * FROM facts
WHERE +project = :project AND +subject = :subject
  AND id IN (
      SELECT fact_id FROM fact_sources
      WHERE event_id IN (SELECT stored_id(value) FROM json_each(:event_ids))
  )
ORDER BY valid_from, id;

-- name: active_state_vectors
-- From the subject's active state facts, each fact's vector row by its key (sqlite_0017).
SELECT v.fact_id, v.dim, c.vector
FROM facts AS f
JOIN fact_vectors AS v ON v.fact_id = f.id
JOIN embedding_cache AS c ON c.model_id = v.model_id AND c.text_hash = v.text_hash
WHERE f.project = :project AND f.subject = :subject
  AND f.status = 'active' AND f.kind = 'state' AND v.model_id = :model_id
ORDER BY v.fact_id;

-- name: latest_vector_change
-- The newest change logged, and the newest pruned (sqlite_0019): a mark below it may have
-- missed one.
SELECT max((SELECT COALESCE(MAX(seq), 0) FROM vector_changes), pruned) AS seq, pruned
FROM (SELECT COALESCE((SELECT seq FROM vector_changes_pruned), 0) AS pruned);

-- name: prune_vector_changes
-- All but the newest :keep changes (sqlite_0019's trigger records how far).
DELETE FROM vector_changes WHERE seq <= (SELECT MAX(seq) FROM vector_changes) - :keep;

-- name: changed_vectors
-- The facts of a subject logged after a point, and whether each is searched now (a fact whose
-- vector is gone, or now of another model, is not: an erased one, for instance).
SELECT l.fact_id, c.vector,
       COALESCE(f.status = 'active' AND f.kind = 'state' AND v.model_id = :model_id
                AND v.dim = :dim AND c.vector IS NOT NULL, 0) AS live
FROM (SELECT DISTINCT fact_id FROM vector_changes
      WHERE project = :project AND subject = :subject AND seq > :after) AS l
LEFT JOIN fact_vectors AS v ON v.fact_id = l.fact_id
LEFT JOIN facts AS f ON f.id = l.fact_id
LEFT JOIN embedding_cache AS c ON c.model_id = v.model_id AND c.text_hash = v.text_hash;

-- name: active_recall_vectors
-- The recall vectors search reads (Memory.search's vector arm): active facts of any kind, of
-- one subject or of the whole project, of some kinds or all. The subject is a range so that
-- an index of `facts` is searched by (project, subject) when one is given: from '' to x''
-- (an empty BLOB, which sorts after every text) is every subject; `:subject IS NULL OR ...`
-- would read the whole project's facts for one subject's search.
SELECT v.fact_id, v.dim, c.vector
FROM facts AS f
JOIN fact_vectors AS v ON v.fact_id = f.id
JOIN embedding_cache AS c ON c.model_id = v.model_id AND c.text_hash = v.text_hash
WHERE f.project = :project
  AND f.subject >= COALESCE(:subject, '') AND f.subject <= COALESCE(:subject, x'')
  AND f.status = 'active' AND v.model_id = :model_id
  AND (:kinds IS NULL OR f.kind IN (SELECT value FROM json_each(:kinds)))
ORDER BY v.fact_id;

-- name: changed_recall_vectors
-- The facts of a recall scope logged after a point, and whether each is searched now.
SELECT l.fact_id, c.vector,
       COALESCE(f.status = 'active' AND v.model_id = :model_id AND v.dim = :dim
                AND c.vector IS NOT NULL
                AND (:kinds IS NULL OR f.kind IN (SELECT value FROM json_each(:kinds))), 0) AS live
FROM (SELECT DISTINCT fact_id FROM vector_changes
      WHERE project = :project AND (:subject IS NULL OR subject = :subject) AND seq > :after) AS l
LEFT JOIN fact_vectors AS v ON v.fact_id = l.fact_id
LEFT JOIN facts AS f ON f.id = l.fact_id
LEFT JOIN embedding_cache AS c ON c.model_id = v.model_id AND c.text_hash = v.text_hash;

-- name: recall_vectors_of
-- The recall vectors of some facts, whatever their status: a search of the past scores the
-- facts that were served then.
SELECT v.fact_id, v.dim, c.vector
FROM fact_vectors AS v
JOIN embedding_cache AS c ON c.model_id = v.model_id AND c.text_hash = v.text_hash
WHERE v.project = :project AND v.model_id = :model_id
  AND v.fact_id IN (SELECT stored_id(value) FROM json_each(:among))
ORDER BY v.fact_id;

-- name: recall_words
-- The lexical arm of search: facts holding any of the question's words (`match` is an OR of
-- quoted words), best BM25 first. bm25() is negative, lower is better; the score returned is
-- its opposite. Active facts of the scope, or, for a search of the past, the facts `among`.
SELECT r.fact_id, -bm25(fact_words) AS score
FROM fact_words
JOIN fact_words_rows AS r ON r.n = fact_words.rowid
JOIN facts AS f ON f.id = r.fact_id
WHERE fact_words MATCH :match
  AND f.project = :project AND (:subject IS NULL OR f.subject = :subject)
  AND (:kinds IS NULL OR f.kind IN (SELECT value FROM json_each(:kinds)))
  AND CASE WHEN :among IS NULL THEN f.status = 'active'
           ELSE f.id IN (SELECT stored_id(value) FROM json_each(:among)) END
ORDER BY bm25(fact_words), r.fact_id
LIMIT :limit;

-- name: merge_fact_words
-- Merge the full-text index into one segment, leaving out the words of deleted facts.
INSERT INTO fact_words (fact_words) VALUES ('optimize');

-- name: facts_to_reembed
-- Active facts whose vector is missing or was made by another model.
SELECT f.* FROM facts AS f LEFT JOIN fact_vectors AS v ON v.fact_id = f.id
WHERE f.status = 'active'
  AND (:project IS NULL OR f.project = :project)
  AND (v.fact_id IS NULL OR v.model_id != :model_id)
  AND (:after_id IS NULL OR f.id > :after_id)
ORDER BY f.id
LIMIT :limit;

-- name: delete_fact_vector
-- A vector is derived data: replaced when the facts are embedded again by another model.
DELETE FROM fact_vectors WHERE fact_id = :fact_id;

-- name: tombstone_scopes
-- Scopes holding a tombstone: where prune has something to decide (distill/core/decay.py).
SELECT project, subject FROM facts
WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
  AND status IN ('superseded', 'retracted')
GROUP BY project, subject
ORDER BY project, subject;

-- name: prune_fact_sources
DELETE FROM fact_sources WHERE fact_id = :fact_id;

-- name: prune_fact
-- The tombstone as the pass read it, or nothing: a fact revived, pinned, reinforced or given
-- another receipt since is not deleted (the plan is refused). Its words leave the full-text
-- index with it (the fact_words_removed trigger).
DELETE FROM facts
WHERE id = :fact_id AND project = :project
  AND status IN ('superseded', 'retracted') AND NOT pinned
  AND status IS :status
  AND superseded_by IS :superseded_by
  AND last_reinforced_at IS :last_reinforced_at;

-- name: active_facts
SELECT * FROM facts
WHERE project = :project AND subject = :subject AND status = 'active' AND kind = 'state'
ORDER BY last_reinforced_at DESC, id
LIMIT :limit;

-- name: memory_scopes
-- Scopes with two or more active memories: where dedupe has something to compare.
SELECT project, subject FROM facts
WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
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
    :id, :project, :subject, :text, :fingerprint, :origin,
    :source_fact_ids, :pass_name, :reason, :created_at
);

-- name: rules_of
SELECT * FROM rules
WHERE project = :project AND (:subject IS NULL OR subject = :subject)
ORDER BY subject, created_at, id;

-- name: rule_scopes
-- Scopes with an active memory re-observed often enough to be offered as a rule.
SELECT DISTINCT project, subject FROM facts
WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
  AND status = 'active' AND kind = 'memory' AND reinforcement_count >= :threshold
ORDER BY project, subject;

-- name: facts_active
SELECT * FROM facts
WHERE project = :project AND (:subject IS NULL OR subject = :subject) AND status = 'active'
ORDER BY subject, valid_from, id;

-- name: facts_every_status
SELECT * FROM facts
WHERE project = :project AND (:subject IS NULL OR subject = :subject)
ORDER BY subject, valid_from, id;

-- name: facts_as_of
SELECT * FROM facts
WHERE project = :project AND (:subject IS NULL OR subject = :subject)
  AND status IN ('active', 'superseded')
  AND valid_from <= :as_of AND (valid_to IS NULL OR valid_to > :as_of)
ORDER BY subject, valid_from, id;

-- name: count_facts_by_status
SELECT status, count(*) AS n FROM facts
WHERE (:project IS NULL OR project = :project)
GROUP BY status;

-- ---------------------------------------------------------------------------------------------
-- conflicts

-- name: insert_conflict
INSERT INTO conflicts (
    id, project, subject, identity_key, kind, status, member_ids, reason, created_at,
    resolved_at, kept_fact_id, resolved_by, accepted_event_ids
) VALUES (
    :id, :project, :subject, :identity_key, :kind, :status, :member_ids, :reason, :created_at,
    :resolved_at, :kept_fact_id, :resolved_by, :accepted_event_ids
);

-- name: update_conflict
UPDATE conflicts SET
    identity_key = :identity_key, kind = :kind, status = :status, member_ids = :member_ids,
    reason = :reason, created_at = :created_at, resolved_at = :resolved_at,
    kept_fact_id = :kept_fact_id, resolved_by = :resolved_by,
    accepted_event_ids = :accepted_event_ids
WHERE id = :id;

-- name: conflict_by_id
SELECT * FROM conflicts WHERE project = :project AND id = :id;

-- name: conflict_ids_by_prefix
-- Ids that begin with a prefix a person typed: every id between the prefix padded with
-- zeros and padded with f's (a range over the primary key, not a scan).
SELECT id FROM conflicts
WHERE project = :project AND id BETWEEN :low AND :high
ORDER BY id LIMIT :limit;

-- name: conflicts_for
-- The open and the resolved sets of these identities: a later claim may show that a claim's
-- resolution never should have been, and must see that a person's is theirs.
SELECT * FROM conflicts
WHERE project = :project AND subject = :subject
  AND status IN ('open', 'resolved')
  AND identity_key IN (SELECT value FROM json_each(:keys))
ORDER BY created_at, id;

-- name: conflicts_list
SELECT * FROM conflicts
WHERE project = :project AND (:subject IS NULL OR subject = :subject)
  AND (:status IS NULL OR status = :status)
ORDER BY created_at, id;

-- name: count_open_conflicts
SELECT kind, count(*) AS n FROM conflicts
WHERE status = 'open' AND (:project IS NULL OR project = :project)
GROUP BY kind;

-- ---------------------------------------------------------------------------------------------
-- observations, aliases, audit

-- name: insert_observation
-- With its audit entry's id, job and time when the row stands for that entry (sqlite_0022).
INSERT INTO observations (
    id, project, subject, event_id, fact_id, extractor, claim, claim_hash, source, trust,
    occurred_at, outcome, reason, audit_id, job_id, at
) VALUES (
    :id, :project, :subject, :event_id, :fact_id, :extractor, :claim, :claim_hash, :source,
    :trust, :occurred_at, :outcome, :reason, :audit_id, :job_id, :at
);

-- name: observations_for_fact
SELECT * FROM observations
WHERE project = :project AND fact_id = :fact_id
ORDER BY occurred_at, id;

-- name: observations_for_events
SELECT * FROM observations
WHERE project = :project
  AND event_id IN (SELECT stored_id(value) FROM json_each(:event_ids))
ORDER BY occurred_at, id;

-- name: seen_claims
SELECT event_id, claim_hash FROM observations
WHERE event_id IN (SELECT stored_id(value) FROM json_each(:event_ids));

-- name: insert_alias
INSERT INTO aliases (project, alias, canonical, distance, learned_at)
VALUES (:project, :alias, :canonical, :distance, :learned_at)
ON CONFLICT (project, alias) DO NOTHING;

-- name: alias_by_name
SELECT * FROM aliases WHERE project = :project AND alias = :alias;

-- name: aliases_for
SELECT * FROM aliases
WHERE project = :project AND alias IN (SELECT value FROM json_each(:predicates));

-- name: insert_audit
INSERT INTO audit (
    id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at
) VALUES (
    :id, :project, :subject, :job_id, :pass_name, :action, :reason, :fact_id, :before, :after,
    :at
);

-- name: audit_for_fact
-- A fact's entries: the audit table's, and those its observations' rows stand for
-- (sqlite_0022: the row's `audit_id`, `job_id` and `at`, with its own id, event, outcome and
-- reason; `rows.audit_from_row` makes the entry of them).
SELECT id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at,
       NULL AS observation_id, NULL AS event_id, NULL AS outcome
FROM audit WHERE project = :project AND fact_id = :fact_id
UNION ALL
SELECT audit_id, project, subject, job_id, NULL, NULL, reason, fact_id, NULL, NULL, at,
       id, event_id, outcome
FROM observations WHERE project = :project AND fact_id = :fact_id AND audit_id IS NOT NULL
ORDER BY at, id;

-- name: audit_latest
-- The latest entries of a project or of one subject, from the audit table and from the
-- observations' rows (as audit_for_fact). Two branches of each, one of which finds nothing
-- at once, so that each reads only its rows through audit_by_subject or
-- observations_by_subject (one `OR` over the subject would read the whole project either way).
SELECT * FROM (
    SELECT id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at,
           NULL AS observation_id, NULL AS event_id, NULL AS outcome
    FROM audit WHERE project = :project AND subject = :subject
    UNION ALL
    SELECT id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at,
           NULL, NULL, NULL
    FROM audit WHERE project = :project AND :subject IS NULL
    UNION ALL
    SELECT audit_id, project, subject, job_id, NULL, NULL, reason, fact_id, NULL, NULL, at,
           id, event_id, outcome
    FROM observations WHERE project = :project AND subject = :subject AND audit_id IS NOT NULL
    UNION ALL
    SELECT audit_id, project, subject, job_id, NULL, NULL, reason, fact_id, NULL, NULL, at,
           id, event_id, outcome
    FROM observations WHERE project = :project AND :subject IS NULL AND audit_id IS NOT NULL
    ORDER BY at DESC, id DESC
    LIMIT :limit
) ORDER BY at, id;

-- name: fact_changes_after
-- The revisions of a project's (or one subject's) facts recorded after an instant: undone
-- from the newest back, they give each fact as it was believed then. Two branches, as above.
SELECT *, NULL AS observation_id, NULL AS event_id, NULL AS outcome FROM (
    SELECT * FROM audit WHERE project = :project AND subject = :subject AND at > :after
    UNION ALL
    SELECT * FROM audit WHERE project = :project AND :subject IS NULL AND at > :after
)
WHERE fact_id IS NOT NULL AND action LIKE '%\_fact' ESCAPE '\'
ORDER BY at, id;

-- ---------------------------------------------------------------------------------------------
-- embedding cache: also the one copy of every identity vector that fact_vectors names

-- name: cached_embeddings
SELECT text_hash, vector FROM embedding_cache
WHERE model_id = :model_id AND text_hash IN (SELECT stored_id(value) FROM json_each(:hashes));

-- name: cache_embedding
INSERT OR IGNORE INTO embedding_cache (model_id, text_hash, vector)
VALUES (:model_id, :text_hash, :vector);

-- ---------------------------------------------------------------------------------------------
-- extraction cache

-- name: cached_extractions
SELECT event_id, candidates FROM extractions
WHERE extractor = :extractor AND event_id IN (SELECT stored_id(value) FROM json_each(:ids));

-- name: cache_extraction
INSERT OR REPLACE INTO extractions (extractor, event_id, candidates, created_at)
VALUES (:extractor, :event_id, :candidates, :now);

-- name: forget_extractions
DELETE FROM extractions
WHERE :project IS NULL OR event_id IN (SELECT id FROM events WHERE project = :project);

-- ---------------------------------------------------------------------------------------------
-- copy: a whole store into an empty one (copy.py). Each table is read in pages in primary-key
-- order (`after_*` are the last page's key, NULL for the first page); tables whose plain
-- insert above writes every column are written with it, the others here.

-- name: copy_snapshot
-- A read transaction in WAL mode sees one snapshot, taken at its first read: this read.
SELECT count(*) AS n FROM schema_migrations;

-- name: copy_columns
-- Every column of every table, so that a column the copy does not know stops it. A fact's
-- identity vector is the copy's `fact_vectors.vector`, though SQLite keeps it in the cache.
SELECT table_name, column_name FROM (
    SELECT m.name AS table_name, c.name AS column_name, c.cid AS n
    FROM sqlite_master AS m, pragma_table_info(m.name) AS c
    WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'
    UNION ALL
    SELECT 'fact_vectors', 'vector', 1000
)
ORDER BY table_name, n;

-- name: copy_row_counts
SELECT 'events' AS table_name, count(*) AS n FROM events
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
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_write_events
INSERT INTO events (
    id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
    idempotency_key, action
) VALUES (
    :id, :project, :subject, :text, :occurred_at, :recorded_at, :source, :trust, :claims,
    :idempotency_key, :action
);

-- name: copy_read_jobs
SELECT id, project, subject, status, attempts, error, created_at, updated_at, not_before,
       heartbeat_at, llm_calls, prompt_tokens, completion_tokens, claim_token, claim_host,
       claim_pid, claim_started, claimed_at
FROM jobs
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_write_jobs
INSERT INTO jobs (
    id, project, subject, status, attempts, error, created_at, updated_at, not_before,
    heartbeat_at, llm_calls, prompt_tokens, completion_tokens, claim_token, claim_host,
    claim_pid, claim_started, claimed_at
) VALUES (
    :id, :project, :subject, :status, :attempts, :error, :created_at, :updated_at, :not_before,
    :heartbeat_at, :llm_calls, :prompt_tokens, :completion_tokens, :claim_token, :claim_host,
    :claim_pid, :claim_started, :claimed_at
);

-- name: copy_read_job_events
SELECT job_id, event_id FROM job_events
WHERE :after_job_id IS NULL OR (job_id, event_id) > (:after_job_id, :after_event_id)
ORDER BY job_id, event_id
LIMIT :limit;

-- name: copy_read_facts
SELECT id, project, subject, kind, predicate, value, text, qualifiers, attribution, stated,
       identity_key, status, valid_from, valid_to, recorded_at, retired_at, supersedes_id,
       superseded_by, source_event_ids, reinforcement_count, last_reinforced_at, trust,
       confidence, pinned, unpaired_change, norm_hash
FROM facts
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_read_fact_sources
SELECT fact_id, event_id FROM fact_sources
WHERE :after_fact_id IS NULL OR (fact_id, event_id) > (:after_fact_id, :after_event_id)
ORDER BY fact_id, event_id
LIMIT :limit;

-- name: copy_read_fact_vectors
-- The vector itself is the embedding cache's, under the row's (model_id, text_hash).
SELECT v.fact_id, v.project, v.subject, v.model_id, v.dim, v.text_hash, c.vector
FROM fact_vectors AS v
JOIN embedding_cache AS c ON c.model_id = v.model_id AND c.text_hash = v.text_hash
WHERE :after_fact_id IS NULL OR v.fact_id > :after_fact_id
ORDER BY v.fact_id
LIMIT :limit;

-- name: copy_read_conflicts
SELECT id, project, subject, identity_key, kind, status, member_ids, reason, created_at,
       resolved_at, kept_fact_id, resolved_by, accepted_event_ids
FROM conflicts
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_read_observations
SELECT id, project, subject, event_id, fact_id, extractor, claim, claim_hash, source, trust,
       occurred_at, outcome, reason, audit_id, job_id, at
FROM observations
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_read_aliases
SELECT project, alias, canonical, distance, learned_at FROM aliases
WHERE :after_project IS NULL OR (project, alias) > (:after_project, :after_alias)
ORDER BY project, alias
LIMIT :limit;

-- name: copy_read_audit
SELECT id, project, subject, job_id, pass_name, action, reason, fact_id, before, after, at
FROM audit
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_read_embedding_cache
SELECT model_id, text_hash, vector FROM embedding_cache
WHERE :after_model_id IS NULL OR (model_id, text_hash) > (:after_model_id, :after_text_hash)
ORDER BY model_id, text_hash
LIMIT :limit;

-- name: copy_read_rules
SELECT id, project, subject, text, fingerprint, origin, source_fact_ids, pass_name, reason,
       created_at
FROM rules
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_read_extractions
SELECT extractor, event_id, candidates, created_at FROM extractions
WHERE :after_extractor IS NULL OR (extractor, event_id) > (:after_extractor, :after_event_id)
ORDER BY extractor, event_id
LIMIT :limit;

-- name: copy_write_extractions
INSERT INTO extractions (extractor, event_id, candidates, created_at)
VALUES (:extractor, :event_id, :candidates, :created_at);

-- Erase: the one hard delete (Memory.erase). Every statement takes the scope, a project and a
-- subject or NULL for every subject of the project; rows that only point at the scope's rows
-- go first, for the foreign keys.
-- name: erase_counts
SELECT
    (SELECT count(*) FROM events WHERE project = :project AND (:subject IS NULL OR subject = :subject)) AS events,
    (SELECT count(*) FROM facts WHERE project = :project AND (:subject IS NULL OR subject = :subject)) AS facts,
    (SELECT count(*) FROM observations WHERE project = :project AND (:subject IS NULL OR subject = :subject)) AS observations,
    (SELECT count(*) FROM conflicts WHERE project = :project AND (:subject IS NULL OR subject = :subject)) AS conflicts,
    (SELECT count(*) FROM jobs WHERE project = :project AND (:subject IS NULL OR subject = :subject)) AS jobs,
    (SELECT count(*) FROM audit WHERE project = :project AND (:subject IS NULL OR subject = :subject)
        AND action NOT IN ('erase_subject', 'erase_project')) AS audit,
    (SELECT count(*) FROM rules WHERE project = :project AND (:subject IS NULL OR subject = :subject)) AS rules;

-- name: erase_extractions
DELETE FROM extractions WHERE event_id IN (SELECT id FROM events WHERE project = :project AND (:subject IS NULL OR subject = :subject));

-- name: erase_job_events
DELETE FROM job_events WHERE job_id IN (SELECT id FROM jobs WHERE project = :project AND (:subject IS NULL OR subject = :subject));

-- name: erase_jobs
DELETE FROM jobs WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_fact_sources
DELETE FROM fact_sources WHERE fact_id IN (SELECT id FROM facts WHERE project = :project AND (:subject IS NULL OR subject = :subject));

-- name: erase_fact_vectors
DELETE FROM fact_vectors WHERE fact_id IN (SELECT id FROM facts WHERE project = :project AND (:subject IS NULL OR subject = :subject));

-- name: erase_observations
DELETE FROM observations WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_conflicts
DELETE FROM conflicts WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_audit
-- The receipts of earlier erases stay: they are the record that an erase happened.
DELETE FROM audit WHERE project = :project AND (:subject IS NULL OR subject = :subject)
  AND action NOT IN ('erase_subject', 'erase_project');

-- name: erase_facts
DELETE FROM facts WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_events
DELETE FROM events WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_aliases
-- Aliases are project-wide: erased with the whole project only.
DELETE FROM aliases WHERE project = :project AND :subject IS NULL;

-- name: erase_rules
DELETE FROM rules WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_cached_embeddings
-- The vectors of the erased texts, under every model (a vector tells of its text), but
-- those a fact of another scope still names (two subjects may say "bike_count: 3").
DELETE FROM embedding_cache
WHERE text_hash IN (SELECT stored_id(value) FROM json_each(:hashes))
  AND NOT EXISTS (
      SELECT 1 FROM fact_vectors AS v
      WHERE v.model_id = embedding_cache.model_id AND v.text_hash = embedding_cache.text_hash
  );

-- name: note_erased_vectors
-- Before the scope's vectors go: every process's in-memory ANN index drops them on its next
-- lookup, as it drops a retired fact's.
INSERT INTO vector_changes (project, subject, fact_id)
SELECT v.project, v.subject, v.fact_id FROM facts AS f JOIN fact_vectors AS v ON v.fact_id = f.id
WHERE f.project = :project AND (:subject IS NULL OR f.subject = :subject);

-- ---------------------------------------------------------------------------------------------
-- api keys: the HTTP API's keys, by the SHA-256 of their token (sql_keys.py)

-- name: insert_api_key
INSERT INTO api_keys (id, project, name, token_hash, created_at, revoked_at)
VALUES (:id, :project, :name, :token_hash, :created_at, NULL);

-- name: api_key_by_hash
SELECT id, project, name, created_at, revoked_at FROM api_keys WHERE token_hash = :token_hash;

-- name: api_key_by_id
SELECT id, project, name, created_at, revoked_at FROM api_keys WHERE id = :id;

-- name: api_keys_list
-- A project's keys; with no project, every key (the admin keys, project NULL, too).
SELECT id, project, name, created_at, revoked_at FROM api_keys
WHERE :project IS NULL OR project = :project
ORDER BY created_at, id;

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL;

-- name: count_api_keys
SELECT count(*) AS made, count(*) FILTER (WHERE revoked_at IS NULL) AS active FROM api_keys;

-- name: subject_known
-- Whether the project holds anything of a subject: every stored event is held by a job of
-- its subject until an erase (jobs_by_subject answers it).
SELECT EXISTS (SELECT 1 FROM jobs WHERE project = :project AND subject = :subject) AS known;

-- ---------------------------------------------------------------------------------------------
-- derive: votes (observations with outcome 'vote'), the scopes that have them, and the
-- derive pass's invalidations (for drift). See distill/passes/derive.py.

-- name: vote_observations
-- A scope's votes after the derive cursor (an observation id: ids sort by creation), oldest
-- first, at most :limit (observations_votes).
SELECT * FROM observations
WHERE project = :project AND subject = :subject AND outcome = 'vote'
  AND (:after IS NULL OR id > :after)
ORDER BY id
LIMIT :limit;

-- name: vote_scopes
-- Scopes holding votes: where derive has something to count, or a cycle to record.
SELECT DISTINCT project, subject FROM observations
WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
  AND outcome = 'vote'
ORDER BY project, subject;

-- name: derive_invalidations
-- The world times (valid_to) at which the derive pass closed facts of a project (or of one
-- subject; of every project with NULL), after :since: what drift counts (distill/core/drift.py).
SELECT f.project AS project, f.subject AS subject, f.valid_to AS at
FROM audit AS a JOIN facts AS f ON f.id = a.fact_id
WHERE (:project IS NULL OR a.project = :project) AND (:subject IS NULL OR a.subject = :subject)
  AND a.pass_name = 'derive' AND a.action = 'retire_fact'
  AND f.valid_to > :since
ORDER BY f.project, f.subject, f.valid_to;

-- name: subjects_of
-- A project's subjects: every stored event is held by a job of its subject until an erase.
SELECT DISTINCT subject FROM jobs WHERE project = :project ORDER BY subject;

-- name: count_derive
-- The derive pass's counters, read from its audit: cycles run (one `record_cycle` each, empty
-- ones too), facts it wrote (elected, or replacing one it closed), facts it closed.
SELECT coalesce(sum(action = 'record_cycle'), 0) AS derive_cycles,
       coalesce(sum(action = 'create_fact'), 0) AS facts_derived,
       coalesce(sum(action = 'retire_fact'), 0) AS facts_invalidated
FROM audit
WHERE pass_name = 'derive' AND (:project IS NULL OR project = :project);

-- name: count_patterns
-- What the procedures and topics passes keep, by status: `distill status` and /metrics.
SELECT (SELECT count(*) FROM procedures WHERE status = 'candidate'
          AND (:project IS NULL OR project = :project)) AS procedures_candidate,
       (SELECT count(*) FROM procedures WHERE status = 'active'
          AND (:project IS NULL OR project = :project)) AS procedures_active,
       (SELECT count(*) FROM procedures WHERE status = 'deprecated'
          AND (:project IS NULL OR project = :project)) AS procedures_deprecated,
       (SELECT count(*) FROM topics WHERE status = 'active'
          AND (:project IS NULL OR project = :project)) AS topics_active,
       (SELECT count(*) FROM topics WHERE status = 'retired'
          AND (:project IS NULL OR project = :project)) AS topics_retired;

-- name: pass_cursor
-- Where a pass that walks an append-only stream (derive's votes, topics' events) stopped.
SELECT position FROM pass_cursors
WHERE project = :project AND subject = :subject AND pass_name = :pass_name;

-- name: move_pass_cursor
-- Moves only from where the pass read it (`was`; NULL: never moved): one row, or none.
INSERT INTO pass_cursors (project, subject, pass_name, position, moved_at)
VALUES (:project, :subject, :pass_name, :position, :moved_at)
ON CONFLICT (project, subject, pass_name) DO UPDATE
SET position = excluded.position, moved_at = excluded.moved_at
WHERE pass_cursors.position = :was;

-- name: erase_pass_cursors
DELETE FROM pass_cursors WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: copy_read_pass_cursors
-- Copied with the audit they point into: derive's cursor marks the votes it has counted, and
-- a copy that forgot it would count them again (distill/adapters/store/copy.py).
SELECT project, subject, pass_name, position, moved_at FROM pass_cursors
WHERE :after_project IS NULL
   OR (project, subject, pass_name) > (:after_project, :after_subject, :after_pass_name)
ORDER BY project, subject, pass_name
LIMIT :limit;

-- name: copy_write_pass_cursors
INSERT INTO pass_cursors (project, subject, pass_name, position, moved_at)
VALUES (:project, :subject, :pass_name, :position, :moved_at);

-- procedures and topics (core/procedures.py, core/topics.py; sql_cortex.py)

-- name: action_events
-- A subject's events that record an action: what the procedures pass counts.
SELECT id, project, subject, text, occurred_at, recorded_at, source, trust, claims,
       idempotency_key, action
FROM events
WHERE project = :project AND subject = :subject AND action IS NOT NULL
ORDER BY occurred_at, id;

-- name: action_scopes
SELECT DISTINCT project, subject FROM events
WHERE action IS NOT NULL AND (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
ORDER BY project, subject;

-- name: procedures_of
SELECT * FROM procedures
WHERE project = :project AND (:subject IS NULL OR subject = :subject)
  AND (:status IS NULL OR status = :status)
ORDER BY subject, action_a, action_b;

-- name: insert_procedure
INSERT INTO procedures (
    id, project, subject, action_a, action_b, status, support, successes, failures,
    precondition, source_event_ids, created_at, updated_at
) VALUES (
    :id, :project, :subject, :action_a, :action_b, :status, :support, :successes,
    :failures, :precondition, :source_event_ids, :created_at, :updated_at
);

-- name: update_procedure
-- Only the version that was read is changed: a procedure revised meanwhile refuses the plan.
UPDATE procedures SET
    status = :status, support = :support, successes = :successes, failures = :failures,
    precondition = :precondition, source_event_ids = :source_event_ids,
    updated_at = :updated_at
WHERE id = :id AND updated_at = :before_updated_at;

-- name: event_scopes
SELECT DISTINCT project, subject FROM events
WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
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
WHERE e.project = :project AND e.subject = :subject
  AND (:after_id IS NULL OR (e.recorded_at, e.id) > (:after_time, :after_id))
ORDER BY e.recorded_at, e.id
LIMIT :limit;

-- name: mentions_of
SELECT event_id, entity, project, subject, name, origin, recorded_at FROM mentions
WHERE project = :project AND subject = :subject
ORDER BY event_id, entity;

-- name: insert_mention
INSERT INTO mentions (event_id, entity, project, subject, name, origin, recorded_at)
VALUES (:event_id, :entity, :project, :subject, :name, :origin, :recorded_at)
ON CONFLICT (event_id, entity) DO NOTHING;

-- name: topics_of
SELECT * FROM topics
WHERE project = :project AND (:subject IS NULL OR subject = :subject)
  AND (:include_retired OR status = 'active')
ORDER BY subject, status, created_at, id;

-- name: insert_topic
INSERT INTO topics (
    id, project, subject, name, members, names, embedding, named_by, status, created_at,
    retired_at
) VALUES (
    :id, :project, :subject, :name, :members, :names, :embedding, :named_by, :status,
    :created_at, :retired_at
);

-- name: update_topic
-- Only the version that was read is changed: a topic revised meanwhile refuses the plan.
UPDATE topics SET
    name = :name, names = :names, embedding = :embedding, named_by = :named_by,
    status = :status, retired_at = :retired_at
WHERE id = :id AND status = :before_status;

-- name: erase_procedures
DELETE FROM procedures WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_mentions
DELETE FROM mentions WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: erase_topics
DELETE FROM topics WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- name: copy_read_procedures
SELECT id, project, subject, action_a, action_b, status, support, successes, failures,
       precondition, source_event_ids, created_at, updated_at
FROM procedures
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- name: copy_read_mentions
SELECT event_id, entity, project, subject, name, origin, recorded_at FROM mentions
WHERE :after_event_id IS NULL OR (event_id, entity) > (:after_event_id, :after_entity)
ORDER BY event_id, entity
LIMIT :limit;

-- name: copy_read_topics
SELECT id, project, subject, name, members, names, embedding, named_by, status, created_at,
       retired_at
FROM topics
WHERE :after_id IS NULL OR id > :after_id
ORDER BY id
LIMIT :limit;

-- the extraction watermark: what a pass has read of each fact (distill/core/watermark.py)

-- name: unmarked_memories
-- A scope's live memories `pass_name` has no mark of their text for (new, or text changed),
-- least recently reinforced first. text_signature is the store's `core.watermark.signature`.
SELECT f.* FROM facts AS f
LEFT JOIN fact_marks AS m ON m.fact_id = f.id AND m.pass_name = :pass_name
WHERE f.project = :project AND f.subject = :subject AND f.status = 'active'
  AND f.kind = 'memory'
  AND (m.signature IS NULL OR m.signature != text_signature(f.text))
ORDER BY f.last_reinforced_at, f.id;

-- name: fact_marks
SELECT fact_id, signature FROM fact_marks
WHERE pass_name = :pass_name AND project = :project
  AND fact_id IN (SELECT stored_id(value) FROM json_each(:ids));

-- name: mark_fact
-- A fact of the scope marked, moved only from the signature the pass read (`was`; NULL:
-- unmarked): one row, or none (a fact not of the scope, or marked meanwhile).
INSERT INTO fact_marks (fact_id, pass_name, project, subject, signature, marked_at)
SELECT id, :pass_name, project, subject, :signature, :marked_at FROM facts
WHERE id = :fact_id AND project = :project AND subject = :subject
ON CONFLICT (fact_id, pass_name) DO UPDATE
SET signature = excluded.signature, marked_at = excluded.marked_at
WHERE fact_marks.signature = :was;

-- name: prune_fact_marks
DELETE FROM fact_marks WHERE fact_id = :fact_id;

-- name: erase_fact_marks
DELETE FROM fact_marks WHERE project = :project AND (:subject IS NULL OR subject = :subject);

-- the worker's schedule: scheduled passes per scope, their leases and health (sql_schedule.py)

-- name: schedule_projects
-- Every project that ever stored an event (each event is held by a job until an erase).
SELECT DISTINCT project FROM jobs ORDER BY project;

-- name: schedule_add
-- A scope's pass seen for the first time: due at once (`due_at` = now), unless it has a row.
INSERT INTO pass_schedule (project, scope, pass_name, created_at, due_at)
VALUES (:project, :scope, :pass_name, :now, :now)
ON CONFLICT (project, scope, pass_name) DO NOTHING;

-- name: schedule_rows
SELECT * FROM pass_schedule
WHERE (:project IS NULL OR project = :project)
ORDER BY project, scope, pass_name;

-- name: schedule_lease
-- Taken only for the generation the worker read, and only when nobody holds it (or the
-- holder's lease ran out): one row, or none.
UPDATE pass_schedule SET lease_owner = :owner, lease_expires_at = :expires_at
WHERE project = :project AND scope = :scope AND pass_name = :pass_name
  AND generation = :generation
  AND (lease_owner IS NULL OR lease_expires_at <= :now);

-- name: schedule_finish
-- Only by the lease's holder, for the generation it ran: one row, or none (the lease was lost).
UPDATE pass_schedule
SET generation = generation + 1, runs = runs + 1, last_run_at = :ran_at,
    last_clean_at = COALESCE(:clean_at, last_clean_at), due_at = :due_at, retry_at = :retry_at,
    last_report = :report, health = :health, last_error = :error, failures = :failures,
    lease_owner = NULL, lease_expires_at = NULL
WHERE project = :project AND scope = :scope AND pass_name = :pass_name
  AND generation = :generation AND lease_owner = :owner;

-- name: schedule_release
-- A lease given back without a run (the worker was stopped first): the pass stays as it was.
UPDATE pass_schedule SET lease_owner = NULL, lease_expires_at = NULL
WHERE project = :project AND scope = :scope AND pass_name = :pass_name
  AND generation = :generation AND lease_owner = :owner;

-- name: schedule_force
-- Due at once, whatever the last run said (`distill run-due --force`, the API's force).
UPDATE pass_schedule SET due_at = :now, retry_at = NULL, last_clean_at = NULL
WHERE project = :project AND (:pass_name IS NULL OR pass_name = :pass_name);

-- name: backlog_events
-- A project's backlog: the events its open jobs hold (pending or running). Few open jobs (one
-- pending per subject), found by jobs_by_status; their events by job_events' key.
SELECT count(*) AS n FROM jobs JOIN job_events ON job_events.job_id = jobs.id
WHERE jobs.status IN ('pending', 'running') AND jobs.project = :project;

-- name: erase_pass_schedule
-- A whole project's schedule goes with it; a subject's erase takes the rows of passes run
-- for that subject only (the project's own passes still have the other subjects to run on).
DELETE FROM pass_schedule WHERE project = :project AND (:subject IS NULL OR scope = :subject);

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
WHERE jobs.project = :project AND jobs.subject = :subject
  AND jobs.status IN ('pending', 'running')
ORDER BY events.occurred_at DESC, events.id DESC
LIMIT :limit;

-- ---------------------------------------------------------------------------------------------
-- The full-text index, fed once per plan (sqlite_0016): what the fact_words_added trigger did
-- for each inserted fact, for all the facts a writer inserted. `ids` is a JSON array of fact
-- ids in insertion order: each gets the next number, and its words under that number.

-- name: index_fact_words_rows
INSERT INTO fact_words_rows (fact_id)
SELECT stored_id(j.value) FROM json_each(:ids) AS j ORDER BY j.key;

-- name: index_fact_words
INSERT INTO fact_words (rowid, words)
SELECT r.n, coalesce(f.predicate, '') || ' ' || coalesce(f.value, '') || ' ' || f.text
FROM json_each(:ids) AS j
JOIN fact_words_rows AS r ON r.fact_id = stored_id(j.value)
JOIN facts AS f ON f.id = r.fact_id
ORDER BY r.n;
