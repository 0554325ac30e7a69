-- A log of the facts whose identity vector may have entered or left the searched set (active
-- state facts), in commit order. A process that keeps a subject's vectors in an in-memory
-- index catches up by reading the rows after the last `seq` it saw, whichever process or
-- thread wrote them, instead of reloading the subject. Triggers write it, so no write path
-- can forget to.

CREATE TABLE vector_changes (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT NOT NULL,
    subject TEXT NOT NULL,
    fact_id TEXT NOT NULL
);
CREATE INDEX vector_changes_by_subject ON vector_changes (project, subject, seq);

CREATE TRIGGER vector_added AFTER INSERT ON fact_vectors
BEGIN
    INSERT INTO vector_changes (project, subject, fact_id)
    VALUES (NEW.project, NEW.subject, NEW.fact_id);
END;

CREATE TRIGGER vector_fact_changed AFTER UPDATE OF status, kind ON facts
WHEN (OLD.status IS NOT NEW.status OR OLD.kind IS NOT NEW.kind)
    AND EXISTS (SELECT 1 FROM fact_vectors WHERE fact_id = NEW.id)
BEGIN
    INSERT INTO vector_changes (project, subject, fact_id)
    VALUES (NEW.project, NEW.subject, NEW.id);
END;
