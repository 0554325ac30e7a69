-- Who closed a conflict set: a person (`Memory.resolve_conflict`, from Python, the CLI, the
-- HTTP API or MCP), the identity judge's model, or a later claim (a change to a held value,
-- a third value that made the members events). Automatic paths never undo a person's
-- decision, and may take back what a claim settled, as arrival in world order would have;
-- the set says which it was.
--
-- The sets already closed are named from their audit trail: the entry that closed each one
-- (its `after` holds the set's id and its new status) was written by the pass that closed
-- it: `api` for a person, `judge_identity` for the model, `adjudicate` for a claim. A set
-- whose closing entry is gone (none is, short of a hand edit) keeps NULL: not recorded.

ALTER TABLE conflicts ADD COLUMN resolved_by text
    CHECK (resolved_by IN ('person', 'model', 'claim'));

UPDATE conflicts AS c SET resolved_by = (
    SELECT CASE a.pass_name
               WHEN 'api' THEN 'person'
               WHEN 'judge_identity' THEN 'model'
               ELSE 'claim'
           END
    FROM audit AS a
    WHERE a.project = c.project AND a.subject = c.subject
      AND a.action = 'revise_conflict'
      AND a.after ->> 'status' IN ('resolved', 'reclassified')
      AND a.after ->> 'id' = c.id
    ORDER BY a.at DESC, a.id DESC
    LIMIT 1
)
WHERE c.status <> 'open';
