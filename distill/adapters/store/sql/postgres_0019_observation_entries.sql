-- An observation's audit entry kept in the observation's row (as sqlite_0022, which says
-- why): the row keeps the entry's id, job and time, and audit_latest and audit_for_fact read
-- the entry back from it. The entries already written move into their rows when they say
-- exactly what the row does; any other stays in the audit table.

ALTER TABLE observations
    ADD COLUMN audit_id text,
    ADD COLUMN job_id text,
    ADD COLUMN at timestamptz;

UPDATE observations AS o SET audit_id = e.id, job_id = e.job_id, at = e.at
FROM (
    SELECT DISTINCT ON (after ->> 'id')
           after ->> 'id' AS observation_id, after ->> 'event_id' AS event_id,
           id, project, subject, job_id, fact_id, reason, at
    FROM audit
    WHERE action = 'record_observation' AND pass_name = 'extract' AND before IS NULL
      AND jsonb_typeof(after) = 'object'
      AND (SELECT count(*) FROM jsonb_object_keys(after)) = 2
      AND jsonb_typeof(after -> 'id') = 'string'
      AND jsonb_typeof(after -> 'event_id') = 'string'
    ORDER BY after ->> 'id', at, id
) AS e
WHERE e.observation_id = o.id AND e.event_id = o.event_id
  AND e.fact_id IS NOT DISTINCT FROM o.fact_id
  AND e.reason = o.outcome || ': ' || o.reason
  AND e.project = o.project AND e.subject = o.subject;

DELETE FROM audit AS a USING observations AS o WHERE a.id = o.audit_id;

-- The audit_latest branch over observations, as audit_by_subject is the audit table's.
CREATE INDEX observations_by_subject ON observations (project, subject, at, id);
