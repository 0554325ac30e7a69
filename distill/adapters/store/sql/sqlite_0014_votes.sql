-- The derive pass reads a scope's votes (observations with outcome 'vote', recorded by
-- adjudication for predicates whose policy is `vote`) after its cursor, in id order: this
-- index holds only votes, so that scopes without any cost nothing.

CREATE INDEX observations_votes ON observations (project, subject, id) WHERE outcome = 'vote';
