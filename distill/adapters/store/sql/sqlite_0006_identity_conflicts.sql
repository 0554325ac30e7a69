-- A third kind of conflict set: `identity`, two facts under two predicate names that are
-- probably one attribute (distill/core/attribute_match.py). Both stay active and are served
-- as contested until a person or a model says whether they are one attribute.
-- SQLite cannot change a CHECK constraint in place: the table is made again, rows unchanged.

CREATE TABLE conflicts_with_identity (
    id           TEXT PRIMARY KEY,
    project      TEXT NOT NULL,
    subject      TEXT NOT NULL,
    identity_key TEXT,
    kind         TEXT NOT NULL CHECK (kind IN ('conflict', 'quarantine', 'identity')),
    status       TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'reclassified')),
    member_ids   TEXT NOT NULL DEFAULT '[]',
    reason       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    resolved_at  TEXT,
    kept_fact_id TEXT
);
INSERT INTO conflicts_with_identity
SELECT id, project, subject, identity_key, kind, status, member_ids, reason, created_at,
       resolved_at, kept_fact_id
FROM conflicts;
DROP TABLE conflicts;
ALTER TABLE conflicts_with_identity RENAME TO conflicts;
CREATE INDEX conflicts_by_subject ON conflicts (project, subject, status, created_at, id);
