-- A log of the facts whose vector may have entered or left a searched set (a vector stored, a
-- fact's status or kind changed, a scope erased), as SQLite keeps since its 0003. A process
-- that keeps a scope's vectors in an in-memory index (distill/adapters/store/vector_cache.py)
-- catches up by reading what was logged since its mark instead of reloading the scope.
-- Triggers write it, so no write path can forget to.
--
-- Sequence values are handed out before commit and may commit out of order, so a row records
-- its writer's transaction id instead: a reader reads the rows of transactions not older than
-- the oldest one running at its last read (that snapshot's xmin), and misses none.

CREATE TABLE vector_changes (
    xid     xid8 NOT NULL DEFAULT pg_current_xact_id(),
    project text NOT NULL,
    subject text NOT NULL,
    fact_id text NOT NULL
);
CREATE INDEX vector_changes_by_project ON vector_changes (project, xid);

-- Vectors arrive in batches (a plan's new facts, a re-embedding): one INSERT a statement.
CREATE FUNCTION vector_changes_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vector_changes (project, subject, fact_id)
    SELECT project, subject, fact_id FROM added;
    RETURN NULL;
END
$$;

CREATE TRIGGER vector_added AFTER INSERT ON fact_vectors
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION vector_changes_added();

-- A fact changes status or kind seldom (a supersede, a retraction): a row trigger that only
-- runs for those (a transition table cannot be had with a column list).
CREATE FUNCTION vector_changes_fact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM fact_vectors WHERE fact_id = NEW.id) THEN
        INSERT INTO vector_changes (project, subject, fact_id)
        VALUES (NEW.project, NEW.subject, NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER vector_fact_changed AFTER UPDATE OF status, kind ON facts
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.kind IS DISTINCT FROM NEW.kind)
    EXECUTE FUNCTION vector_changes_fact();
