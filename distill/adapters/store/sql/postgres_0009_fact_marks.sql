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
    fact_id    text NOT NULL REFERENCES facts (id),
    pass_name  text NOT NULL,
    project    text NOT NULL,
    subject    text NOT NULL,
    signature  text NOT NULL,
    marked_at  timestamptz NOT NULL,
    PRIMARY KEY (fact_id, pass_name)
);
CREATE INDEX fact_marks_by_scope ON fact_marks (project, subject, pass_name);

INSERT INTO fact_marks (fact_id, pass_name, project, subject, signature, marked_at)
SELECT f.id, c.pass_name, f.project, f.subject,
       encode(sha256(convert_to(f.text, 'UTF8')), 'hex'), c.moved_at
FROM pass_cursors AS c
JOIN facts AS f ON f.project = c.project AND f.subject = c.subject
WHERE f.status = 'active' AND f.kind = 'memory'
  AND (SELECT max(a.at) FROM audit AS a
       WHERE a.fact_id = f.id AND a.action LIKE '%\_fact')
      <= split_part(c.position, '|', 1)::timestamptz;

DELETE FROM pass_cursors WHERE pass_name IN ('judge', 'summarise', 'promote_rules');
