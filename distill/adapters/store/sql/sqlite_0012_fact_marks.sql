-- The extraction watermark (distill/core/watermark.py): per fact a pass has finished with,
-- the SHA-256 of the text it read. A pass's backlog is the live memories it has no mark of
-- that text for. Marks are written by `MarkFacts` through the applier, in the transaction
-- that applies what the pass derived; erasing a subject or pruning a fact deletes its marks
-- (the foreign key refuses a mark of a fact that is not there).
--
-- It replaces the audit-position cursors of the passes that read memories (judge,
-- summarise, promote_rules); pass_cursors stays for the passes that walk an append-only
-- stream (derive's votes, topics' events), where a position is the right mark. Where a cursor was,
-- its pass read the scope's memories up to that position: each live memory whose latest
-- fact action is at or before the position is marked with its text's signature now, so an
-- upgraded store asks the model about nothing it had already asked about.

CREATE TABLE fact_marks (
    fact_id    BLOB NOT NULL REFERENCES facts (id),
    pass_name  TEXT NOT NULL,
    project    TEXT NOT NULL,
    subject    TEXT NOT NULL,
    signature  TEXT NOT NULL,
    marked_at  INTEGER NOT NULL,
    PRIMARY KEY (fact_id, pass_name)
) WITHOUT ROWID;
CREATE INDEX fact_marks_by_scope ON fact_marks (project, subject, pass_name);

-- A cursor's instant is the ISO time before its `|` (UTC, as every Distill clock; no
-- fraction when the microseconds are 0); audit times are microseconds since the epoch.
INSERT INTO fact_marks (fact_id, pass_name, project, subject, signature, marked_at)
SELECT f.id, c.pass_name, f.project, f.subject, text_signature(f.text), c.moved_at
FROM pass_cursors AS c
JOIN facts AS f ON f.project = c.project AND f.subject = c.subject
WHERE f.status = 'active' AND f.kind = 'memory'
  AND (SELECT max(a.at) FROM audit AS a
       WHERE a.fact_id = f.id AND a.action LIKE '%\_fact' ESCAPE '\')
      <= CAST(strftime('%s', substr(c.position, 1, 19)) AS INTEGER) * 1000000
         + CASE WHEN substr(c.position, 20, 1) = '.'
                THEN CAST(substr(c.position, 21, 6) AS INTEGER) ELSE 0 END;

DELETE FROM pass_cursors WHERE pass_name IN ('judge', 'summarise', 'promote_rules');
