-- A subject's rules: standing instructions the agent follows, one line each (core/rules.py).
-- Append-only: a rule is inserted (`AddRule` through the applier) and never updated; it goes
-- only with its subject or project (erase). `fingerprint` is the hash of the normalised text:
-- one rule per fingerprint and subject. `origin` says who made it: `learned` (promoted from
-- the memories in `source_fact_ids` by the promote_rules pass) or `written` (a person).

CREATE TABLE rules (
    id               TEXT PRIMARY KEY,
    project          TEXT NOT NULL,
    subject          TEXT NOT NULL,
    text             TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,
    origin           TEXT NOT NULL CHECK (origin IN ('learned', 'written')),
    source_fact_ids  JSONB NOT NULL DEFAULT '[]',
    pass_name        TEXT NOT NULL,
    reason           TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    UNIQUE (project, subject, fingerprint)
);
