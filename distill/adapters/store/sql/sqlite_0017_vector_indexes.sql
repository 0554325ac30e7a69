-- Two indexes that cost more room than their reads were worth (bench/storage.py: the 50,000
-- claim events' file had grown to 122.7 MB against the 120 MB target).
--
-- `fact_vectors_by_subject` (project, subject, model_id), 2.7 MB there: a scope's vectors are
-- now read from its facts instead (through an index of `facts` on (project, subject, ...)),
-- each fact's vector row then found by its key, as the join to `facts` already did for the
-- status. The erase queries find a scope's vector rows through its facts too.
--
-- `vector_changes_by_subject` (project, subject, seq), 1.4 MB there: a reader of the change
-- log reads what was logged after its mark, and the log's rows are in `seq` order already; an
-- index is kept current by reads after every change, so what it reads is the newest rows of
-- the log whatever their scope. Only an index left unread while many changes went by reads
-- more, once.

DROP INDEX fact_vectors_by_subject;
DROP INDEX vector_changes_by_subject;
