-- An observation's audit entry kept in the observation's row.
--
-- A record_observation entry says nothing the observation row does not: the pass
-- (`extract`), the reason (the observation's outcome and its reason), the observation's id and
-- event, its fact and scope. Only its own id, job and time are its own. They were a third of the audit rows and
-- of its bytes (bench/storage.py), and each cost a row in four indexes at every claim. The
-- row now keeps them (`audit_id`, `job_id`, `at`) and `audit_latest` and `audit_for_fact`
-- read the entry back from it, the same entry, id and all (`core.audit_trail.in_row`).
--
-- The entries already written move into their rows and leave the audit table. Only entries
-- that say exactly that move (an entry written whole by an earlier version, or naming another
-- event, fact or scope than its row, stays where it is: nothing is lost); an observation
-- with no such entry keeps NULLs and is read as before.

ALTER TABLE observations ADD COLUMN audit_id BLOB;
ALTER TABLE observations ADD COLUMN job_id BLOB;
ALTER TABLE observations ADD COLUMN at INTEGER;

CREATE TEMP TABLE observation_entries AS
SELECT stored_id(json_extract(after, '$.id')) AS observation_id,
       stored_id(json_extract(after, '$.event_id')) AS event_id,
       id, project, subject, job_id, fact_id, reason, at
FROM audit
WHERE action = 'record_observation' AND pass_name = 'extract' AND before IS NULL
  AND json_type(after) = 'object' AND (SELECT count(*) FROM json_each(after)) = 2
  AND json_type(after, '$.id') = 'text' AND json_type(after, '$.event_id') = 'text';

CREATE INDEX temp.observation_entries_by_observation ON observation_entries (observation_id);

UPDATE observations SET (audit_id, job_id, at) = (
    SELECT e.id, e.job_id, e.at FROM observation_entries AS e
    WHERE e.observation_id = observations.id AND e.event_id = observations.event_id
      AND e.fact_id IS observations.fact_id
      AND e.reason = observations.outcome || ': ' || observations.reason
      AND e.project = observations.project AND e.subject = observations.subject
    ORDER BY e.at, e.id
    LIMIT 1
)
WHERE id IN (SELECT observation_id FROM observation_entries);

DELETE FROM audit WHERE id IN (SELECT audit_id FROM observations WHERE audit_id IS NOT NULL);

DROP TABLE temp.observation_entries;

-- The subject branch of audit_latest, as audit_by_subject is the audit table's.
CREATE INDEX observations_by_subject ON observations (project, subject);
