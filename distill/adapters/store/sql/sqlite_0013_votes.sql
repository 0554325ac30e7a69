-- The derive pass reads a scope's votes (observations with outcome 'vote', recorded by
-- adjudication for predicates whose policy is `vote`) after its cursor, in id order: this
-- index holds only votes, so that scopes without any cost nothing.

CREATE INDEX observations_votes ON observations (project, subject, id) WHERE outcome = 'vote';

-- Drift counts the derive pass's invalidations of a subject (or of a project: recall asks on
-- every search whether the subject is unstable); this index holds only those entries, so
-- the question never reads the rest of the audit.
CREATE INDEX audit_derive_retirements ON audit (project, subject)
    WHERE pass_name = 'derive' AND action = 'retire_fact';
