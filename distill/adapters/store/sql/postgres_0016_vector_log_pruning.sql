-- The vector change log (`vector_changes`, 0014) is pruned to its newest rows, where it used
-- to grow by a row a vector written, forever. A reader whose mark is not newer than what was
-- pruned cannot catch up from the log: it rebuilds its index from the vectors instead, which
-- costs about what reading that many changes would (`VECTOR_LOG_KEEP` in sql_store.py).
--
-- This table says how far the log was pruned: the newest transaction id deleted. A reader
-- reads the rows of transactions not older than its mark, so one at a mark not newer than
-- this may have missed a change. A trigger records every deletion, whoever makes it.

CREATE TABLE vector_changes_pruned (
    one integer PRIMARY KEY CHECK (one = 1),
    xid xid8 NOT NULL
);

CREATE FUNCTION vector_changes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vector_changes_pruned (one, xid)
    SELECT 1, max(xid) FROM gone HAVING count(*) > 0
    ON CONFLICT (one) DO UPDATE SET xid = GREATEST(vector_changes_pruned.xid, excluded.xid);
    RETURN NULL;
END
$$;

CREATE TRIGGER vector_change_pruned AFTER DELETE ON vector_changes
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION vector_changes_deleted();
